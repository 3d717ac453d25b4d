package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/godirect/nd/cmd/nd/internal/session"
	"github.com/godirect/nd/internal/ndexport"
	"github.com/godirect/nd/provider/ndspi"
)

// TestNDSPINotSupported: elsewhere than Windows, -provider ndspi says
// where ND providers are.
func TestNDSPINotSupported(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("on Windows provider ndspi loads ND providers (TestNDSPI)")
	}
	code, _, stderr := runNd(t, "info", "-provider", "ndspi")
	if code != 1 || !strings.Contains(stderr, "ND_NOT_SUPPORTED") || !strings.Contains(stderr, "Windows") {
		t.Fatalf("nd info -provider ndspi: exit status %d, stderr:\n%s", code, stderr)
	}
}

// TestNDSPI runs nd info, nd pingpong and nd perf with -provider ndspi
// against godirect's ND provider DLL (GODIRECT_NDSPI_TEST_DLL, which
// .ci/wine/run-ndspi sets), configured through the environment as a user
// would: ND v2 over its tcp transport and ND v1 over its shm transport, the
// server and the client in two nd processes.
func TestNDSPI(t *testing.T) {
	dll := os.Getenv("GODIRECT_NDSPI_TEST_DLL")
	if runtime.GOOS != "windows" || dll == "" {
		t.Skip("needs Windows and GODIRECT_NDSPI_TEST_DLL, godirect's ND provider DLL (.ci/wine/run-ndspi sets it)")
	}
	bin := buildNd(t)
	for _, c := range []struct {
		name, class, version string
	}{
		{"v2/tcp", ndexport.TCPClassID.String(), "2"},
		{"v1/shm", ndexport.SHMClassID.String(), "1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := append(os.Environ(), ndspi.EnvDLL+"="+dll, ndspi.EnvClass+"="+c.class, ndspi.EnvVersion+"="+c.version)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			nd := func(args ...string) *exec.Cmd {
				cmd := exec.CommandContext(ctx, bin, args...)
				cmd.Env = env
				return cmd
			}

			out, err := nd("info", "-provider", "ndspi").Output()
			if err != nil {
				t.Fatalf("nd info -provider ndspi: %v\n%s", err, out)
			}
			for _, want := range []string{"ND providers found: 1\n", c.class, "ND version: " + c.version + "\n", "    Limits (the adapter of ", "Provider: ndspi\n", "MaxCqEntries: "} {
				if !strings.Contains(string(out), want) {
					t.Errorf("nd info -provider ndspi lacks %q:\n%s", want, out)
				}
			}

			// nd pingpong: the server, then the client against it.
			server := nd("pingpong", "-provider", "ndspi", "-s", "-p", "0", "-b", "-timeout", "100s")
			var serverErr strings.Builder
			server.Stderr = &serverErr
			pipe, err := server.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := server.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(pipe)
			var m []string
			if lines.Scan() {
				m = session.ListeningLineRE.FindStringSubmatch(lines.Text())
			}
			if m == nil {
				server.Process.Kill()
				server.Wait()
				t.Fatalf("the pingpong server's first line is %q; stderr:\n%s", lines.Text(), serverErr.String())
			}
			go func() {
				for lines.Scan() {
				}
			}()
			out, err = nd("pingpong", "-provider", "ndspi", "-c", "-b", "-max", "4096", "-iters", "50", "-timeout", "100s", m[1]).Output()
			if err != nil {
				t.Errorf("nd pingpong -provider ndspi -c %s: %v\n%s", m[1], err, out)
			} else if !strings.Contains(string(out), "Latency") || !strings.Contains(string(out), "      4096 ") {
				t.Errorf("nd pingpong -provider ndspi: no row for 4096 bytes:\n%s", out)
			}
			if err := server.Wait(); err != nil {
				t.Errorf("the pingpong server: %v\nstderr:\n%s", err, serverErr.String())
			}

			// nd perf without an address starts its server as a second
			// process.
			out, err = nd("perf", "send_lat", "--provider", "ndspi", "-b", "-n", "50", "-s", "64", "-timeout", "100s").Output()
			if err != nil {
				t.Fatalf("nd perf send_lat --provider ndspi: %v\n%s", err, out)
			}
			checkPerfTable(t, "send_lat", string(out), []int{64}, 50)
		})
	}
}
