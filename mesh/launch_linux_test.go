package mesh

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The launch tests start this test binary's TestLaunchedRank as the ranks
// of a job, through Debian's MPICH mpiexec (Hydra), on this host or in
// network namespaces standing for hosts.

// mpiexec returns the path of MPICH's mpiexec, or skips.
func mpiexec(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("mpiexec")
	if err != nil {
		t.Skip("no mpiexec: install Debian's mpich (.ci/run does)")
	}
	out, _ := exec.Command(path, "--version").CombinedOutput()
	if !bytes.Contains(out, []byte("HYDRA")) {
		t.Skipf("%s is not MPICH's Hydra", path)
	}
	return path
}

// job is one launch: its marker (in every process's environment, to find
// leftovers), the directory its ranks report into, and its output.
type job struct {
	t    *testing.T
	tag  string
	dir  string
	cmd  *exec.Cmd
	out  bytes.Buffer
	took time.Duration
}

func newJob(t *testing.T, mode string, pmiVersion int, argv []string) *job {
	t.Helper()
	var b [8]byte
	rand.Read(b[:])
	j := &job{t: t, tag: hex.EncodeToString(b[:]), dir: t.TempDir()}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv = append(argv, self, "-test.run=^TestLaunchedRank$", "-test.count=1", "-test.timeout=90s")
	j.cmd = exec.Command(argv[0], argv[1:]...)
	j.cmd.Env = append(os.Environ(),
		envRankMode+"="+mode, envRankDir+"="+j.dir,
		fmt.Sprintf("GODIRECT_PMI_VERSION=%d", pmiVersion),
		"GODIRECT_MESH_TEST_TAG="+j.tag)
	j.cmd.Stdout, j.cmd.Stderr = &j.out, &j.out
	// Its own process group, so that a timeout ends everything under it.
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return j
}

// run starts the launcher and waits for it, at most limit.
func (j *job) run(limit time.Duration) error {
	start := time.Now()
	if err := j.cmd.Start(); err != nil {
		j.t.Fatal(err)
	}
	return j.wait(start, limit)
}

func (j *job) wait(start time.Time, limit time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- j.cmd.Wait() }()
	select {
	case err := <-done:
		j.took = time.Since(start)
		return err
	case <-time.After(limit):
		syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
		<-done
		j.t.Fatalf("the launcher ran longer than %v; output:\n%s", limit, j.out.String())
		return nil
	}
}

// reports returns each rank's report line, by rank.
func (j *job) reports(p int) []string {
	j.t.Helper()
	lines := make([]string, p)
	for r := range p {
		b, err := os.ReadFile(filepath.Join(j.dir, fmt.Sprintf("rank-%d.txt", r)))
		if err == nil {
			lines[r] = strings.TrimSpace(string(b))
		}
	}
	return lines
}

// leftovers lists the processes whose environment holds the job's tag.
func leftovers(tag string) []string {
	var left []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	needle := []byte("GODIRECT_MESH_TEST_TAG=" + tag + "\x00")
	for _, d := range dirs {
		env, err := os.ReadFile(d + "/environ")
		if err != nil || !bytes.Contains(env, needle) {
			continue
		}
		cmdline, _ := os.ReadFile(d + "/cmdline")
		left = append(left, filepath.Base(d)+" "+string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return left
}

// checkNoOrphans fails the test if a process of the job is still there
// within limit of the launcher's end (a process the launcher killed may
// take a moment to be reaped).
func (j *job) checkNoOrphans(limit time.Duration) {
	j.t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		left := leftovers(j.tag)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, l := range left {
				var pid int
				fmt.Sscan(l, &pid)
				syscall.Kill(pid, syscall.SIGKILL)
			}
			j.t.Fatalf("%d processes of the job outlived it by %v: %q", len(left), limit, left)
		}
		<-tick.C
	}
}

// checkExchange checks that every rank of p reported the exchange with
// the expected number of same-host and other-host peers.
func (j *job) checkExchange(p, version int, local, remote func(rank int) int) {
	j.t.Helper()
	for r, line := range j.reports(p) {
		want := fmt.Sprintf("rank=%d size=%d version=%d ok local=%d remote=%d", r, p, version, local(r), remote(r))
		if p == 1 {
			want = fmt.Sprintf("rank=0 size=1 version=%d ok local=0 remote=0", version)
		}
		if line != want {
			j.t.Errorf("rank %d reported %q, want %q; output:\n%s", r, line, want, j.out.String())
		}
	}
}

// TestMpiexec: mpiexec -n P on this host, P = 1, 2, 4, 8, PMI-1 and PMI-2:
// every rank builds the mesh (all over shm, one host) and exchanges 64 KiB
// with every other, every byte checked; nothing outlives the job.
func TestMpiexec(t *testing.T) {
	path := mpiexec(t)
	for _, v := range []int{1, 2} {
		for _, p := range []int{1, 2, 4, 8} {
			t.Run(fmt.Sprintf("pmi%d/P=%d", v, p), func(t *testing.T) {
				j := newJob(t, "exchange", v, []string{path, "-n", fmt.Sprint(p)})
				if err := j.run(60 * time.Second); err != nil {
					t.Fatalf("mpiexec: %v; output:\n%s", err, j.out.String())
				}
				j.checkExchange(p, v, func(int) int { return p - 1 }, func(int) int { return 0 })
				j.checkNoOrphans(5 * time.Second)
			})
		}
	}
}

