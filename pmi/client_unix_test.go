//go:build unix

package pmi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fake is the launcher's end of a socketpair whose other end a Client
// gets as PMI_FD: the test reads the client's commands and writes answers.
type fake struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

// newFake makes the pair and returns the fake launcher and the
// environment of a rank of it.
func newFake(t *testing.T, rank, size int) (*fake, func(string) (string, bool)) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[0]), "launcher")
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	env := map[string]string{"PMI_FD": strconv.Itoa(fds[1]), "PMI_RANK": strconv.Itoa(rank), "PMI_SIZE": strconv.Itoa(size)}
	return &fake{t: t, nc: nc, br: bufio.NewReader(nc)}, func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// expect reads the client's next command, in PMI-2 frames when v2, and
// fails the test unless its text is want.
func (f *fake) expect(v2 bool, want string) {
	f.t.Helper()
	f.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	m, err := readMsg(f.br, v2)
	if err != nil {
		f.t.Errorf("launcher: reading %q: %v", want, err)
		return
	}
	if got := m.String(); got != want {
		f.t.Errorf("launcher: got %q, want %q", got, want)
	}
}

func (f *fake) send(raw string) {
	if _, err := f.nc.Write([]byte(raw)); err != nil {
		f.t.Errorf("launcher: write: %v", err)
	}
}

func v2frame(body string) string { return fmt.Sprintf("%6d%s", len(body), body) }

// initV1 plays Hydra's answers to a PMI-1 client's Init.
func (f *fake) initV1(size int) {
	f.expect(false, "cmd=init pmi_version=1 pmi_subversion=1")
	f.send("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n")
	f.expect(false, "cmd=get_maxes")
	f.send("cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n")
	f.expect(false, "cmd=get_my_kvsname")
	f.send("cmd=my_kvsname kvsname=kvs_42_0\n")
	f.expect(false, "cmd=get_appnum")
	f.send("cmd=appnum appnum=3\n")
	f.expect(false, "cmd=get_universe_size")
	f.send(fmt.Sprintf("cmd=universe_size size=%d\n", size+4))
}

