// Command nd is the Network Direct test tool: the ND SDK's test programs
// (ndadapterinfo, ndpingpong, ...) as subcommands of one binary, running over
// any provider registered with package nd.
//
// Usage:
//
//	nd info [-provider NAME] [ADDRESS]
//	nd ping [-provider NAME] [-crc] [-s | -c] [-p PORT] [-b] [-n SGES] [-q DEPTH]
//	        [-max BYTES] [-iters N] [ADDRESS[:PORT]]
//	nd pingpong [-provider NAME] [-crc] [-s | -c] [-p PORT] [-b] [-n SGES] [-q DEPTH]
//	            [-max BYTES] [-D SECONDS | -iters N] [-spin DURATION] [-in-process] [ADDRESS[:PORT]]
//	nd rdmaping [-provider NAME] [-crc] [-s | -c] [-p PORT] [-w | -r] [-b] [-n SGES]
//	            [-q DEPTH] [-max BYTES] [-iters N] [ADDRESS[:PORT]]
//	nd rdmapingpong [-provider NAME] [-crc] [-s | -c] [-p PORT] [-b] [-n SGES]
//	            [-max BYTES] [-iters N] [ADDRESS[:PORT]]
//	nd rping (-s | -c) [-v] [-V] [-S SIZE] [-C COUNT] [-a ADDR] [-p PORT] [-provider NAME] [-crc]
//	nd perf TEST [-s SIZE | -a] [-n ITERS | -D SEC] [-q QPS] [-t DEPTH] [-b] [--json]
//	        [--plot FILE.png] [--server | ADDRESS[:PORT]]
//	nd verify (-s | -c) [-provider NAME] [-crc] [-p PORT] [-sizes LIST] [-n N] [-depth D]
//	          [-ops send,write,read | -ops idle] [-D DURATION] [-conns N] [-fail-ok]
//	          [-reconnect DURATION] [-retry DURATION] [ADDRESS[:PORT]]
//	nd provider install [-dll PATH] [-transport tcp,shm] | uninstall | list
//	nd help [COMMAND]
//
// Run "nd help COMMAND" or "nd COMMAND -h" for the flags of one command.
// Without -s or -c, "nd pingpong" starts its server in a child process (this
// program again) and runs the client against it over the provider's
// loopback addresses, which is the quickest way to see the library work.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/godirect/nd/cmd/nd/internal/cli"
	"github.com/godirect/nd/cmd/nd/internal/ndtools"
	"github.com/godirect/nd/cmd/nd/internal/perftest"
	"github.com/godirect/nd/cmd/nd/internal/provider"
	"github.com/godirect/nd/cmd/nd/internal/rping"
	"github.com/godirect/nd/cmd/nd/internal/session"
	"github.com/godirect/nd/cmd/nd/internal/verify"
)

// command is one subcommand of nd.
type command struct {
	name    string
	summary string
	// flags returns the command's FlagSet and the function that runs the
	// command once the FlagSet parsed the arguments. The FlagSet's Usage
	// prints the command's full help to the FlagSet's output.
	flags func(stdout, stderr io.Writer) (*flag.FlagSet, cli.RunFunc)
}

// commands lists the subcommands in the order "nd help" shows them.
var commands = []command{
	{"info", "print the provider's addresses and an adapter's limits (ndadapterinfo)", ndtools.InfoFlags},
	{"ping", "one-way Send/Receive message rate with credits (ndping)", ndtools.PingFlags},
	{"pingpong", "Send/Receive round-trip latency and bandwidth (ndpingpong)", ndtools.PingpongFlags},
	{"rdmaping", "one-sided RDMA Write or Read throughput (ndrping)", ndtools.RdmapingFlags},
	{"rdmapingpong", "RDMA Write ping-pong, polling the last byte (ndrpingpong)", ndtools.RdmapingpongFlags},
	{"rping", "rdma-core's rping: RDMA Read/Write ping, wire-compatible with rping over siw", rping.Flags},
	{"perf", "perftest's send/write/read _bw and _lat tests, with its columns, --json and --plot", perftest.Flags},
	{"verify", "Send/Receive, RDMA Write and Read traffic with every byte and every completion checked", verify.Flags},
	{"provider", "install, uninstall or list godirect's ND provider DLL in the Winsock catalog (Windows)", provider.Flags},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs nd with args (without the program name), writing results to
// stdout and diagnostics to stderr, and returns the exit status: 0 on
// success, 1 when the command failed, 2 for a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name, args := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) == 0 {
			usage(stdout)
			return 0
		}
		cmd := lookup(args[0])
		if cmd == nil {
			fmt.Fprintf(stderr, "nd help: unknown command %q\n", args[0])
			usage(stderr)
			return 2
		}
		fs, _, _ := cmd.flagSet(stdout, stderr)
		fs.SetOutput(stdout)
		fs.Usage()
		return 0
	}
	cmd := lookup(name)
	if cmd == nil {
		fmt.Fprintf(stderr, "nd: unknown command %q\n", name)
		usage(stderr)
		return 2
	}

	fs, runCmd, timeout := cmd.flagSet(stdout, stderr)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		return 2 // the FlagSet already printed the error and the usage
	}

	interrupted, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(interrupted, *timeout)
	defer cancel()
	err := runCmd(ctx, fs.Args())
	var ue cli.UsageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "nd %s: %v\n", name, err)
		fs.Usage()
		return 2
	case interrupted.Err() != nil:
		fmt.Fprintf(stderr, "nd %s: interrupted: %v\n", name, err)
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "nd %s: timed out after %v (see -timeout): %v\n", name, *timeout, err)
	default:
		fmt.Fprintf(stderr, "nd %s: %v\n", name, err)
	}
	return 1
}

// flagSet returns the command's FlagSet with the flags every command has
// (-timeout), the function that runs it, and the timeout's value.
func (c *command) flagSet(stdout, stderr io.Writer) (*flag.FlagSet, cli.RunFunc, *time.Duration) {
	fs, runCmd := c.flags(stdout, stderr)
	timeout := fs.Duration("timeout", 5*time.Minute,
		"give up with an error when the command has not finished after this `duration`")
	return fs, runCmd, timeout
}

// lookup returns the command called name, or nil.
func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// usage prints the list of commands.
func usage(w io.Writer) {
	fmt.Fprintln(w, "nd is the Network Direct test tool.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage:")
	fmt.Fprintln(w, "  nd <command> [flags] [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-13s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "nd help <command>" or "nd <command> -h" for the flags of a command.`)
	fmt.Fprintf(w, "Providers: %s\n", session.ProviderList())
}
