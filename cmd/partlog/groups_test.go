package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/transport"
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

// groupsFixture returns a data directory with topics t (2 partitions: 5
// and 3 records) and u (1 partition, 2 records), record i of a partition
// stamped ts0+i seconds, and groups a (committed t-0 at 4, t-1 at 1) and b
// (committed u-0 at 2).
func groupsFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	n, err := partlog.Open(dir)
	require.NoError(t, err)
	defer n.Close()
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: 2}))
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "u", Partitions: 1}))
	p, err := producer.New(n.Client())
	require.NoError(t, err)
	var recs []*producer.Record
	for _, tc := range []struct {
		topic     string
		partition int32
		count     int
	}{{"t", 0, 5}, {"t", 1, 3}, {"u", 0, 2}} {
		for i := range tc.count {
			r := &producer.Record{Topic: tc.topic, Value: []byte("v"), Timestamp: time.UnixMilli(ts0 + int64(i)*1000)}
			r.SetPartition(tc.partition)
			recs = append(recs, r)
		}
	}
	require.NoError(t, p.ProduceSync(ctx, recs...).FirstErr())
	require.NoError(t, p.Close())
	commit := func(group, topic string, offsets map[int32]int64) {
		req := &transport.OffsetCommitRequest{Group: group, GenerationID: transport.NoGeneration, Topics: []transport.OffsetCommitTopic{{Topic: topic}}}
		for _, p := range []int32{0, 1} {
			if o, ok := offsets[p]; ok {
				req.Topics[0].Partitions = append(req.Topics[0].Partitions, transport.OffsetCommitPartition{Partition: p, Offset: o, LeaderEpoch: -1})
			}
		}
		resp, err := n.Client().OffsetCommit(ctx, req)
		require.NoError(t, err)
		for _, p := range resp.Topics[0].Partitions {
			require.NoError(t, p.Err)
		}
	}
	commit("a", "t", map[int32]int64{0: 4, 1: 1})
	commit("b", "u", map[int32]int64{0: 2})
	return dir
}

// TestGroupsAllGroups: describe, reset-offsets and delete of every group,
// as kafka-consumer-groups.sh --all-groups, with the action flags.
func TestGroupsAllGroups(t *testing.T) {
	dir := groupsFixture(t)
	groups := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := cli(t, append([]string{"groups", "--dir", dir}, args...)...)
		require.Equal(t, exitOK, code, "%v: %s", args, stderr)
		return stdout
	}
	require.Equal(t, "a\nb\n", groups("--list"))
	require.Equal(t, "Consumer group 'a' has no active members.\n\n"+
		"GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID\n"+
		"a     t     0         4              5              1   -           -    -\n"+
		"a     t     1         1              3              2   -           -    -\n"+
		"\n"+
		"Consumer group 'b' has no active members.\n\n"+
		"GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID\n"+
		"b     u     0         2              2              0   -           -    -\n",
		groups("--describe", "--all-groups"))
	require.Equal(t, groups("--describe", "--all-groups"), groups("describe", "--group", "a", "--group", "b"))
	require.Equal(t, "GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS\n"+
		"a     localhost (1)    -                   Empty 0\n"+
		"\n"+
		"GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS\n"+
		"b     localhost (1)    -                   Empty 0\n",
		groups("--describe", "--all-groups", "--state"))

	// --shift-by, over every group's committed partitions, kept within
	// the log.
	require.Equal(t, "GROUP TOPIC PARTITION NEW-OFFSET\n"+
		"a     t     0         2\n"+
		"a     t     1         0\n"+
		"b     u     0         0\n",
		groups("--reset-offsets", "--all-groups", "--all-topics", "--shift-by", "-2"))
	require.Equal(t, "GROUP TOPIC PARTITION NEW-OFFSET\n"+
		"a     t     0         5\n"+
		"a     t     1         3\n"+
		"b     u     0         2\n",
		groups("--reset-offsets", "--all-groups", "--all-topics", "--shift-by", "5", "--dry-run"))
	// --to-datetime: the first record at or after ts0+2s, in UTC or in the
	// zone given; a partition without one goes to its end.
	for _, at := range []string{"2023-11-14T22:13:22.000", "2023-11-14T22:13:22.000Z", "2023-11-15T00:13:22.000+02:00", "2023-11-14T21:13:22.000-0100", "2023-11-15T01:13:22.000+03"} {
		stdout, stderr, code := cli(t, "groups", "--dir", dir, "reset-offsets", "--group", "a", "--group", "b", "--topic", "t", "--topic", "u", "--to-datetime", at)
		require.Equal(t, exitOK, code, stderr)
		require.Equal(t, "GROUP TOPIC PARTITION NEW-OFFSET\n"+
			"a     t     0         2\n"+
			"a     t     1         2\n"+
			"a     u     0         2\n"+
			"b     t     0         2\n"+
			"b     t     1         2\n"+
			"b     u     0         2\n", stdout, at)
		require.Contains(t, stderr, "Warn: Partition 0 from topic u is empty. Falling back to latest known offset.\n", at)
	}
	// --topic T:P, executed.
	require.Equal(t, "GROUP TOPIC PARTITION NEW-OFFSET\n"+
		"a     t     1         1\n",
		groups("reset-offsets", "--group", "a", "--topic", "t:1", "--to-datetime", "2023-11-14T22:13:21.000", "--execute"))
	// b has no committed offset in t to shift: a is reset all the same.
	stdout, stderr, code := cli(t, "groups", "--dir", dir, "reset-offsets", "--all-groups", "--topic", "t", "--shift-by", "-3", "--execute")
	require.Equal(t, exitFailure, code)
	require.Equal(t, "GROUP TOPIC PARTITION NEW-OFFSET\na     t     0         1\na     t     1         0\n", stdout)
	require.Contains(t, stderr, "partlog: groups: group b: cannot shift the offset of t-0: the group has no committed offset for it\n")
	require.Equal(t, []string{"a     t     0         1              5              4   -           -    -",
		"a     t     1         0              3              3   -           -    -"}, lines(groups("describe", "--group", "a"))[3:])

	stdout, stderr, code = cli(t, "groups", "--dir", dir, "--delete", "--group", "a", "--group", "nobody")
	require.Equal(t, exitFailure, code)
	require.Equal(t, "Deletion of some consumer groups failed:\n"+
		"* Group 'nobody' could not be deleted due to: GROUP_ID_NOT_FOUND: the group does not exist: \"nobody\"\n"+
		"\n"+
		"These consumer groups were deleted successfully: 'a'\n", stdout)
	require.Contains(t, stderr, "partlog: groups: group nobody: GROUP_ID_NOT_FOUND")
	require.Equal(t, "Deletion of requested consumer groups ('b') was successful.\n", groups("--delete", "--all-groups"))
	require.Equal(t, "", groups("--list"))
}

