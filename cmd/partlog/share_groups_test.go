package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/transport"
)

// shareMember is a member of a share group over TCP: partlog's share
// consumer with client id "worker".
type shareMember struct {
	*consumer.ShareConsumer
	cl *transport.TCPClient
}

func joinShareGroup(t *testing.T, ctx context.Context, addr, group, topic string) shareMember {
	t.Helper()
	cl, err := transport.Dial(ctx, addr, transport.DialOptions{ClientID: "worker"})
	require.NoError(t, err)
	c, err := consumer.NewShare(cl, consumer.ShareGroup(group), consumer.Topics(topic), consumer.ClientID("worker"))
	require.NoError(t, err)
	m := shareMember{c, cl}
	t.Cleanup(func() { m.close(t) })
	return m
}

// settle polls until the member has its assignment and has fetched once
// with it, which initializes its share partitions.
func (m shareMember) settle(t *testing.T, ctx context.Context) {
	t.Helper()
	for len(m.Assignment()) == 0 {
		_, err := m.Poll(ctx, 100*time.Millisecond)
		require.NoError(t, err)
	}
	_, err := m.Poll(ctx, 100*time.Millisecond)
	require.NoError(t, err)
}

// take polls until n records came, accepts them, and returns their values.
func (m shareMember) take(t *testing.T, ctx context.Context, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		recs, err := m.Poll(ctx, time.Second)
		require.NoError(t, err)
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
	}
	require.NoError(t, m.Commit(ctx))
	return got
}

func (m shareMember) close(t *testing.T) {
	if m.cl == nil {
		return
	}
	m.ShareConsumer.Close()
	m.cl.Close()
}

