package pmi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
)

// Config chooses how Init finds and speaks to the launcher. The zero
// Config (or a nil *Config) reads the process's environment.
type Config struct {
	// LookupEnv reads the environment; nil means os.LookupEnv.
	LookupEnv func(key string) (string, bool)
	// Version is the protocol to speak: 1 (PMI-1) or 2 (PMI-2). 0 takes
	// GODIRECT_PMI_VERSION from the environment, or 2 when it is unset
	// (MPICH's Hydra and Slurm's --mpi=pmi2 both serve PMI-2).
	Version int
	// Logger, when not nil, receives one record per command sent and
	// answer received, at debug level. The package logs nothing else.
	Logger *slog.Logger
}

// Client is one process's membership in a job: its rank among Size
// processes, and the job's key-value space. Get one with Init.
//
// A Client is safe for concurrent use; calls that speak to the launcher
// (Put, Fence, Get, Barrier, Finalize) go one at a time, in the order they
// take its lock. Every call that waits for the launcher takes a context:
// when it ends before the answer, the call returns its cause and the
// Client is left broken (ErrBroken) for every later call but Abort and
// Close, since the launcher's answer may still come.
type Client struct {
	version  int // 0: a job of one, with no launcher
	rank     int
	size     int
	universe int
	appnum   int
	jobID    string
	maxKey   int
	maxValue int
	log      *slog.Logger

	c *conn // nil for a job of one

	mu     sync.Mutex
	local  map[string]string // a job of one's key-value space
	closed bool
	done   chan struct{} // a job of one's Done: closed by Close
}

// Init joins the job the process was launched into, from the environment
// (see docs/pmi.md): PMI_FD (a descriptor the launcher passed), or
// PMI_PORT and PMI_ID (a TCP address to connect to), with PMI_RANK and
// PMI_SIZE. With none of PMI_FD and PMI_PORT set, the process is a job of
// one (rank 0 of 1, Version 0) whose key-value space is its own.
//
// Init returns an error, never hangs past ctx, when the environment is
// malformed, the descriptor is not a socket, or the launcher closes the
// connection, answers garbage or refuses.
func Init(ctx context.Context, cfg *Config) (*Client, error) {
	var conf Config
	if cfg != nil {
		conf = *cfg
	}
	if conf.LookupEnv == nil {
		conf.LookupEnv = os.LookupEnv
	}
	env := conf.LookupEnv
	version := conf.Version
	if version == 0 {
		version = 2
		if v, ok := env("GODIRECT_PMI_VERSION"); ok && v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("pmi: GODIRECT_PMI_VERSION=%q: want 1 or 2", v)
			}
			version = n
		}
	}
	if version != 1 && version != 2 {
		return nil, fmt.Errorf("pmi: version %d: want 1 or 2", version)
	}
	fdStr, haveFD := env("PMI_FD")
	port, havePort := env("PMI_PORT")
	if !haveFD && !havePort {
		return &Client{size: 1, universe: 1, jobID: "singleton", maxKey: 256, maxValue: 4096,
			local: make(map[string]string), done: make(chan struct{}), log: conf.Logger}, nil
	}
	cl := &Client{version: version, log: conf.Logger, rank: -1, size: -1, universe: -1}
	var nc net.Conn
	var err error
	id := -1
	if haveFD {
		nc, err = fileConn(fdStr)
	} else {
		idStr, ok := env("PMI_ID")
		if !ok {
			return nil, errors.New("pmi: PMI_PORT is set but not PMI_ID")
		}
		if id, err = strconv.Atoi(idStr); err != nil || id < 0 {
			return nil, fmt.Errorf("pmi: PMI_ID=%q is not a rank", idStr)
		}
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", port)
		if err != nil {
			err = fmt.Errorf("pmi: connecting to PMI_PORT=%s: %w", port, err)
		}
	}
	if err != nil {
		return nil, err
	}
	cl.c = newConn(nc)
	if err := cl.handshake(ctx, env, id); err != nil {
		cl.c.close()
		return nil, err
	}
	return cl, nil
}

// fileConn makes a net.Conn of the descriptor PMI_FD names and closes the
// descriptor itself (the Conn holds a duplicate, closed on exec).
func fileConn(s string) (net.Conn, error) {
	fd, err := strconv.Atoi(s)
	if err != nil || fd < 0 {
		return nil, fmt.Errorf("pmi: PMI_FD=%q is not a descriptor", s)
	}
	f := os.NewFile(uintptr(fd), "PMI_FD")
	if f == nil {
		return nil, fmt.Errorf("pmi: PMI_FD=%d is not a descriptor", fd)
	}
	defer f.Close()
	nc, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("pmi: PMI_FD=%d is not a usable socket: %w", fd, err)
	}
	return nc, nil
}

