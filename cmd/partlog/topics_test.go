package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/transport"
)

// TestTopicsActionFlags: the actions may be given as kafka-topics.sh takes
// them, as flags.
func TestTopicsActionFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--create", "--topic", "a", "--partitions", "2"}, "Created topic a.\n"},
		{[]string{"create", "--create", "--topic", "b"}, "Created topic b.\n"},
		{[]string{"--list"}, "a\nb\n"},
		{[]string{"--delete", "--topic", "b"}, "Deleted topic b.\n"},
		{[]string{"list"}, "a\n"},
	} {
		stdout, stderr, code := cli(t, append([]string{"topics", "--dir", dir}, tc.args...)...)
		require.Equal(t, exitOK, code, "%v: %s", tc.args, stderr)
		require.Equal(t, tc.want, stdout, tc.args)
	}
	stdout, _, code := cli(t, "topics", "--describe", "--dir", dir)
	require.Equal(t, exitOK, code)
	require.Contains(t, stdout, "Topic: a\tTopicId: ")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "topics: say one of create, list, describe, alter, delete (or --create, --list, --describe, --alter, --delete)"},
		{[]string{"--list", "--describe"}, "topics: --list and --describe cannot both be given; say one of create, list, describe, alter, delete (or --create, --list, --describe, --alter, --delete)"},
		{[]string{"show"}, `topics: unknown action "show"; say one of create, list, describe, alter, delete (or --create, --list, --describe, --alter, --delete)`},
		{[]string{"describe", "--list"}, `topics: unexpected argument "describe"`},
		{[]string{"list", "--under-replicated-partitions"}, "topics: --under-replicated-partitions, --unavailable-partitions, --under-min-isr-partitions and --at-min-isr-partitions go with describe, not list"},
	} {
		_, stderr, code := cli(t, append([]string{"topics", "--dir", dir}, tc.args...)...)
		require.Equal(t, exitUsage, code, tc.args)
		require.Equal(t, "partlog: "+tc.want+"\nRun 'partlog help topics' for usage.\n", stderr, tc.args)
	}
}

// TestTopicsDescribePartitionFilters: describe's partition filters, on a
// data directory (a node alone: every partition has all its one replica
// in sync) and on made-up descriptions of a cluster's partitions.
func TestTopicsDescribePartitionFilters(t *testing.T) {
	dir := newTopic(t, 2)
	produceLines(t, dir, "a\nb\nc\n", "--partition", "1")
	describe := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := cli(t, append([]string{"topics", "describe", "--dir", dir, "--topic", "t"}, args...)...)
		require.Equal(t, exitOK, code, stderr)
		return stdout
	}
	require.Equal(t, "", describe("--under-replicated-partitions"))
	require.Equal(t, "", describe("--unavailable-partitions", "--under-min-isr-partitions"))
	atMin := "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\tLogStartOffset: 0\tLogEndOffset: 0\tHighWatermark: 0\n" +
		"\tTopic: t\tPartition: 1\tLeader: 1\tReplicas: 1\tIsr: 1\tLogStartOffset: 0\tLogEndOffset: 3\tHighWatermark: 3\n"
	require.Equal(t, atMin, describe("--at-min-isr-partitions"))
	require.Equal(t, atMin, describe("--under-replicated-partitions", "--at-min-isr-partitions"))

	d := partlog.TopicDescription{Name: "r", Effective: map[string]string{partlog.ConfigMinInsyncReplicas: "2"}, Partitions: []partlog.PartitionDescription{
		{Partition: 0, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
		{Partition: 1, Leader: 2, Replicas: []int32{2, 3, 1}, ISR: []int32{2, 3}},
		{Partition: 2, Leader: 3, Replicas: []int32{3, 1, 2}, ISR: []int32{3}},
		{Partition: 3, Leader: -1, Replicas: []int32{4, 1, 2}, ISR: []int32{4}},
		{Partition: 4, Leader: 4, Replicas: []int32{4, 1, 2}, ISR: []int32{4, 1, 2}}, // a leader that is not live
		{Partition: 5, Replicas: []int32{1, 2, 3}, Offline: fmt.Errorf("%w: disk gone", transport.ErrKafkaStorage)},
	}}
	line := func(p int) string {
		var b bytes.Buffer
		writePartitionDescription(&b, "r", d.Partitions[p])
		return b.String()
	}
	require.Equal(t, "\tTopic: r\tPartition: 3\tLeader: none\tReplicas: 4,1,2\tIsr: 4\tLogStartOffset: 0\tLogEndOffset: 0\tHighWatermark: 0\n", line(3))
	live := []int32{1, 2, 3}
	for _, tc := range []struct {
		f    partitionFilter
		want []int
	}{
		{partitionFilter{underReplicated: true, live: live}, []int{1, 2, 3, 5}},
		{partitionFilter{unavailable: true, live: live}, []int{3, 4, 5}},
		{partitionFilter{unavailable: true}, []int{3, 5}}, // --dir: the leaders named are live
		{partitionFilter{underMinISR: true, live: live}, []int{2, 3, 5}},
		{partitionFilter{atMinISR: true, live: live}, []int{1}},
		{partitionFilter{underReplicated: true, atMinISR: true, live: live}, []int{1, 2, 3, 5}},
	} {
		var got []int
		for i, p := range d.Partitions {
			if tc.f.match(d, p) {
				got = append(got, i)
			}
		}
		require.Equal(t, tc.want, got, "%+v", tc.f)
	}
}

