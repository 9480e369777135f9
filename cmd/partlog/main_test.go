package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cli runs partlog in-process with args and returns what it printed and its
// exit status.
func cli(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// lines splits output into lines, without the final newline.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func TestHelpListsCommands(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		stdout, stderr, code := cli(t, args...)
		require.Equal(t, exitOK, code, args)
		require.Empty(t, stderr)
		require.Contains(t, stdout, "Usage:\n\n\tpartlog <command> [flags] [arguments]\n")
		require.Contains(t, stdout, "\n\ttopics              create, list, describe, alter and delete topics\n"+
			"\tconfigs             describe and alter topics' and nodes' configs\n"+
			"\tacls                add, remove and list the ACLs a node with --acls checks\n"+
			"\tdelete-records      delete a partition's records below an offset\n"+
			"\treassign-partitions move partitions' replicas to other nodes\n"+
			"\tcluster             a cluster's membership: unregister a node\n"+
			"\tproduce             produce a record per line of standard input\n"+
			"\tconsume             print records on standard output\n"+
			"\tgroups              list and describe consumer groups, reset their offsets\n"+
			"\tshare-groups        list, describe and delete share groups, reset their start offsets\n"+
			"\ttransactions        list and describe transactions\n"+
			"\tperf                measure producing and consuming speed\n"+
			"\tserve               answer Kafka protocol requests for a data directory on TCP\n"+
			"\tcontroller          run a cluster's controller on TCP for serve --controller nodes\n"+
			"\tdump-log            print the batches, records and index entries of segment files\n")
	}
}

func TestHelpSubcommand(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		usage string
		flags []string
	}{
		{[]string{"help", "produce"}, "Usage: partlog produce --dir DIR --topic TOPIC [flags] < FILE\n",
			[]string{"--dir directory", "--topic topic", "--partition partition", "--key-separator separator", "--acks acks", "--property key=value"}},
		{[]string{"help", "consume"}, "Usage: partlog consume --dir DIR --topic TOPIC [flags]\n",
			[]string{"--from-beginning", "--partition partition", "--offset offset", "--max-messages N", "--timeout duration",
				"--print-timestamp", "--print-partition", "--print-offset", "--print-headers", "--print-key", "--key-separator separator",
				"--property key=value", "--consumer-property key=value", "--formatter formatter"}},
		{[]string{"help", "topics"}, "Usage: partlog topics <create|list|describe|alter|delete> --dir DIR [flags]\n",
			[]string{"--alter", "--partitions partitions", "--config key=value", "--delete-config key"}},
		{[]string{"help", "configs"}, "Usage: partlog configs <describe|alter> --dir DIR --entity-type topics|brokers|groups|users [--entity-name NAME] [flags]\n",
			[]string{"--describe", "--alter", "--entity-type type", "--entity-name name", "--topic name", "--broker id", "--all",
				"--add-config k1=v1,k2=[v2,v3]", "--add-config-file file", "--delete-config k1,k2", "--bootstrap-server host:port"}},
		{[]string{"delete-records", "-h"}, "Usage: partlog delete-records --dir DIR --offset-json-file FILE\n",
			[]string{"--offset-json-file file", "--topic topic", "--partition partition", "--offset offset", "--dir directory"}},
		{[]string{"help", "perf"}, "Usage: partlog perf <produce|consume> --dir DIR --topic TOPIC [flags]\n", nil},
		{[]string{"perf", "--help"}, "Usage: partlog perf <produce|consume> --dir DIR --topic TOPIC [flags]\n", nil},
		{[]string{"help", "perf", "produce"}, "Usage: partlog perf produce --dir DIR --topic TOPIC --num-records N --record-size S [flags]\n",
			[]string{"--num-records records", "--record-size bytes", "--acks acks", "--batch-size bytes", "--linger duration",
				"--buffer-memory bytes", "--throughput records", "--partitions partitions", "--config key=value",
				"--producer-props key=value", "--payload-file file", "--payload-delimiter delimiter"}},
		{[]string{"perf", "consume", "-h"}, "Usage: partlog perf consume --dir DIR --topic TOPIC --messages N [flags]\n",
			[]string{"--messages records", "--fetch-size bytes", "--fetch-max-bytes bytes", "--timeout duration", "--from-latest"}},
	} {
		stdout, stderr, code := cli(t, tc.args...)
		require.Equal(t, exitOK, code, tc.args)
		require.Empty(t, stderr, tc.args)
		require.True(t, strings.HasPrefix(stdout, tc.usage), stdout)
		for _, flag := range tc.flags {
			require.Contains(t, stdout, "\n  "+flag+"\n", tc.args)
		}
	}
	_, stderr, code := cli(t, "help", "perf", "produce", "more")
	require.Equal(t, exitUsage, code)
	require.Equal(t, "partlog: help takes a command and at most one subcommand\n", stderr)
}