// initV2 plays Hydra's answers to a PMI-2 client's Init.
func (f *fake) initV2(rank, size int) {
	f.expect(false, "cmd=init pmi_version=2 pmi_subversion=0")
	f.send("cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n")
	f.expect(true, fmt.Sprintf("cmd=fullinit pmirank=%d threaded=FALSE", rank))
	f.send(v2frame(fmt.Sprintf("cmd=fullinit-response;pmi-version=2;pmi-subversion=0;rank=%d;size=%d;appnum=1;debugged=FALSE;pmiverbose=FALSE;rc=0;", rank, size)))
	f.expect(true, "cmd=job-getid")
	f.send(v2frame("cmd=job-getid-response;jobid=job;;7;rc=0;"))
	f.expect(true, "cmd=info-getjobattr key=universeSize")
	f.send(v2frame("cmd=info-getjobattr-response;found=FALSE;rc=0;"))
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestV1Session: a PMI-1 session against a scripted launcher, command by
// command, with the values Init, Put, Fence, Get and Finalize report.
func TestV1Session(t *testing.T) {
	f, env := newFake(t, 2, 4)
	go func() {
		f.initV1(4)
		f.expect(false, "cmd=put kvsname=kvs_42_0 key=card-2 value=x|y:1")
		f.send("cmd=put_result rc=0 msg=success\n")
		f.expect(false, "cmd=barrier_in")
		f.send("cmd=barrier_out\n")
		f.expect(false, "cmd=get kvsname=kvs_42_0 key=card-0")
		f.send("cmd=get_result rc=0 msg=success value=abc\n")
		f.expect(false, "cmd=get kvsname=kvs_42_0 key=card-9")
		f.send("cmd=get_result rc=-1 msg=key_card-9_not_found\n")
		f.expect(false, "cmd=finalize")
		f.send("cmd=finalize_ack\n")
		f.nc.Close()
	}()
	ctx := ctxT(t, 10*time.Second)
	cl, err := Init(ctx, &Config{LookupEnv: env, Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintln(cl.Version(), cl.Rank(), cl.Size(), cl.Universe(), cl.AppNum(), cl.JobID(), cl.MaxKey(), cl.MaxValue()); got != "1 2 4 8 3 kvs_42_0 64 1024\n" {
		t.Fatalf("version rank size universe appnum job maxkey maxvalue: %s", got)
	}
	if err := cl.Put(ctx, "card-2", "x|y:1"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Fence(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := cl.Get(ctx, "card-0"); err != nil || v != "abc" {
		t.Fatalf("Get card-0: %q, %v", v, err)
	}
	if v, err := cl.Get(ctx, "card-9"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get card-9: %q, %v; want ErrNotFound", v, err)
	}
	if err := cl.Finalize(ctx); err != nil {
		t.Fatal(err)
	}
	<-cl.Done()
	if !errors.Is(cl.Err(), ErrClosed) {
		t.Fatalf("Err after Finalize: %v", cl.Err())
	}
	if err := cl.Put(ctx, "a", "b"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Finalize: %v", err)
	}
}

// TestV2Session: the same in PMI-2, with ';' escaped in the job id.
func TestV2Session(t *testing.T) {
	f, env := newFake(t, 1, 3)
	go func() {
		f.initV2(1, 3)
		f.expect(true, "cmd=kvs-put key=k value=v")
		f.send(v2frame("cmd=kvs-put-response;rc=0;"))
		f.expect(true, "cmd=kvs-fence")
		f.send(v2frame("cmd=kvs-fence-response;rc=0;"))
		f.expect(true, "cmd=kvs-get jobid=job;7 srcid=-1 key=k")
		f.send(v2frame("cmd=kvs-get-response;found=TRUE;value=v;rc=0;"))
		f.expect(true, "cmd=kvs-get jobid=job;7 srcid=-1 key=nope")
		f.send(v2frame("cmd=kvs-get-response;found=FALSE;rc=0;"))
		f.expect(true, "cmd=finalize")
		f.send(v2frame("cmd=finalize-response;rc=0;"))
	}()
	ctx := ctxT(t, 10*time.Second)
	cl, err := Init(ctx, &Config{LookupEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintln(cl.Version(), cl.Rank(), cl.Size(), cl.Universe(), cl.AppNum(), cl.JobID()); got != "2 1 3 3 1 job;7\n" {
		t.Fatalf("version rank size universe appnum job: %s", got)
	}
	if err := cl.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := cl.Get(ctx, "k"); err != nil || v != "v" {
		t.Fatalf("Get k: %q, %v", v, err)
	}
	if _, err := cl.Get(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get nope: %v", err)
	}
	if err := cl.Finalize(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLauncherDiesInFence: the launcher closes the descriptor while a
// rank waits in Fence; Fence returns ErrLauncherGone at once and Done
// closes.
func TestLauncherDiesInFence(t *testing.T) {
	for _, v := range []int{1, 2} {
		t.Run(fmt.Sprint("v", v), func(t *testing.T) {
			f, env := newFake(t, 0, 2)
			go func() {
				if v == 1 {
					f.initV1(2)
					f.expect(false, "cmd=barrier_in")
				} else {
					f.initV2(0, 2)
					f.expect(true, "cmd=kvs-fence")
				}
				f.nc.Close()
			}()
			ctx := ctxT(t, 10*time.Second)
			cl, err := Init(ctx, &Config{LookupEnv: env, Version: v})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err = cl.Fence(ctx)
			if !errors.Is(err, ErrLauncherGone) || !strings.Contains(err.Error(), "closed") {
				t.Fatalf("Fence: %v, want ErrLauncherGone", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("Fence took %v", d)
			}
			select {
			case <-cl.Done():
			default:
				t.Fatal("Done open after the launcher closed")
			}
			if !errors.Is(cl.Err(), ErrLauncherGone) {
				t.Fatalf("Err: %v", cl.Err())
			}
			if err := cl.Put(ctx, "a", "b"); !errors.Is(err, ErrLauncherGone) {
				t.Fatalf("Put afterwards: %v", err)
			}
		})
	}
}

// TestLauncherDiesWhileIdle: Done closes when the launcher goes away
// between calls, with no call under way.
func TestLauncherDiesWhileIdle(t *testing.T) {
	f, env := newFake(t, 0, 2)
	go func() { f.initV1(2); f.nc.Close() }()
	ctx := ctxT(t, 10*time.Second)
	cl, err := Init(ctx, &Config{LookupEnv: env, Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-cl.Done():
	case <-ctx.Done():
		t.Fatal("Done still open")
	}
	if !errors.Is(cl.Err(), ErrLauncherGone) {
		t.Fatalf("Err: %v", cl.Err())
	}
}

// TestLauncherGarbage: answers that break the protocol end Init or the
// call with ErrProtocol.
func TestLauncherGarbage(t *testing.T) {
	cases := []struct {
		name   string
		answer string // to init (PMI-1), or to the fence after init
		init   bool
	}{
		{"init-binary", "\x00\x01\x02\n", true},
		{"init-wrong-cmd", "cmd=barrier_out\n", true},
		{"init-no-cmd", "rc=0\n", true},
		{"init-refused", "cmd=response_to_init rc=-1 msg=version_mismatch\n", true},
		{"fence-wrong-cmd", "cmd=put_result rc=0\n", false},
		{"fence-garbage", "garbage garbage\n", false},
		{"fence-long-line", strings.Repeat("cmd=x ", maxLine/4), false},
		{"fence-unsolicited", strings.Repeat("cmd=barrier_out\n", maxUnread+3), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, env := newFake(t, 0, 2)
			go func() {
				if c.init {
					f.expect(false, "cmd=init pmi_version=1 pmi_subversion=1")
					f.send(c.answer)
					return
				}
				f.initV1(2)
				if c.name != "fence-unsolicited" {
					f.expect(false, "cmd=barrier_in")
				}
				f.send(c.answer)
			}()
			ctx := ctxT(t, 10*time.Second)
			cl, err := Init(ctx, &Config{LookupEnv: env, Version: 1})
			if c.init {
				var pe *Error
				if !errors.Is(err, ErrProtocol) && !errors.As(err, &pe) {
					t.Fatalf("Init: %v, want ErrProtocol or a refusal", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if c.name == "fence-unsolicited" {
				<-cl.Done()
			}
			if err := cl.Fence(ctx); !errors.Is(err, ErrProtocol) {
				t.Fatalf("Fence: %v, want ErrProtocol", err)
			}
		})
	}
}

// TestLauncherSilent: a launcher that never answers costs the caller its
// context, not a hang; the Client is broken afterwards, Abort and Close
// still work.
func TestLauncherSilent(t *testing.T) {
	f, env := newFake(t, 0, 2)
	go func() { f.initV1(2) }()
	cl, err := Init(ctxT(t, 10*time.Second), &Config{LookupEnv: env, Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := cl.Fence(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Fence: %v, want DeadlineExceeded", err)
	}
	if _, err := cl.Get(context.Background(), "k"); !errors.Is(err, ErrBroken) {
		t.Fatalf("Get after an abandoned Fence: %v, want ErrBroken", err)
	}
	if err := cl.Abort(ctxT(t, 5*time.Second), 3, "gave up waiting"); err != nil {
		t.Fatal(err)
	}
	f.expect(false, "cmd=barrier_in")
	f.expect(false, "cmd=abort exitcode=3 message=gave_up_waiting")
	cl.Close()
	<-cl.Done()
}

// TestInitSilent: a descriptor nobody answers on ends Init at its context.
func TestInitSilent(t *testing.T) {
	_, env := newFake(t, 0, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Init(ctx, &Config{LookupEnv: env, Version: 2}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Init: %v, want DeadlineExceeded", err)
	}
}

// TestEnvErrors: a malformed environment is an error naming the variable.
func TestEnvErrors(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"PMI_FD": "x"}, `PMI_FD="x"`},
		{map[string]string{"PMI_FD": "-1"}, `PMI_FD="-1"`},
		{map[string]string{"PMI_FD": "987654"}, "PMI_FD=987654"},
		{map[string]string{"PMI_PORT": "127.0.0.1:1"}, "PMI_ID"},
		{map[string]string{"PMI_PORT": "127.0.0.1:1", "PMI_ID": "z"}, `PMI_ID="z"`},
		{map[string]string{"PMI_FD": "0", "GODIRECT_PMI_VERSION": "3"}, "version 3"},
		{map[string]string{"PMI_FD": "0", "GODIRECT_PMI_VERSION": "two"}, "GODIRECT_PMI_VERSION"},
	}
	for _, c := range cases {
		_, err := Init(ctxT(t, 5*time.Second), &Config{LookupEnv: func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("env %v: %v, want an error naming %s", c.env, err, c.want)
		}
	}
	// A PMI_FD that is a file, not a socket.
	file, err := os.CreateTemp(t.TempDir(), "notasocket")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	fd, err := syscall.Dup(int(file.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Init(ctxT(t, 5*time.Second), &Config{LookupEnv: func(k string) (string, bool) {
		return map[string]string{"PMI_FD": strconv.Itoa(fd), "PMI_RANK": "0", "PMI_SIZE": "1"}[k], k != "PMI_PORT"
	}})
	if err == nil || !strings.Contains(err.Error(), "not a usable socket") {
		t.Fatalf("a file as PMI_FD: %v", err)
	}
}

// TestRankMismatch: PMI-2's fullinit answer must agree with PMI_RANK and
// PMI_SIZE.
func TestRankMismatch(t *testing.T) {
	f, env := newFake(t, 1, 3)
	go func() {
		f.expect(false, "cmd=init pmi_version=2 pmi_subversion=0")
		f.send("cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n")
		f.expect(true, "cmd=fullinit pmirank=1 threaded=FALSE")
		f.send(v2frame("cmd=fullinit-response;rank=2;size=3;rc=0;"))
	}()
	_, err := Init(ctxT(t, 10*time.Second), &Config{LookupEnv: env, Version: 2})
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "rank 2 of 3, the environment 1 of 3") {
		t.Fatalf("Init: %v", err)
	}
}

// TestPMIPort: PMI_PORT and PMI_ID: initack, then rank and size from the
// launcher's set lines.
func TestPMIPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		nc, err := l.Accept()
		if err != nil {
			t.Error(err)
			return
		}
		defer nc.Close()
		f := &fake{t: t, nc: nc, br: bufio.NewReader(nc)}
		f.expect(false, "cmd=initack pmiid=5")
		f.send("cmd=initack rc=0\ncmd=set size=6\ncmd=set rank=5\ncmd=set debug=0\n")
		f.initV1(6)
		f.expect(false, "cmd=finalize")
		f.send("cmd=finalize_ack\n")
	}()
	env := map[string]string{"PMI_PORT": l.Addr().String(), "PMI_ID": "5"}
	ctx := ctxT(t, 10*time.Second)
	cl, err := Init(ctx, &Config{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	if cl.Rank() != 5 || cl.Size() != 6 {
		t.Fatalf("rank %d of %d", cl.Rank(), cl.Size())
	}
	if err := cl.Finalize(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestWatch: a context from Watch ends, with the launcher's loss as its
// cause, when the launcher closes the descriptor.
func TestWatch(t *testing.T) {
	f, env := newFake(t, 0, 2)
	go func() { f.initV1(2) }()
	cl, err := Init(ctxT(t, 10*time.Second), &Config{LookupEnv: env, Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := cl.Watch(ctxT(t, 10*time.Second))
	defer cancel()
	f.nc.Close()
	<-ctx.Done()
	if err := context.Cause(ctx); !errors.Is(err, ErrLauncherGone) {
		t.Fatalf("cause %v, want ErrLauncherGone", err)
	}
}

// TestV2PMIJobID: Slurm's PMI_JOBID goes back in fullinit as pmijobid,
// and Slurm's appnum=-1 is reported as it is.
func TestV2PMIJobID(t *testing.T) {
	f, env := newFake(t, 0, 1)
	go func() {
		f.expect(false, "cmd=init pmi_version=2 pmi_subversion=0")
		f.send("cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n")
		f.expect(true, "cmd=fullinit pmijobid=12.0 pmirank=0 threaded=FALSE")
		f.send(v2frame("cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=0;size=1;appnum=-1;debugged=FALSE;pmiverbose=FALSE;"))
		f.expect(true, "cmd=job-getid")
		f.send(v2frame("cmd=job-getid-response;rc=0;jobid=12.0;"))
		f.expect(true, "cmd=info-getjobattr key=universeSize")
		f.send(v2frame("cmd=info-getjobattr-response;rc=0;found=TRUE;value=4;"))
	}()
	cl, err := Init(ctxT(t, 10*time.Second), &Config{LookupEnv: func(k string) (string, bool) {
		if k == "PMI_JOBID" {
			return "12.0", true
		}
		return env(k)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if cl.JobID() != "12.0" || cl.AppNum() != -1 || cl.Universe() != 4 {
		t.Fatalf("job %q appnum %d universe %d", cl.JobID(), cl.AppNum(), cl.Universe())
	}
}
