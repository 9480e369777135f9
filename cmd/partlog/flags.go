package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/partlog/partlog/transport"
)

// usageError is a wrong command line: an unknown flag, a bad flag value, a
// missing argument. The dispatcher exits with exitUsage for it.
type usageError struct {
	command string
	err     error
}

func (e *usageError) Error() string { return e.command + ": " + e.err.Error() }

func (e *usageError) Unwrap() error { return e.err }

// usageErrorf returns a *usageError of command with a formatted message.
func usageErrorf(command, format string, args ...any) error {
	return &usageError{command: command, err: fmt.Errorf(format, args...)}
}

// newFlagSet returns a command's FlagSet. It prints nothing itself:
// parseFlags reports errors and help.
func newFlagSet(command string) *flag.FlagSet {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses a command's args with fs and returns its operands, the
// arguments that are not flags. Unlike fs.Parse it lets flags follow
// operands, as Kafka's tools do ("dump-log 0.log --print-data-log"); an
// argument "--" ends the flags.
//
// On -h or --help it writes help (the command's usage text, then its flags)
// to stdout and returns flag.ErrHelp. A bad flag is a *usageError.
func parseFlags(fs *flag.FlagSet, args []string, help string, stdout io.Writer) ([]string, error) {
	var operands []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			writeHelp(stdout, fs, help)
			return nil, flag.ErrHelp
		}
		if err != nil {
			return nil, &usageError{command: fs.Name(), err: err}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return operands, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(operands, rest...), nil
		}
		operands = append(operands, rest[0])
		args = rest[1:]
	}
}

// writeHelp writes a command's help text followed by its flags, each written
// with two dashes as Kafka's tools spell them.
func writeHelp(w io.Writer, fs *flag.FlagSet, help string) {
	fmt.Fprint(w, help)
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprint(w, "\nFlags:\n")
			first = false
		}
		arg, usage := flag.UnquoteUsage(f)
		if arg != "" {
			arg = " " + arg
		}
		fmt.Fprintf(w, "  --%s%s\n", f.Name, arg)
		fmt.Fprintf(w, "\t%s\n", strings.ReplaceAll(usage, "\n", "\n\t"))
	})
}

// listFlag is a flag holding a comma-separated list of values; repeating
// the flag adds to the list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// acksFlag is a flag holding Kafka's acks: "all" (or "-1"), "1" or "0".
type acksFlag transport.Acks

func (a *acksFlag) String() string {
	switch transport.Acks(*a) {
	case transport.AcksAll:
		return "all"
	case transport.AcksLeader:
		return "1"
	case transport.AcksNone:
		return "0"
	}
	return fmt.Sprint(int16(*a))
}

func (a *acksFlag) Set(s string) error {
	switch s {
	case "all", "-1":
		*a = acksFlag(transport.AcksAll)
	case "1":
		*a = acksFlag(transport.AcksLeader)
	case "0":
		*a = acksFlag(transport.AcksNone)
	default:
		return fmt.Errorf("acks %q is not all, -1, 1 or 0", s)
	}
	return nil
}

// isSet reports whether the command line set the flag name.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}