// TestTopicsUnderReplicatedOnACluster: a cluster of two process nodes; once
// one is killed and fenced, the other's partitions of a topic of
// replication factor 2 are under-replicated and under min.insync.replicas.
func TestTopicsUnderReplicatedOnACluster(t *testing.T) {
	bin := buildPartlog(t)
	c := startProcessCluster(t, bin, 2, 2*time.Second, 100*time.Millisecond)
	addr := c.nodes[1].addr
	topics := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := cli(t, append(append([]string{"topics"}, args...), "--bootstrap-server", addr)...)
		require.Equal(t, exitOK, code, "%v: %s", args, stderr)
		return stdout
	}
	topics("--create", "--topic", "r", "--partitions", "2", "--replication-factor", "2", "--config", "min.insync.replicas=2")
	c.waitFor("r's replicas in sync", "r", fullISR)
	require.Equal(t, "", topics("--describe", "--topic", "r", "--under-replicated-partitions", "--unavailable-partitions"))

	c.nodes[2].kill()
	tm := c.waitFor("node 2 out of r's ISRs", "r", func(tm transport.TopicMetadata) bool {
		for _, p := range tm.Partitions {
			if p.Leader != 1 || len(p.ISR) != 1 {
				return false
			}
		}
		return true
	})
	var want strings.Builder
	for _, p := range tm.Partitions {
		fmt.Fprintf(&want, "\tTopic: r\tPartition: %d\tLeader: 1\tReplicas: %s\tIsr: 1\tLogStartOffset: 0\tLogEndOffset: 0\tHighWatermark: 0\n", p.Partition, ids(p.Replicas))
	}
	require.Equal(t, want.String(), topics("--describe", "--under-replicated-partitions"))
	require.Equal(t, want.String(), topics("describe", "--topic", "r", "--under-min-isr-partitions"))
	require.Equal(t, "", topics("--describe", "--topic", "r", "--unavailable-partitions"))
}

// TestTopicsAlter: topics --alter raises a partition count and sets and
// removes configs, on a data directory and over TCP, with the same output
// and the node's errors.
func TestTopicsAlter(t *testing.T) {
	dir := newTopic(t, 2, "retention.ms=600000")
	testTopicsAlter(t, dir, "--dir", dir)
	n, addr := servedNode(t)
	require.NoError(t, n.CreateTopic(t.Context(), partlog.NewTopic{Name: "t", Partitions: 2, Configs: map[string]string{"retention.ms": "600000"}}))
	testTopicsAlter(t, addr, "--bootstrap-server", addr)
}

