// Command partlog manages and inspects a partlog node's data directory from
// the command line, as Kafka's bin/kafka-*.sh tools do for a broker.
//
// Usage:
//
//	partlog <command> [flags] [arguments]
//	partlog help [command]
//
// Commands:
//
//	topics         create, list, describe, alter and delete topics
//	configs        describe and alter topics' and nodes' configs
//	delete-records delete a partition's records below an offset
//	produce        produce a record per line of standard input
//	consume        print records on standard output
//	groups         list and describe consumer groups, reset their offsets
//	perf           measure producing and consuming speed
//	serve          answer Kafka protocol requests for a data directory on TCP
//	controller     run a cluster's controller on TCP for serve --controller nodes
//	dump-log       print the batches, records and index entries of segment files
//
// A command's flags may come before, after or between its arguments, and may
// be written with one dash or two (-print-data-log or --print-data-log); "--"
// ends them. "partlog help <command>" or "partlog <command> -h" describes a
// command and its flags; "partlog help perf produce" describes a
// subcommand.
//
// Output goes to standard output, progress and summaries of long runs to
// standard error. Errors go to standard error as "partlog: <message>". The
// exit status is 0 on success, 1 when a command fails, and 2 on a usage
// error: an unknown command or flag, or missing arguments.
//
// # Adding a command
//
// A command is a file of its own, <name>.go, holding a function with the
// signature of command.run. It parses its arguments with newFlagSet and
// parseFlags (flags.go), writes only to the writers it is given, reads
// standard input only through stdin, takes interrupts only through
// interruptContext, and returns an error rather than exiting, so that tests
// run it in-process. Add it to commands below.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // the command line is wrong
)

// A command is one "partlog <name>" subcommand.
type command struct {
	name    string
	summary string // one line for "partlog help", lower case, no period
	// run runs the command with the arguments after its name. It returns
	// a *usageError for a wrong command line, flag.ErrHelp after printing
	// its help to stdout, and any other error when it fails.
	run func(args []string, stdout, stderr io.Writer) error
}

// commands lists the commands in the order "partlog help" shows them.
var commands = []command{
	{"topics", "create, list, describe, alter and delete topics", runTopics},
	{"configs", "describe and alter topics' and nodes' configs", runConfigs},
	{"acls", "add, remove and list the ACLs a node with --acls checks", runAcls},
	{"delete-records", "delete a partition's records below an offset", runDeleteRecords},
	{"reassign-partitions", "move partitions' replicas to other nodes", runReassign},
	{"cluster", "a cluster's membership: unregister a node", runCluster},
	{"produce", "produce a record per line of standard input", runProduce},
	{"consume", "print records on standard output", runConsume},
	{"groups", "list and describe consumer groups, reset their offsets", runGroups},
	{"share-groups", "list, describe and delete share groups, reset their start offsets", runShareGroups},
	{"transactions", "list and describe transactions", runTransactions},
	{"perf", "measure producing and consuming speed", runPerf},
	{"serve", "answer Kafka protocol requests for a data directory on TCP", runServe},
	{"controller", "run a cluster's controller on TCP for serve --controller nodes", runController},
	{"dump-log", "print the batches, records and index entries of segment files", runDumpLog},
}

// stdin is the standard input of commands; tests replace it.
var stdin io.Reader = os.Stdin

// interruptContext returns a context that ends when the process is told to
// stop (SIGINT, SIGTERM), for commands that run until then and must close
// the data directory cleanly. Its stop function releases the signals. Tests
// replace it.
var interruptContext = func(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args (without the program name) and returns the
// exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		writeUsage(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		return help(rest, stdout, stderr)
	}
	cmd, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "partlog: unknown command %q\n\n", name)
		writeUsage(stderr)
		return exitUsage
	}
	return report(cmd.run(rest, stdout, stderr), stderr)
}

// help runs "partlog help [command [subcommand]]".
func help(args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		writeUsage(stdout)
		return exitOK
	case 1, 2:
		cmd, ok := lookup(args[0])
		if !ok {
			fmt.Fprintf(stderr, "partlog: help: unknown command %q\n\n", args[0])
			writeUsage(stderr)
			return exitUsage
		}
		// A subcommand, as in "help perf produce", comes before the -h.
		return report(cmd.run(append(args[1:], "-h"), stdout, stderr), stderr)
	}
	fmt.Fprintln(stderr, "partlog: help takes a command and at most one subcommand")
	return exitUsage
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// report prints a command's error to stderr and returns the exit status.
// Each line of a multi-line error (errors.Join) gets its own prefix.
func report(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(stderr, "partlog: %s\n", line)
	}
	if ue, ok := errors.AsType[*usageError](err); ok {
		fmt.Fprintf(stderr, "Run 'partlog help %s' for usage.\n", ue.command)
		return exitUsage
	}
	return exitFailure
}

func writeUsage(w io.Writer) {
	fmt.Fprint(w, `partlog manages and inspects partlog data directories.

Usage:

	partlog <command> [flags] [arguments]

Commands:

`)
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(w, "\t%-*s %s\n", width, c.name, c.summary)
	}
	fmt.Fprint(w, `
Run 'partlog help <command>' for more about a command.
`)
}