func TestHelpCommand(t *testing.T) {
	for _, args := range [][]string{{"help", "dump-log"}, {"dump-log", "-h"}, {"dump-log", "--help"}, {"dump-log", "x.log", "--help"}} {
		stdout, stderr, code := cli(t, args...)
		require.Equal(t, exitOK, code, args)
		require.Empty(t, stderr)
		require.True(t, strings.HasPrefix(stdout, "Usage: partlog dump-log [flags] FILE...\n"), stdout)
		for _, flag := range []string{"--files list", "--print-data-log", "--deep-iteration", "--verify-index-only", "--offsets-decoder"} {
			require.Contains(t, stdout, "\n  "+flag+"\n", args)
		}
	}
}

func TestNoCommand(t *testing.T) {
	stdout, stderr, code := cli(t)
	require.Equal(t, exitUsage, code)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "dump-log")
}

func TestUnknownCommand(t *testing.T) {
	stdout, stderr, code := cli(t, "dump-logs", "x.log")
	require.Equal(t, exitUsage, code)
	require.Empty(t, stdout)
	require.True(t, strings.HasPrefix(stderr, "partlog: unknown command \"dump-logs\"\n"), stderr)
	require.Contains(t, stderr, "Commands:")

	stdout, stderr, code = cli(t, "help", "nope")
	require.Equal(t, exitUsage, code)
	require.Empty(t, stdout)
	require.True(t, strings.HasPrefix(stderr, "partlog: help: unknown command \"nope\"\n"), stderr)
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dump-log", "--no-such-flag", "x.log"}, "partlog: dump-log: flag provided but not defined: --no-such-flag"},
		{[]string{"dump-log", "--print-data-log=maybe", "x.log"}, `partlog: dump-log: invalid boolean value "maybe" for --print-data-log: parse error`},
		{[]string{"dump-log"}, "partlog: dump-log: no files to dump"},
		{[]string{"dump-log", "--print-data-log"}, "partlog: dump-log: no files to dump"},
	} {
		stdout, stderr, code := cli(t, tc.args...)
		require.Equal(t, exitUsage, code, tc.args)
		require.Empty(t, stdout, tc.args)
		require.Equal(t, []string{tc.want, "Run 'partlog help dump-log' for usage."}, lines(stderr), tc.args)
	}
}

func TestParseFlagsInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		operands []string
		verbose  bool
	}{
		{[]string{"a", "b"}, []string{"a", "b"}, false},
		{[]string{"-v", "a", "b"}, []string{"a", "b"}, true},
		{[]string{"a", "--v", "b"}, []string{"a", "b"}, true},
		{[]string{"a", "b", "-v"}, []string{"a", "b"}, true},
		{[]string{"a", "--", "-v", "b"}, []string{"a", "-v", "b"}, false},
		{[]string{"--", "-v"}, []string{"-v"}, false},
		{[]string{"-", "-v"}, []string{"-"}, true},
		{nil, nil, false},
	} {
		fs := newFlagSet("test")
		verbose := fs.Bool("v", false, "")
		operands, err := parseFlags(fs, tc.args, "", nil)
		require.NoError(t, err, tc.args)
		require.Equal(t, tc.operands, operands, tc.args)
		require.Equal(t, tc.verbose, *verbose, tc.args)
	}
}

func TestListFlag(t *testing.T) {
	fs := newFlagSet("test")
	var l listFlag
	fs.Var(&l, "files", "")
	operands, err := parseFlags(fs, []string{"--files", "a.log, b.index,", "c", "--files=d.timeindex"}, "", nil)
	require.NoError(t, err)
	require.Equal(t, listFlag{"a.log", "b.index", "d.timeindex"}, l)
	require.Equal(t, []string{"c"}, operands)
}

// TestDurationFlags: a duration flag takes milliseconds, as Kafka's tools
// do, or a Go duration, and its help says so.
func TestDurationFlags(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"500", 500 * time.Millisecond},
		{"0", 0},
		{"-1", -time.Millisecond},
		{"500ms", 500 * time.Millisecond},
		{"2s", 2 * time.Second},
		{"1m30s", 90 * time.Second},
	} {
		var d durationFlag
		require.NoError(t, d.Set(tc.in), tc.in)
		require.Equal(t, tc.want, time.Duration(d), tc.in)
	}
	var d durationFlag
	require.EqualError(t, d.Set("5x"), "not a number of milliseconds (as 500) or a duration (as 500ms, 2s)")
	require.EqualError(t, d.Set("9223372036854775807"), "9223372036854775807 milliseconds is out of range")

	for _, tc := range []struct{ args, flags []string }{
		{[]string{"consume"}, []string{"timeout"}},
		{[]string{"perf", "produce"}, []string{"linger"}},
		{[]string{"perf", "consume"}, []string{"timeout"}},
		{[]string{"serve"}, []string{"heartbeat", "replica-lag-max", "group-initial-rebalance-delay"}},
		{[]string{"controller"}, []string{"session-timeout", "tick", "leader-imbalance-check"}},
	} {
		stdout, _, code := cli(t, append([]string{"help"}, tc.args...)...)
		require.Equal(t, exitOK, code, tc.args)
		for _, f := range tc.flags {
			require.Regexp(t, `\n  --`+f+` duration\n\t[^\n]*; milliseconds \(as 500\) or a duration \(as 500ms, 2s, 1m30s\)\n`, stdout, f)
		}
	}
}