// TestShareGroupsListDescribeResetDelete: share-groups against a served
// node, as kafka-share-groups.sh works against a broker — list, describe
// in each view, reset-offsets (a dry run changes nothing, --execute moves
// the start offset a new member then starts at, a group with members is
// refused), delete-offsets and delete; then the same data directory
// opened in process with --dir.
func TestShareGroupsListDescribeResetDelete(t *testing.T) {
	dir := t.TempDir()
	addr, stop := serveInBackground(t, "--dir", dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, stderr, code := cli(t, "topics", "create", "--bootstrap-server", addr, "--topic", "t", "--partitions", "1")
	require.Equal(t, exitOK, code, stderr)
	share := func(args ...string) (stdout, stderr string) {
		t.Helper()
		stdout, stderr, code := cli(t, append([]string{"share-groups", "--bootstrap-server", addr}, args...)...)
		require.Equal(t, exitOK, code, stderr)
		return stdout, stderr
	}
	describe := func(args ...string) [][]string {
		t.Helper()
		stdout, _ := share(append([]string{"describe", "--group", "g"}, args...)...)
		return fields(stdout)
	}

	m := joinShareGroup(t, ctx, addr, "g", "t")
	m.settle(t, ctx)
	require.Equal(t, [][]string{{"GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"}, {"g", "t", "0", "0", "0"}}, describe(),
		"the first fetch initialized the share partition at the log end (share.auto.offset.reset=latest)")
	_, stderr, code = cliIn(t, "a\nb\nc\nd\ne\n", "produce", "--bootstrap-server", addr, "--topic", "t", "--property", "parse.key=false")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, []string{"a", "b", "c", "d", "e"}, m.take(t, ctx, 5))

	stdout, _ := share("list")
	require.Equal(t, "g\n", stdout)
	stdout, _ = share("--list", "--state")
	require.Equal(t, [][]string{{"GROUP", "STATE"}, {"g", "Stable"}}, fields(stdout))
	stdout, _ = share("list", "--state=empty")
	require.Equal(t, [][]string{{"GROUP", "STATE"}}, fields(stdout))

	require.Equal(t, [][]string{{"GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"}, {"g", "t", "0", "5", "0"}}, describe(),
		"every record accepted: the start offset is past them")
	require.Equal(t, [][]string{{"GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"}, {"g", "t", "0", "5", "0"}}, describe("--offsets"))
	// The node's share state does not record the leader epoch (-1 on
	// the wire), which Kafka's tool prints as a dash.
	require.Equal(t, [][]string{{"GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG"}, {"g", "t", "0", "-", "5", "0"}}, describe("--verbose"))
	members := describe("--members")
	require.Len(t, members, 2)
	require.Equal(t, []string{"GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"}, members[0])
	host := members[1][2]
	require.Contains(t, host, "127.0.0.1")
	require.Equal(t, []string{"g", m.MemberID(), host, "worker", "1", "t:0"}, members[1])
	members = describe("--members", "--verbose")
	require.Equal(t, []string{"GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT"}, members[0])
	require.Len(t, members, 2)
	memberEpoch := members[1][5]
	require.NotEqual(t, "0", memberEpoch)
	require.Equal(t, []string{"g", m.MemberID(), host, "worker", "1", memberEpoch, "t:0"}, members[1])
	// Kafka prints "GROUP COORDINATOR (ID) STATE #MEMBERS"; the header's
	// "COORDINATOR (ID)" and the value "host:port (id)" are two fields each.
	require.Equal(t, [][]string{{"GROUP", "COORDINATOR", "(ID)", "STATE", "#MEMBERS"}, {"g", addr, "(1)", "Stable", "1"}}, describe("--state"))
	state := describe("--state", "--verbose")
	require.Equal(t, []string{"GROUP", "COORDINATOR", "(ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS"}, state[0])
	require.Equal(t, []string{"g", addr, "(1)", "Stable"}, state[1][:4])
	require.Equal(t, state[1][4], state[1][5], "the target assignment is the group's epoch's")
	require.Equal(t, "1", state[1][6])

	// A group with members is refused; nothing moves.
	_, stderr, code = cli(t, "share-groups", "reset-offsets", "--bootstrap-server", addr, "--group", "g", "--topic", "t", "--to-earliest", "--execute")
	require.Equal(t, exitFailure, code)
	require.Equal(t, "partlog: share-groups: Share group 'g' is not empty.\n", stderr)
	_, stderr, code = cli(t, "share-groups", "delete-offsets", "--bootstrap-server", addr, "--group", "g", "--topic", "t")
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "NON_EMPTY_GROUP")
	stdout, _, code = cli(t, "share-groups", "delete", "--bootstrap-server", addr, "--group", "g")
	require.Equal(t, exitFailure, code)
	require.Equal(t, "\nError: Deletion of some share groups failed:\n* Group 'g' could not be deleted due to: Share group 'g' is not EMPTY.\n", stdout)
	require.Equal(t, []string{"g", "t", "0", "5", "0"}, describe()[1])

	// Empty: the members and state views say so, as Kafka's tool does.
	m.close(t)
	stdout, stderr = share("describe", "--group", "g", "--members")
	require.Equal(t, "", stdout)
	require.Equal(t, "\nShare group 'g' has no active members.\n", stderr)
	stdout, stderr = share("describe", "--group", "g", "--state")
	require.Equal(t, "\nShare group 'g' has no active members.\n", stderr)
	require.Equal(t, []string{"g", addr, "(1)", "Empty", "0"}, fields(stdout)[1])

	// A dry run prints the plan and changes nothing.
	plan := func(args ...string) [][]string {
		t.Helper()
		stdout, _ := share(append([]string{"reset-offsets", "--group", "g"}, args...)...)
		return fields(stdout)
	}
	require.Equal(t, [][]string{{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"}, {"g", "t", "0", "0"}}, plan("--topic", "t", "--to-earliest", "--dry-run"))
	require.Equal(t, []string{"g", "t", "0", "5", "0"}, describe()[1])
	require.Equal(t, []string{"g", "t", "0", "5"}, plan("--all-topics", "--to-latest", "--dry-run")[1])
	require.Equal(t, []string{"g", "t", "0", "0"}, plan("--topic", "t:0", "--by-duration", "P1D", "--dry-run")[1])
	require.Equal(t, []string{"g", "t", "0", "5"}, plan("--topic", "t", "--to-offset", "99", "--dry-run")[1], "past the end is the end")
	stdout, stderr = share("reset-offsets", "--group", "g", "--topic", "t", "--to-datetime", "2999-01-01T00:00:00.000", "--dry-run")
	require.Equal(t, []string{"g", "t", "0", "5"}, fields(stdout)[1])
	require.Equal(t, "Warn: Partition 0 from topic t is empty. Falling back to latest known offset.\n", stderr)
	require.Equal(t, []string{"g", "t", "0", "5", "0"}, describe()[1])

	// --execute moves the start offset, and a new member starts there.
	require.Equal(t, [][]string{{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"}, {"g", "t", "0", "2"}}, plan("--topic", "t", "--to-offset", "2", "--execute"))
	require.Equal(t, []string{"g", "t", "0", "2", "3"}, describe()[1], "c d e to deliver again")
	m2 := joinShareGroup(t, ctx, addr, "g", "t")
	require.Equal(t, []string{"c", "d", "e"}, m2.take(t, ctx, 3))
	m2.close(t)
	require.Equal(t, []string{"g", "t", "0", "5", "0"}, describe()[1])

	serveErr, code := stop()
	require.Equal(t, exitOK, code, serveErr)

	// The same directory in process: the reopened node replays the group,
	// its share state and which partitions have it.
	local := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		return cli(t, append([]string{"share-groups", "--dir", dir}, args...)...)
	}
	stdout, stderr, code = local("describe", "--group", "g")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, [][]string{{"GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"}, {"g", "t", "0", "5", "0"}}, fields(stdout), "c d e were accepted")
	stdout, stderr, code = local("reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--dry-run")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, [][]string{{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"}, {"g", "t", "0", "0"}}, fields(stdout), "--all-topics finds the partition with state")
	stdout, stderr, code = local("reset-offsets", "--group", "g", "--topic", "t", "--to-earliest", "--execute")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, [][]string{{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"}, {"g", "t", "0", "0"}}, fields(stdout))
	stdout, stderr, code = local("describe", "--group", "g", "--state")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, [][]string{{"GROUP", "COORDINATOR", "(ID)", "STATE", "#MEMBERS"}, {"g", "localhost", "(1)", "Empty", "0"}}, fields(stdout))

	// delete-offsets drops the topic's share state; delete, the group.
	stdout, stderr, code = local("delete-offsets", "--group", "g", "--topic", "t")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, [][]string{{"TOPIC", "STATUS"}, {"t", "Successful"}}, fields(stdout))
	stdout, _, code = local("delete-offsets", "--group", "g", "--topic", "t")
	require.Equal(t, exitFailure, code)
	require.Equal(t, "TOPIC", fields(stdout)[0][0])
	require.Equal(t, []string{"t", "Error:", "UNKNOWN_TOPIC_OR_PARTITION:"}, fields(stdout)[1][:3], "no state left to delete")
	stdout, stderr, code = local("delete", "--group", "g")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Deletion of requested share groups ('g') was successful.\n", stdout)
	stdout, stderr, code = local("list")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "", stdout)

	stdout, stderr, code = local("describe", "--group", "g")
	require.Equal(t, exitFailure, code)
	require.Equal(t, "partlog: share-groups: Share group 'g' does not exist.\n", stderr)
	stdout, _, code = local("delete", "--group", "g")
	require.Equal(t, exitFailure, code)
	require.Equal(t, "\nError: Deletion of some share groups failed:\n* Group 'g' could not be deleted due to: Group 'g' is not a share group.\n", stdout)
}

// TestShareGroupsUsage: the command lines Kafka's
// ShareGroupCommandOptions.checkArgs refuses are usage errors, found
// before any node is opened.
func TestShareGroupsUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--dir", dir}, "say one of list, describe"},
		{[]string{"list", "describe", "--dir", dir}, `unexpected argument "describe"`},
		{[]string{"describe", "--dir", dir}, "describe needs --group or --all-groups"},
		{[]string{"describe", "--dir", dir, "--group", "g", "--all-groups"}, "--group and --all-groups cannot both be given"},
		{[]string{"describe", "--dir", dir, "--group", "g", "--members", "--state"}, "at most one of --members, --offsets, --state"},
		{[]string{"describe", "--dir", dir, "--group", "g", "--state=Stable"}, "does not take a value for --state"},
		{[]string{"describe", "--dir", dir, "--group", "g", "--topic", "t"}, "describe does not take --topic"},
		{[]string{"list", "--dir", dir, "--state=Stable,Rebalancing"}, "invalid state list 'Stable,Rebalancing'; valid states are: Empty, Stable, Dead"},
		{[]string{"list", "--dir", dir, "--members"}, "--members goes with describe only"},
		{[]string{"delete", "--dir", dir}, "delete needs --group or --all-groups"},
		{[]string{"delete", "--dir", dir, "--group", "g", "--execute"}, "--execute goes with reset-offsets only"},
		{[]string{"delete-offsets", "--dir", dir, "--group", "g"}, "delete-offsets needs one --group and --topic"},
		{[]string{"reset-offsets", "--dir", dir, "--group", "g", "--topic", "t", "--to-earliest"}, "reset-offsets needs --execute or --dry-run"},
		{[]string{"reset-offsets", "--dir", dir, "--group", "g", "--topic", "t", "--to-earliest", "--execute", "--dry-run"}, "one of --execute and --dry-run, not both"},
		{[]string{"reset-offsets", "--dir", dir, "--group", "g", "--group", "h", "--topic", "t", "--to-earliest", "--execute"}, "reset-offsets needs one --group"},
		{[]string{"reset-offsets", "--dir", dir, "--group", "g", "--to-earliest", "--execute"}, "reset-offsets needs --topic or --all-topics"},
		{[]string{"reset-offsets", "--dir", dir, "--group", "g", "--topic", "t", "--execute"}, "reset-offsets needs one of --to-earliest"},
		{[]string{"reset-offsets", "--dir", dir, "--group", "g", "--topic", "t", "--to-earliest", "--to-latest", "--execute"}, "reset-offsets needs one of --to-earliest"},
		{[]string{"reset-offsets", "--dir", dir, "--group", "g", "--topic", "t", "--by-duration", "1h", "--execute"}, "not an ISO 8601 duration"},
		{[]string{"reset-offsets", "--dir", dir, "--group", "g", "--topic", "t", "--to-datetime", "yesterday", "--execute"}, `--to-datetime "yesterday"`},
		{[]string{"reset-offsets", "--dir", dir, "--group", "g", "--topic", "t:x", "--to-earliest", "--execute"}, `"x" is not a partition`},
	} {
		_, stderr, code := cli(t, append([]string{"share-groups"}, tc.args...)...)
		require.Equal(t, exitUsage, code, "%v: %s", tc.args, stderr)
		require.Contains(t, stderr, tc.msg, "%v", tc.args)
		require.True(t, strings.HasSuffix(stderr, "Run 'partlog help share-groups' for usage.\n"), stderr)
	}
	stdout, _, code := cli(t, "help", "share-groups")
	require.Equal(t, exitOK, code)
	require.True(t, strings.HasPrefix(stdout, "Usage: partlog share-groups <list|describe|reset-offsets|delete|delete-offsets> --dir DIR [flags]\n"), stdout)
	for _, f := range []string{"--group group", "--all-groups", "--topic topic", "--state states", "--verbose", "--to-datetime datetime", "--by-duration duration", "--execute"} {
		require.Contains(t, stdout, f)
	}
	for _, d := range []string{"P1DT2H30M", "PT0.5S", "P2D", "pt1m"} {
		_, err := parseISODuration(d)
		require.NoError(t, err, d)
	}
	d, _ := parseISODuration("P1DT2H30M0.5S")
	require.Equal(t, 26*time.Hour+30*time.Minute+500*time.Millisecond, d)
}
