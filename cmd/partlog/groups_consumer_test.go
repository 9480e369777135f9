package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// TestGroupsConsumerProtocol: consume --consumer-property
// group.protocol=consumer reads and commits in a group of Kafka 4's
// consumer protocol (KIP-848); groups describe shows such a group as
// kafka-consumer-groups.sh does — a live member with the partitions the
// coordinator gave it, the server assignor, the committed offsets.
func TestGroupsConsumerProtocol(t *testing.T) {
	dir := t.TempDir()
	addr, stop := serveInBackground(t, "--dir", dir)
	_, stderr, code := cli(t, "topics", "create", "--bootstrap-server", addr, "--topic", "t", "--partitions", "2")
	require.Equal(t, exitOK, code, stderr)
	_, stderr, code = cliIn(t, "a\nb\nc\nd\n", "produce", "--bootstrap-server", addr, "--topic", "t", "--property", "parse.key=false")
	require.Equal(t, exitOK, code, stderr)

	stdout, stderr, code := cli(t, "consume", "--bootstrap-server", addr, "--topic", "t", "--group", "g", "--from-beginning",
		"--consumer-property", "group.protocol=consumer", "--max-messages", "4", "--timeout", "10s")
	require.Equal(t, exitOK, code, stderr)
	require.ElementsMatch(t, []string{"a", "b", "c", "d"}, strings.Fields(stdout))
	_, stderr, code = cli(t, "consume", "--bootstrap-server", addr, "--topic", "t", "--group", "g", "--consumer-property", "group.protocol=nope")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "classic or consumer")

	// A member that stays: partlog's consumer on the consumer protocol.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := transport.Dial(ctx, addr, transport.DialOptions{ClientID: "worker"})
	require.NoError(t, err)
	defer cl.Close()
	assigned := make(chan struct{}, 1)
	member, err := consumer.New(cl, consumer.Group("g"), consumer.Topics("t"), consumer.GroupProtocol(consumer.ConsumerProtocol),
		consumer.GroupRemoteAssignor("range"), consumer.ClientID("worker"),
		consumer.OnPartitionsAssigned(func(context.Context, *consumer.Consumer, []kafka.TopicPartition) { assigned <- struct{}{} }))
	require.NoError(t, err)
	go member.Poll(ctx, 30*time.Second)
	select {
	case <-assigned:
	case <-ctx.Done():
		t.Fatal("the member was never given its partitions")
	}
	memberID := member.GroupMetadata().MemberID

	describe := func(args ...string) [][]string {
		t.Helper()
		stdout, stderr, code := cli(t, append([]string{"groups", "describe", "--bootstrap-server", addr, "--group", "g"}, args...)...)
		require.Equal(t, exitOK, code, stderr)
		return fields(stdout)
	}
	rows := describe()
	require.Equal(t, []string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"}, rows[0])
	require.Len(t, rows, 3)
	committed := int64(0)
	for i, r := range rows[1:] {
		require.Equal(t, []string{"g", "t", strconv.Itoa(i)}, r[:3])
		require.Equal(t, r[3], r[4], "everything consumed is committed")
		require.Equal(t, "0", r[5])
		require.Equal(t, memberID, r[6])
		require.Equal(t, "worker", r[8])
		c, err := strconv.ParseInt(r[3], 10, 64)
		require.NoError(t, err)
		committed += c
	}
	require.Equal(t, int64(4), committed)
	require.Equal(t, [][]string{{"GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"}, {"g", memberID, rows[1][7], "worker", "2"}}, describe("--members"))
	state := describe("--state")
	require.Equal(t, []string{"g", "range", "Stable", "1"}, []string{state[1][0], state[1][len(state[1])-3], state[1][len(state[1])-2], state[1][len(state[1])-1]})

	cancel()
	require.NoError(t, member.Close())
	serveErr, code := stop()
	require.Equal(t, exitOK, code, serveErr)
}