// testTopicsAlter alters topic t, which has 2 partitions and sets
// retention.ms=600000, on the node target names (where, in messages).
func testTopicsAlter(t *testing.T, where string, target ...string) {
	t.Helper()
	topics := func(args ...string) (string, string, int) {
		t.Helper()
		return cli(t, append(append([]string{"topics"}, args...), target...)...)
	}
	describe := func() string {
		t.Helper()
		stdout, stderr, code := topics("--describe", "--topic", "t")
		require.Equal(t, exitOK, code, stderr)
		return strings.SplitN(stdout, "\n", 2)[0]
	}
	stdout, stderr, code := topics("--alter", "--topic", "t", "--partitions", "3")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Adding partitions succeeded!\n", stdout)
	require.Equal(t, "WARNING: If partitions are increased for a topic that has a key, the partition logic or ordering of the messages will be affected\n", stderr)
	require.Contains(t, describe(), "\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: retention.ms=600000")

	stdout, stderr, code = topics("alter", "--topic", "t", "--config", "segment.bytes=2048", "--config", "cleanup.policy=compact,delete", "--delete-config", "retention.ms")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Updated config for topic t.\n", stdout)
	require.Contains(t, describe(), "\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: cleanup.policy=compact,delete,segment.bytes=2048")

	stdout, stderr, code = topics("--alter", "--topic", "t", "--partitions", "4", "--delete-config", "cleanup.policy")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Updated config for topic t.\nAdding partitions succeeded!\n", stdout)
	require.Contains(t, describe(), "\tPartitionCount: 4\tReplicationFactor: 1\tConfigs: segment.bytes=2048")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--partitions", "2"}, "adding partitions to t: INVALID_PARTITIONS: invalid number of partitions: topic t has 4 partitions; a count can only grow, not to 2"},
		{[]string{"--partitions", "4"}, "adding partitions to t: INVALID_PARTITIONS: invalid number of partitions: topic t has 4 partitions; a count can only grow, not to 4"},
		{[]string{"--partitions", "0"}, "INVALID_PARTITIONS: invalid number of partitions: --partitions 0 is not a partition count (1 to 2147483647)"},
		{[]string{"--config", "retention.hours=1"}, `altering t's configs: INVALID_CONFIG: invalid configuration: unknown topic config "retention.hours" (known: ` + strings.Join(partlog.TopicConfigKeys(), ", ") + ")"},
		{[]string{"--topic", "nope", "--partitions", "5"}, `adding partitions to nope: topic "nope" does not exist in ` + where},
		{[]string{"--topic", "nope", "--config", "retention.ms=1"}, `altering nope's configs: topic "nope" does not exist in ` + where},
	} {
		args := append([]string{"--alter"}, tc.args...)
		if !slices.Contains(args, "--topic") {
			args = append(args, "--topic", "t")
		}
		stdout, stderr, code := topics(args...)
		require.Equal(t, exitFailure, code, tc.args)
		require.Empty(t, stdout, tc.args)
		require.Equal(t, "partlog: topics: "+tc.want+"\n", stderr, tc.args)
	}
	require.Contains(t, describe(), "\tPartitionCount: 4\tReplicationFactor: 1\tConfigs: segment.bytes=2048")
}

func TestTopicsAlterUsage(t *testing.T) {
	dir := newTopic(t, 1)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--alter", "--partitions", "2"}, "alter needs --topic"},
		{[]string{"--alter", "--topic", "t"}, "alter needs --partitions, --config or --delete-config"},
		{[]string{"--alter", "--topic", "t", "--replication-factor", "2"}, "alter cannot change --replication-factor"},
		{[]string{"--create", "--topic", "u", "--delete-config", "retention.ms"}, "--delete-config goes with alter, not create"},
	} {
		_, stderr, code := cli(t, append([]string{"topics", "--dir", dir}, tc.args...)...)
		require.Equal(t, exitUsage, code, tc.args)
		require.Equal(t, "partlog: topics: "+tc.want+"\nRun 'partlog help topics' for usage.\n", stderr, tc.args)
	}
}