// envInt reads an integer variable; ok is false when it is unset.
func envInt(env func(string) (string, bool), key string) (n int, ok bool, err error) {
	s, ok := env(key)
	if !ok {
		return 0, false, nil
	}
	n, err = strconv.Atoi(s)
	if err != nil {
		return 0, true, fmt.Errorf("pmi: %s=%q is not an integer", key, s)
	}
	return n, true, nil
}

// Version is the protocol spoken with the launcher: 1 or 2, or 0 for a
// job of one, which has no launcher.
func (cl *Client) Version() int { return cl.version }

// Rank is this process's rank, 0..Size()-1.
func (cl *Client) Rank() int { return cl.rank }

// Size is the number of processes in the job.
func (cl *Client) Size() int { return cl.size }

// Universe is the number of processes the launcher could run (PMI-1's
// universe size, PMI-2's universeSize job attribute), or Size when the
// launcher does not say.
func (cl *Client) Universe() int { return cl.universe }

// AppNum is the index of this process's executable among those the
// launcher started (mpiexec's "a : b" lists), 0 when there is one, as the
// launcher reports it (Slurm says -1).
func (cl *Client) AppNum() int { return cl.appnum }

// JobID names the job's key-value space (PMI-1's kvsname, PMI-2's jobid);
// "singleton" for a job of one.
func (cl *Client) JobID() string { return cl.jobID }

// MaxKey is the longest key, in bytes, the launcher accepts.
func (cl *Client) MaxKey() int { return cl.maxKey }

// MaxValue is the longest value, in bytes, the launcher accepts.
func (cl *Client) MaxValue() int { return cl.maxValue }

// Done is closed when the connection to the launcher ends: after Close or
// Finalize, or when the launcher closes it, dies, or breaks the protocol
// (Err says which). A job of one's Done closes at Close.
func (cl *Client) Done() <-chan struct{} {
	if cl.c == nil {
		return cl.done
	}
	return cl.c.done
}

// Err is nil while Done is open, then why it closed: ErrClosed after
// Close or Finalize, an error wrapping ErrLauncherGone or ErrProtocol
// otherwise.
func (cl *Client) Err() error {
	select {
	case <-cl.Done():
	default:
		return nil
	}
	if cl.c == nil {
		return ErrClosed
	}
	return cl.c.err
}

func (cl *Client) checkKV(key, value string, withValue bool) error {
	if err := checkToken("key", key); err != nil {
		return err
	}
	if len(key) > cl.maxKey {
		return fmt.Errorf("pmi: key %q is %d bytes, the launcher takes %d", key, len(key), cl.maxKey)
	}
	if !withValue {
		return nil
	}
	if err := checkToken("value", value); err != nil {
		return err
	}
	if len(value) > cl.maxValue {
		return fmt.Errorf("pmi: the value of %q is %d bytes, the launcher takes %d", key, len(value), cl.maxValue)
	}
	return nil
}

// Put stores value under key in the job's key-value space; other ranks
// see it after the next Fence. Keys and values are printable ASCII without
// space, '=' or ';', of at most MaxKey and MaxValue bytes. A key is put
// once per job (launchers refuse or ignore a second put).
func (cl *Client) Put(ctx context.Context, key, value string) error {
	if err := cl.checkKV(key, value, true); err != nil {
		return err
	}
	if cl.c == nil {
		return cl.localDo(func() { cl.local[key] = value })
	}
	var req message
	var want string
	if cl.version == 1 {
		req = message{"put", []attr{{"kvsname", cl.jobID}, {"key", key}, {"value", value}}}
		want = "put_result"
	} else {
		req = message{"kvs-put", []attr{{"key", key}, {"value", value}}}
		want = "kvs-put-response"
	}
	ans, err := cl.call(ctx, req, want)
	if err != nil {
		return err
	}
	return ans.rc("put")
}

// Fence makes every rank's Puts before it visible to every rank's Gets
// after it; it returns once every rank of the job called it (a barrier).
// Every rank must call it the same number of times.
func (cl *Client) Fence(ctx context.Context) error {
	if cl.c == nil {
		return cl.localDo(func() {})
	}
	var req message
	var want string
	if cl.version == 1 {
		req, want = message{"barrier_in", nil}, "barrier_out"
	} else {
		req, want = message{"kvs-fence", nil}, "kvs-fence-response"
	}
	ans, err := cl.call(ctx, req, want)
	if err != nil {
		return err
	}
	return ans.rc("fence")
}

// Barrier waits until every rank called it: a Fence.
func (cl *Client) Barrier(ctx context.Context) error { return cl.Fence(ctx) }

