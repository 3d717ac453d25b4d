package mesh

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slurm is a one-node Slurm cluster of this test's own: slurmctld and
// slurmd in the foreground, as root, with auth/none and cred/none (no
// munge), state and logs in a temporary directory, on two free ports.
type slurm struct {
	conf string
	logs string
}

func startSlurm(t *testing.T) *slurm {
	t.Helper()
	for _, cmd := range []string{"slurmctld", "slurmd", "srun", "sinfo"} {
		if _, err := exec.LookPath(cmd); err != nil {
			t.Skipf("no %s: install Debian's slurmctld, slurmd and slurm-client (.ci/run does)", cmd)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("the test's slurmd runs jobs as root")
	}
	dir := t.TempDir()
	for _, d := range []string{"state", "spool", "log"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ports := freePorts(t, 2)
	conf := fmt.Sprintf(`ClusterName=godirect
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=%d
SlurmdPort=%d
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%[3]s/state
SlurmdSpoolDir=%[3]s/spool
SlurmctldPidFile=%[3]s/slurmctld.pid
SlurmdPidFile=%[3]s/slurmd.pid
SlurmctldLogFile=%[3]s/log/slurmctld.log
SlurmdLogFile=%[3]s/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
`, ports[0], ports[1], dir)
	s := &slurm{conf: filepath.Join(dir, "slurm.conf"), logs: filepath.Join(dir, "log")}
	if err := os.WriteFile(s.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{"slurmctld", "-D", "-i"}, {"slurmd", "-D", "-N", "localhost"}} {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "SLURM_CONF="+s.conf)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := os.Create(filepath.Join(s.logs, argv[0]+".out"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
			out.Close()
		})
	}
	// The node is ready when sinfo says idle.
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		cmd := exec.Command("sinfo", "-h", "-o", "%t")
		cmd.Env = append(os.Environ(), "SLURM_CONF="+s.conf)
		out, _ := cmd.CombinedOutput()
		if strings.TrimSpace(string(out)) == "idle" {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node is not idle after 30 s (sinfo: %q); logs:\n%s", out, s.tail())
		}
		<-tick.C
	}
}

func (s *slurm) tail() string {
	var b strings.Builder
	for _, f := range []string{"slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out"} {
		data, _ := os.ReadFile(filepath.Join(s.logs, f))
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "== %s\n%s\n", f, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	return b.String()
}

// freePorts returns n TCP ports nothing listens on now.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// TestSrun: srun --mpi=pmi2 -n 4 under a one-node Slurm of the test's own:
// every rank builds the mesh (over shm, one node) and exchanges 64 KiB
// with every other, every byte checked; nothing outlives the job.
func TestSrun(t *testing.T) {
	s := startSlurm(t)
	const p = 4
	j := newJob(t, "exchange", 2, []string{"srun", "--mpi=pmi2", "-n", fmt.Sprint(p), "--overcommit"})
	j.cmd.Env = append(j.cmd.Env, "SLURM_CONF="+s.conf)
	if err := j.run(60 * time.Second); err != nil {
		t.Fatalf("srun: %v; output:\n%s\nlogs:\n%s", err, j.out.String(), s.tail())
	}
	j.checkExchange(p, 2, func(int) int { return p - 1 }, func(int) int { return 0 })
	j.checkNoOrphans(5 * time.Second)
}