func TestParseKafkaDatetime(t *testing.T) {
	for in, want := range map[string]int64{
		"2023-11-14T22:13:20.000":       ts0,
		"2023-11-14T22:13:20.001Z":      ts0 + 1,
		"2023-11-14T23:13:20.000+01:00": ts0,
		"2023-11-14T23:43:20.000+0130":  ts0,
		"2023-11-14T20:13:20.000-02":    ts0,
	} {
		got, err := parseKafkaDatetime(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got.UnixMilli(), in)
	}
	for _, in := range []string{"2023-11-14 22:13:20.000", "2023-11-14T22:13:20", "2023-11-14T22:13:20.000+1", "yesterday", "2023-13-14T22:13:20.000"} {
		_, err := parseKafkaDatetime(in)
		require.Error(t, err, in)
	}
}

func TestGroupsUsageMessages(t *testing.T) {
	say := "say one of list, describe, reset-offsets, delete (or --list, --describe, --reset-offsets, --delete)"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dir", "x"}, say},
		{[]string{"--dir", "x", "--list", "--delete"}, "--list and --delete cannot both be given; " + say},
		{[]string{"--dir", "x", "--describe"}, "describe needs --group or --all-groups"},
		{[]string{"--dir", "x", "delete", "--group", "a", "--all-groups"}, "--group and --all-groups cannot both be given"},
		{[]string{"--dir", "x", "reset-offsets", "--all-groups", "--to-earliest"}, "reset-offsets needs --topic or --all-topics"},
		{[]string{"--dir", "x", "reset-offsets", "--all-groups", "--topic", "t", "--all-topics", "--to-earliest"}, "--topic and --all-topics cannot both be given"},
		{[]string{"--dir", "x", "reset-offsets", "--group", "g", "--topic", "t", "--shift-by", "1", "--to-offset", "3"},
			"reset-offsets needs one of --to-earliest, --to-latest, --to-offset N, --shift-by N, --to-datetime T"},
		{[]string{"--dir", "x", "reset-offsets", "--group", "g", "--topic", "t", "--to-datetime", "2023-11-14 22:13:20.000"},
			`--to-datetime "2023-11-14 22:13:20.000": not YYYY-MM-DDTHH:mm:SS.sss: no T between the date and the time`},
		{[]string{"--dir", "x", "reset-offsets", "--group", "g", "--topic", "t", "--to-datetime", "2023-11-14T22:13:20"},
			`--to-datetime "2023-11-14T22:13:20": not YYYY-MM-DDTHH:mm:SS.sss, optionally followed by a zone (Z, +02:00, +0200, +02)`},
		{[]string{"--dir", "x", "reset-offsets", "--group", "g", "--topic", "t:x", "--to-earliest"}, `--topic "t:x": "x" is not a partition`},
		{[]string{"--dir", "x", "reset-offsets", "--group", "g", "--topic", "t", "--shift-by", "x"}, `invalid value "x" for --shift-by: parse error`},
	} {
		stdout, stderr, code := cli(t, append([]string{"groups"}, tc.args...)...)
		require.Equal(t, exitUsage, code, tc.args)
		require.Empty(t, stdout)
		require.Equal(t, "partlog: groups: "+tc.want+"\nRun 'partlog help groups' for usage.\n", stderr, tc.args)
	}
}
