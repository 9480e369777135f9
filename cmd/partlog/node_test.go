package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
)

// newTopic returns a new data directory holding topic "t" with the given
// partitions and configs (key=value), created through the CLI.
func newTopic(t *testing.T, partitions int, configs ...string) string {
	t.Helper()
	dir := t.TempDir()
	args := []string{"topics", "create", "--dir", dir, "--topic", "t", "--partitions", strconv.Itoa(partitions)}
	for _, c := range configs {
		args = append(args, "--config", c)
	}
	_, stderr, code := cli(t, args...)
	require.Equal(t, exitOK, code, stderr)
	return dir
}

// cliIn runs partlog in-process as cli does, with input as its standard
// input.
func cliIn(t *testing.T, input string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	old := stdin
	stdin = strings.NewReader(input)
	defer func() { stdin = old }()
	return cli(t, args...)
}

// interruptible makes commands take their interrupts from the returned
// function rather than from signals, until the test ends.
func interruptible(t *testing.T) (interrupt func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	old := interruptContext
	interruptContext = func(parent context.Context) (context.Context, context.CancelFunc) {
		c, stop := context.WithCancel(parent)
		go func() {
			select {
			case <-ctx.Done():
				stop()
			case <-c.Done():
			}
		}()
		return c, stop
	}
	t.Cleanup(func() {
		interruptContext = old
		cancel()
	})
	return cancel
}

// topicEnds returns the log end offsets of topic t's partitions in dir.
func topicEnds(t *testing.T, dir string) []int64 {
	t.Helper()
	n, err := partlog.Open(dir)
	require.NoError(t, err)
	defer n.Close()
	descs, err := n.DescribeTopics("t")
	require.NoError(t, err)
	var ends []int64
	for _, p := range descs[0].Partitions {
		ends = append(ends, p.LogEndOffset)
	}
	return ends
}

func TestDirectoryInUse(t *testing.T) {
	dir := newTopic(t, 1)
	n, err := partlog.Open(dir)
	require.NoError(t, err)
	defer n.Close()
	for _, args := range [][]string{
		{"produce", "--topic", "t"},
		{"consume", "--topic", "t", "--timeout", "10ms"},
		{"perf", "produce", "--topic", "t", "--num-records", "1", "--record-size", "1"},
		{"perf", "consume", "--topic", "t", "--messages", "1"},
		{"topics", "list"},
	} {
		command := args[0]
		if command == "perf" {
			command += " " + args[1]
		}
		stdout, stderr, code := cliIn(t, "a\n", append(args, "--dir", dir)...)
		require.Equal(t, exitFailure, code, args)
		require.Empty(t, stdout, args)
		want := "partlog: " + command + ": data directory " + dir + " is in use by another partlog (a running node or command); stop it first: "
		require.True(t, strings.HasPrefix(stderr, want), "%v: %s", args, stderr)
		require.Len(t, lines(stderr), 1, args)
	}
}

func TestUnknownTopic(t *testing.T) {
	dir := newTopic(t, 1)
	for _, args := range [][]string{
		{"produce", "--topic", "nope"},
		{"consume", "--topic", "nope", "--timeout", "10ms"},
		{"perf", "consume", "--topic", "nope", "--messages", "1"},
	} {
		command := args[0]
		if command == "perf" {
			command += " " + args[1]
		}
		stdout, stderr, code := cliIn(t, "a\n", append(args, "--dir", dir)...)
		require.Equal(t, exitFailure, code, args)
		require.Empty(t, stdout, args)
		require.Equal(t, "partlog: "+command+": topic \"nope\" does not exist in "+dir+"; create it with 'partlog topics create'\n", stderr, args)
	}
	_, stdout, _ := cli(t, "topics", "list", "--dir", dir)
	require.NotContains(t, stdout, "nope") // nothing auto-created
}

func TestNoSuchPartition(t *testing.T) {
	dir := newTopic(t, 3)
	for _, args := range [][]string{
		{"produce", "--partition", "3"},
		{"consume", "--partition", "3", "--timeout", "10ms"},
	} {
		stdout, stderr, code := cliIn(t, "a\n", append(args, "--dir", dir, "--topic", "t")...)
		require.Equal(t, exitFailure, code, args)
		require.Empty(t, stdout, args)
		require.Equal(t, "partlog: "+args[0]+": topic t has no partition 3: it has 3 (0 to 2)\n", stderr, args)
	}
	require.Equal(t, []int64{0, 0, 0}, topicEnds(t, dir))
}

// TestTopicsCreateBadCounts: --partitions 0 used to create one partition
// silently, and --partitions 2147483648 wrapped to a negative count; both
// are INVALID_PARTITIONS, and nothing is created. Over --bootstrap-server,
// a Kafka client's zero is refused the same way by the node.
func TestTopicsCreateBadCounts(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ flag, value, code string }{
		{"--partitions", "0", "INVALID_PARTITIONS"},
		{"--partitions", "-1", "INVALID_PARTITIONS"},
		{"--partitions", "2147483648", "INVALID_PARTITIONS"},
		{"--replication-factor", "0", "INVALID_REPLICATION_FACTOR"},
		{"--replication-factor", "32768", "INVALID_REPLICATION_FACTOR"},
	} {
		_, stderr, code := cli(t, "topics", "create", "--dir", dir, "--topic", "t", c.flag, c.value)
		require.Equal(t, exitFailure, code, "%s %s", c.flag, c.value)
		require.Contains(t, stderr, c.code, "%s %s", c.flag, c.value)
	}
	stdout, _, code := cli(t, "topics", "list", "--dir", dir)
	require.Equal(t, exitOK, code)
	require.Empty(t, stdout, "no topic was created")
}

// TestDirCommandsShowWarnings: what a node finds wrong as a --dir command
// opens the directory reaches the user: an empty segment file dropped in
// past the log's end moves its end offset, and the command says which
// offsets no segment holds.
func TestDirCommandsShowWarnings(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := cli(t, "topics", "create", "--dir", dir, "--topic", "t")
	require.Equal(t, exitOK, code, stderr)
	_, stderr, code = cliIn(t, "a\nb\n", "produce", "--dir", dir, "--topic", "t")
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stderr, "nothing to warn of")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "t-0", "00000000000000005000.log"), nil, 0o644))
	_, stderr, code = cli(t, "topics", "describe", "--dir", dir, "--topic", "t")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "partlog: topics: level=WARN")
	require.Contains(t, stderr, "offsets missing between segments")
	require.Contains(t, stderr, "from=2 to=5000")
}
