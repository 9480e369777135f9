package main

import (
	"bytes"
	"fmt"
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
		{nil, "topics: say one of create, list, describe, delete (or --create, --list, --describe, --delete)"},
		{[]string{"--list", "--describe"}, "topics: --list and --describe cannot both be given; say one of create, list, describe, delete (or --create, --list, --describe, --delete)"},
		{[]string{"show"}, `topics: unknown action "show"; say one of create, list, describe, delete (or --create, --list, --describe, --delete)`},
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