// Get returns the value some rank put under key before the last Fence, or
// an error wrapping ErrNotFound.
func (cl *Client) Get(ctx context.Context, key string) (string, error) {
	if err := cl.checkKV(key, "", false); err != nil {
		return "", err
	}
	if cl.c == nil {
		var v string
		var ok bool
		if err := cl.localDo(func() { v, ok = cl.local[key] }); err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("%w: %q", ErrNotFound, key)
		}
		return v, nil
	}
	if cl.version == 1 {
		ans, err := cl.call(ctx, message{"get", []attr{{"kvsname", cl.jobID}, {"key", key}}}, "get_result")
		if err != nil {
			return "", err
		}
		if f, ok := ans.get("found"); ok && f != "TRUE" && f != "true" {
			return "", fmt.Errorf("%w: %q", ErrNotFound, key)
		}
		if err := ans.rc("get"); err != nil {
			// PMI-1 launchers say "not found" as a non-zero rc.
			var pe *Error
			if errors.As(err, &pe) {
				return "", fmt.Errorf("%w: %q (%v)", ErrNotFound, key, err)
			}
			return "", err
		}
		v, ok := ans.get("value")
		if !ok {
			return "", protoErr("get_result without value")
		}
		return v, nil
	}
	ans, err := cl.call(ctx, message{"kvs-get", []attr{{"jobid", cl.jobID}, {"srcid", "-1"}, {"key", key}}}, "kvs-get-response")
	if err != nil {
		return "", err
	}
	if err := ans.rc("kvs-get"); err != nil {
		return "", err
	}
	found, _ := ans.get("found")
	switch found {
	case "TRUE", "true":
	case "FALSE", "false":
		return "", fmt.Errorf("%w: %q", ErrNotFound, key)
	default:
		return "", protoErr("kvs-get-response with found=%q", found)
	}
	v, ok := ans.get("value")
	if !ok {
		return "", protoErr("kvs-get-response without value")
	}
	return v, nil
}

// Finalize tells the launcher this process is done with PMI and closes
// the connection (Done closes, Err is ErrClosed). Launchers wait for every
// rank's Finalize before they consider the job ended well.
func (cl *Client) Finalize(ctx context.Context) error {
	if cl.c == nil {
		return cl.Close()
	}
	var req message
	var want string
	if cl.version == 1 {
		req, want = message{"finalize", nil}, "finalize_ack"
	} else {
		req, want = message{"finalize", nil}, "finalize-response"
	}
	cl.c.ending.Store(true)
	ans, err := cl.call(ctx, req, want)
	cl.c.close()
	if err != nil {
		return err
	}
	return ans.rc("finalize")
}

// Abort asks the launcher to end the whole job with exit code code,
// naming reason; the launcher then kills every rank, this one included.
// It does not wait for that; the caller should exit when it returns. A job
// of one has no launcher: Abort only closes the Client. It may be called
// while another goroutine waits in a call.
func (cl *Client) Abort(ctx context.Context, code int, reason string) error {
	if cl.c == nil {
		return cl.Close()
	}
	msg := sanitize(reason)
	var m message
	if cl.version == 1 {
		m = message{"abort", []attr{{"exitcode", strconv.Itoa(code)}}}
		if msg != "" {
			m.attrs = append(m.attrs, attr{"message", msg})
		}
	} else {
		m = message{"abort", []attr{{"isworld", "TRUE"}, {"exitcode", strconv.Itoa(code)}}}
		if msg != "" {
			m.attrs = append(m.attrs, attr{"msg", msg})
		}
	}
	cl.logf("send", m)
	return cl.c.send(ctx, m)
}

// sanitize makes reason a token: printable bytes kept, the rest '_'.
func sanitize(reason string) string {
	b := []byte(reason)
	for i, c := range b {
		if !printable(c) {
			b[i] = '_'
		}
	}
	if len(b) > 256 {
		b = b[:256]
	}
	return string(b)
}

// Close ends the connection to the launcher without Finalize (the
// launcher may take that as a failed rank). It is idempotent.
func (cl *Client) Close() error {
	if cl.c == nil {
		cl.mu.Lock()
		if !cl.closed {
			cl.closed = true
			close(cl.done)
		}
		cl.mu.Unlock()
		return nil
	}
	cl.c.close()
	return nil
}

func (cl *Client) localDo(f func()) error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.closed {
		return ErrClosed
	}
	f()
	return nil
}

func (cl *Client) call(ctx context.Context, req message, want string) (message, error) {
	cl.logf("send", req)
	ans, err := cl.c.call(ctx, req, want)
	if err == nil {
		cl.logf("received", ans)
	}
	return ans, err
}

func (cl *Client) logf(what string, m message) {
	if cl.log != nil {
		cl.log.Debug("pmi "+what, "version", cl.version, "rank", cl.rank, "msg", m.String())
	}
}

// Watch returns a context derived from ctx that is also canceled, with
// Err() as its cause, when the connection to the launcher ends (Done):
// work bounded by it stops when the launcher goes away. Call the
// CancelFunc when done with it.
func (cl *Client) Watch(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	go func() {
		select {
		case <-cl.Done():
			cancel(cl.Err())
		case <-stop:
		case <-ctx.Done():
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() { close(stop) })
		cancel(context.Canceled)
	}
}
