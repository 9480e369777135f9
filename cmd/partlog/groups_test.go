package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fields splits each line of s into its blank-separated fields.
func fields(s string) [][]string {
	var out [][]string
	for _, l := range lines(s) {
		out = append(out, strings.Fields(l))
	}
	return out
}

// TestGroupsConsumeDescribeReset: consume --group commits what it printed
// and the next run goes on from there; groups list, describe and
// reset-offsets see and move the committed offsets, as
// kafka-consumer-groups.sh does.
func TestGroupsConsumeDescribeReset(t *testing.T) {
	dir := newTopic(t, 1)
	produceLines(t, dir, "a\nb\nc\nd\ne\n")
	consume := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := cli(t, append([]string{"consume", "--dir", dir, "--topic", "t", "--group", "g", "--from-beginning", "--timeout", "300ms"}, args...)...)
		require.Equal(t, exitOK, code, stderr)
		return stdout
	}
	require.Equal(t, "a\nb\nc\n", consume("--max-messages", "3"))
	require.Equal(t, "d\ne\n", consume(), "the group goes on from its committed offset")
	require.Equal(t, "", consume())

	stdout, stderr, code := cli(t, "groups", "list", "--dir", dir)
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "g\n", stdout)

	describe := func() [][]string {
		t.Helper()
		stdout, stderr, code := cli(t, "groups", "describe", "--dir", dir, "--group", "g")
		require.Equal(t, exitOK, code, stderr)
		require.True(t, strings.HasPrefix(stdout, "Consumer group 'g' has no active members.\n\n"), stdout)
		return fields(stdout)[2:]
	}
	require.Equal(t, [][]string{
		{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"},
		{"g", "t", "0", "5", "5", "0", "-", "-", "-"},
	}, describe())

	// A dry run prints the plan and changes nothing.
	stdout, stderr, code = cli(t, "groups", "reset-offsets", "--dir", dir, "--group", "g", "--topic", "t", "--to-earliest")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "--execute option is missing")
	require.Equal(t, [][]string{{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"}, {"g", "t", "0", "0"}}, fields(stdout))
	require.Equal(t, []string{"g", "t", "0", "5", "5", "0", "-", "-", "-"}, describe()[1])

	stdout, stderr, code = cli(t, "groups", "reset-offsets", "--dir", dir, "--group", "g", "--topic", "t", "--to-offset", "2", "--execute")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, []string{"g", "t", "0", "2"}, fields(stdout)[1])
	require.Equal(t, []string{"g", "t", "0", "2", "5", "3", "-", "-", "-"}, describe()[1])
	require.Equal(t, "c\nd\ne\n", consume())

	stdout, stderr, code = cli(t, "groups", "reset-offsets", "--dir", dir, "--group", "g", "--topic", "t", "--to-offset", "99", "--execute")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, []string{"g", "t", "0", "5"}, fields(stdout)[1], "an offset past the end is the end")

	stdout, stderr, code = cli(t, "groups", "describe", "--dir", dir, "--group", "g", "--state")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, []string{"g", "localhost", "(1)", "-", "Empty", "0"}, fields(stdout)[1])

	_, stderr, code = cli(t, "groups", "describe", "--dir", dir, "--group", "nobody")
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "GROUP_ID_NOT_FOUND")

	stdout, stderr, code = cli(t, "groups", "delete", "--dir", dir, "--group", "g")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Deletion of requested consumer groups ('g') was successful.\n", stdout)
	stdout, stderr, code = cli(t, "groups", "list", "--dir", dir)
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stdout, "the group stays deleted after a restart")
	require.Equal(t, "a\nb\nc\nd\ne\n", consume(), "a deleted group starts over")
}

func TestGroupsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"groups"},
		{"groups", "frobnicate", "--dir", "x"},
		{"groups", "describe", "--dir", "x"},
		{"groups", "delete", "--dir", "x"},
		{"groups", "reset-offsets", "--dir", "x", "--group", "g", "--topic", "t"},
		{"groups", "reset-offsets", "--dir", "x", "--group", "g", "--topic", "t", "--to-earliest", "--to-latest"},
		{"groups", "reset-offsets", "--dir", "x", "--group", "g", "--topic", "t", "--to-earliest", "--dry-run", "--execute"},
	} {
		_, _, code := cli(t, args...)
		require.Equal(t, exitUsage, code, "%v", args)
	}
}