// TestMpiexecPort: the same through PMI_PORT (mpiexec -pmi-port) instead
// of an inherited descriptor.
func TestMpiexecPort(t *testing.T) {
	path := mpiexec(t)
	for _, v := range []int{1, 2} {
		t.Run(fmt.Sprintf("pmi%d", v), func(t *testing.T) {
			j := newJob(t, "exchange", v, []string{path, "-pmi-port", "-n", "3"})
			if err := j.run(60 * time.Second); err != nil {
				t.Fatalf("mpiexec: %v; output:\n%s", err, j.out.String())
			}
			j.checkExchange(3, v, func(int) int { return 2 }, func(int) int { return 0 })
			j.checkNoOrphans(5 * time.Second)
		})
	}
}

// TestMpiexecHosts: mpiexec over network namespaces standing for hosts
// (hostsFor(P) of them, P/hosts ranks each, Hydra's launcher running each
// host's proxy in its namespace): shm between the ranks of a namespace,
// tcp between namespaces, every byte checked, for P = 2, 4, 8 and PMI-1
// and PMI-2.
func TestMpiexecHosts(t *testing.T) {
	path := mpiexec(t)
	for _, v := range []int{1, 2} {
		for _, p := range []int{2, 4, 8} {
			t.Run(fmt.Sprintf("pmi%d/P=%d", v, p), func(t *testing.T) {
				nh := hostsFor(p)
				ppn := p / nh
				c := newCluster(t, nh)
				j := newJob(t, "exchange", v, c.mpiexec(path, p, ppn))
				if err := j.run(60 * time.Second); err != nil {
					t.Fatalf("mpiexec: %v; output:\n%s", err, j.out.String())
				}
				j.checkExchange(p, v, func(int) int { return ppn - 1 }, func(int) int { return p - ppn })
				j.checkNoOrphans(5 * time.Second)
			})
		}
	}
}

// hostsFor is how many namespaces a P-rank test spreads over.
func hostsFor(p int) int {
	if p <= 2 {
		return p
	}
	return p / 2
}

// TestMpiexecAbort: a rank that aborts ends the job: mpiexec exits with an
// error within seconds, the others (waiting on their queues) are ended,
// and nothing outlives it.
func TestMpiexecAbort(t *testing.T) {
	path := mpiexec(t)
	for _, v := range []int{1, 2} {
		t.Run(fmt.Sprintf("pmi%d", v), func(t *testing.T) {
			j := newJob(t, "abort", v, []string{path, "-n", "4"})
			err := j.run(30 * time.Second)
			if err == nil {
				t.Fatalf("mpiexec exited 0 after an abort; output:\n%s", j.out.String())
			}
			if r := j.reports(4)[1]; r != fmt.Sprintf("rank=1 size=4 version=%d aborting", v) {
				t.Fatalf("rank 1 reported %q; output:\n%s", r, j.out.String())
			}
			// PMI-1's abort carries the exit code; Hydra 4.0.2 does not know
			// PMI-2's and ends the job with 255.
			want := map[int]int{1: 7, 2: 255}[v]
			if code := j.cmd.ProcessState.ExitCode(); code != want {
				t.Errorf("mpiexec exited %d, want %d", code, want)
			}
			if j.took > 10*time.Second {
				t.Errorf("the job took %v to end after the abort", j.took)
			}
			j.checkNoOrphans(5 * time.Second)
			t.Logf("ended in %v, mpiexec exit %d", j.took.Round(time.Millisecond), j.cmd.ProcessState.ExitCode())
		})
	}
}

// TestLauncherKilled: the launcher dies under a job whose ranks wait on
// their queues. Killing mpiexec ends its proxy, which ends the ranks; killing
// the proxy (the process holding the ranks' PMI descriptors) leaves the
// ranks to see the descriptor close, and each ends its wait with
// pmi.ErrLauncherGone's message within seconds. Nothing outlives either.
func TestLauncherKilled(t *testing.T) {
	path := mpiexec(t)
	for _, victim := range []string{"mpiexec", "proxy"} {
		t.Run(victim, func(t *testing.T) {
			const p = 4
			j := newJob(t, "wait", 2, []string{path, "-n", fmt.Sprint(p)})
			start := time.Now()
			if err := j.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Every rank writes "ready" once its mesh is built.
			deadline := time.Now().Add(30 * time.Second)
			tick := time.NewTicker(20 * time.Millisecond)
			for n := 0; n < p; {
				n = 0
				for _, l := range j.reports(p) {
					if strings.HasSuffix(l, " ready") {
						n++
					}
				}
				if time.Now().After(deadline) {
					syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
					t.Fatalf("%d of %d ranks ready after 30 s; output:\n%s", n, p, j.out.String())
				}
				<-tick.C
			}
			tick.Stop()
			pid := j.cmd.Process.Pid
			if victim == "proxy" {
				pid = childNamed(t, j.cmd.Process.Pid, "hydra_pmi_proxy")
			}
			killed := time.Now()
			syscall.Kill(pid, syscall.SIGKILL)
			j.wait(start, 30*time.Second)
			j.checkNoOrphans(10 * time.Second)
			t.Logf("every process gone %v after the kill", time.Since(killed).Round(time.Millisecond))
			if victim == "proxy" {
				for r, l := range j.reports(p) {
					if !strings.Contains(l, "ended") || !strings.Contains(l, "lost the connection to the launcher") {
						t.Errorf("rank %d: %q, want its wait ended by the launcher's loss", r, l)
					}
				}
			}
		})
	}
}

// childNamed returns the pid of parent's child whose command name is name.
func childNamed(t *testing.T, parent int, name string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", parent, parent))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(b)) {
		comm, _ := os.ReadFile("/proc/" + f + "/comm")
		if strings.TrimSpace(string(comm)) == name {
			var pid int
			fmt.Sscan(f, &pid)
			return pid
		}
	}
	t.Fatalf("no child %s of %d among %q", name, parent, b)
	return 0
}
