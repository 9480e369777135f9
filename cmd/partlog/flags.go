package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/partlog/partlog/kafka"
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
			return nil, &usageError{command: fs.Name(), err: dashDash(err)}
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
type acksFlag kafka.Acks

func (a *acksFlag) String() string {
	switch kafka.Acks(*a) {
	case kafka.AcksAll:
		return "all"
	case kafka.AcksLeader:
		return "1"
	case kafka.AcksNone:
		return "0"
	}
	return fmt.Sprint(int16(*a))
}

func (a *acksFlag) Set(s string) error {
	switch s {
	case "all", "-1":
		*a = acksFlag(kafka.AcksAll)
	case "1":
		*a = acksFlag(kafka.AcksLeader)
	case "0":
		*a = acksFlag(kafka.AcksNone)
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

// flagPhrases are the phrases of the flag package's errors that a flag's
// name follows, written with one dash ("for flag -timeout").
var flagPhrases = []string{
	"flag provided but not defined: -",
	"flag needs an argument: -",
	"for flag -", // invalid value "x" for flag -name: ...
	"for -",      // invalid boolean value "x" for -name: ...
}

// dashDash rewrites an error of the flag package so that it names the flag
// with two dashes, as the commands' help and Kafka's tools spell flags:
// "invalid value "x" for --timeout: ..." rather than "... for flag -timeout".
func dashDash(err error) error {
	msg := err.Error()
	for _, phrase := range flagPhrases {
		// The last occurrence: a value quoted before it may hold the phrase.
		if i := strings.LastIndex(msg, phrase); i >= 0 {
			name := strings.TrimLeft(msg[i+len(phrase):], "-")
			prefix := strings.TrimSuffix(msg[:i]+phrase, "-")
			prefix = strings.TrimSuffix(prefix, "flag ")
			return errors.New(prefix + "--" + name)
		}
	}
	return err
}

// durationFlag is a flag holding a duration, written as Kafka's tools take
// one, a number of milliseconds ("500"), or as a Go duration ("500ms",
// "2s", "1m30s").
type durationFlag time.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }

func (d *durationFlag) Set(s string) error {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms > math.MaxInt64/int64(time.Millisecond) || ms < math.MinInt64/int64(time.Millisecond) {
			return fmt.Errorf("%d milliseconds is out of range", ms)
		}
		*d = durationFlag(time.Duration(ms) * time.Millisecond)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a number of milliseconds (as 500) or a duration (as 500ms, 2s)")
	}
	*d = durationFlag(v)
	return nil
}

// durationUsage ends the help of every duration flag.
const durationUsage = "; milliseconds (as 500) or a duration (as 500ms, 2s, 1m30s)"

// durationVar adds a duration flag, with value as its default, to fs.
// usage names the argument `duration`; the help adds what it accepts.
func durationVar(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	d := value
	fs.Var((*durationFlag)(&d), name, usage+durationUsage)
	return &d
}

// stringsFlag is a flag that may be repeated, each time adding a value.
// Unlike listFlag it does not split values at commas.
type stringsFlag []string

func (s *stringsFlag) String() string { return strings.Join(*s, " ") }

func (s *stringsFlag) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// actionFlags are a command's actions given as Kafka's tools take them,
// as flags (topics --describe), besides partlog's first operand (topics
// describe).
type actionFlags struct {
	command string
	names   []string
	set     []*bool
}

// addActionFlags adds a flag --a for each action a to fs.
func addActionFlags(fs *flag.FlagSet, command string, actions ...string) actionFlags {
	af := actionFlags{command: command, names: actions}
	for _, a := range actions {
		af.set = append(af.set, fs.Bool(a, false, fmt.Sprintf("the %s action, as Kafka's tools take it: the same as '%s %s'", a, command, a)))
	}
	return af
}

// only returns the action that the command line names, refusing any
// operand after it.
func (af actionFlags) only(operands []string) (string, error) {
	action, rest, err := af.action(operands)
	if err != nil {
		return "", err
	}
	if len(rest) > 0 {
		return "", usageErrorf(af.command, "unexpected argument %q", rest[0])
	}
	return action, nil
}

// action returns the action that the command line names, by its first
// operand or by a flag, and the operands after the action.
func (af actionFlags) action(operands []string) (string, []string, error) {
	var flagged []string
	for i, set := range af.set {
		if *set {
			flagged = append(flagged, af.names[i])
		}
	}
	dashed := make([]string, len(af.names))
	for i, a := range af.names {
		dashed[i] = "--" + a
	}
	say := fmt.Sprintf("say one of %s (or %s)", strings.Join(af.names, ", "), strings.Join(dashed, ", "))
	if len(flagged) > 1 {
		return "", nil, usageErrorf(af.command, "--%s and --%s cannot both be given; %s", flagged[0], flagged[1], say)
	}
	switch {
	case len(operands) == 0 && len(flagged) == 0:
		return "", nil, usageErrorf(af.command, "%s", say)
	case len(operands) == 0:
		return flagged[0], nil, nil
	case len(flagged) == 1 && operands[0] == flagged[0]:
		return flagged[0], operands[1:], nil
	case len(flagged) == 1:
		return flagged[0], operands, nil
	}
	for _, a := range af.names {
		if operands[0] == a {
			return a, operands[1:], nil
		}
	}
	return "", nil, usageErrorf(af.command, "unknown action %q; %s", operands[0], say)
}
