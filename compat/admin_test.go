package compat

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// adminChecks are Kafka's admin workflow, a call (or two that go together)
// a row, each through the client's own admin API: a cell is N/A where the
// client has no such call.
func adminChecks() []check {
	const d = 30 * time.Second
	return []check{
		{id: "admin-topics", name: "admin: CreateTopics, Metadata, DeleteTopics", timeout: d, run: checkAdminTopics},
		{id: "admin-create-partitions", name: "admin: CreatePartitions", timeout: d, run: checkCreatePartitions},
		{id: "admin-describe-configs", name: "admin: DescribeConfigs (topic)", timeout: d, run: checkDescribeConfigs},
		{id: "admin-incremental-alter", name: "admin: IncrementalAlterConfigs, described back", timeout: d, run: checkIncrementalAlterConfigs},
		{id: "admin-alter-configs", name: "admin: AlterConfigs, described back", timeout: d, run: checkAlterConfigs},
		{id: "admin-broker-configs", name: "admin: DescribeConfigs (broker)", timeout: d, run: checkBrokerConfigs},
		{id: "admin-delete-records", name: "admin: DeleteRecords, ListOffsets earliest", timeout: d, run: checkDeleteRecords},
		{id: "admin-describe-cluster", name: "admin: DescribeCluster", timeout: d, run: checkDescribeCluster},
		{id: "admin-log-dirs", name: "admin: DescribeLogDirs", timeout: d, run: checkDescribeLogDirs},
		// On the cluster, moving a leader away first takes a node restart.
		{id: "admin-elect-leaders", name: "admin: ElectLeaders (preferred)", timeout: 60 * time.Second, disruptive: true, run: checkElectLeaders},
		{id: "admin-describe-producers", name: "admin: DescribeProducers", timeout: d, run: checkDescribeProducers},
		{id: "admin-reassign", name: "admin: AlterPartitionReassignments, ListPartitionReassignments", timeout: 60 * time.Second,
			clusterOnly: true, run: checkReassign},
		{id: "admin-offset-for-epoch", name: "admin: OffsetForLeaderEpoch", timeout: d, run: checkOffsetForLeaderEpoch},
	}
}

// checkAdminTopics: the client creates a topic of three partitions with a
// config, which every node must then describe with the target's
// replication factor and the config; the client's metadata must say three
// partitions; the client deletes it and every node must forget it.
func checkAdminTopics(ctx context.Context, x *run) error {
	a, topic := x.d.admin(), x.topic()
	configs := map[string]string{"retention.ms": "3600000"}
	if x.tg.rf > 1 {
		configs["min.insync.replicas"] = "2"
	}
	if err := a.createTopic(ctx, x.tg, topic, 3, x.tg.rf, configs); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if err := x.tg.waitTopic(ctx, topic, fmt.Sprintf("3 partitions of %d replicas, all in sync", x.tg.rf), func(tm transport.TopicMetadata) bool {
		return len(tm.Partitions) == 3 && fullISR(tm) && !slices.ContainsFunc(tm.Partitions, func(p transport.PartitionMetadata) bool {
			return len(p.Replicas) != int(x.tg.rf)
		})
	}); err != nil {
		return err
	}
	stored, err := x.tg.topicConfigs(ctx, topic)
	if err != nil {
		return err
	}
	for k, v := range configs {
		if stored[k] != v {
			return fmt.Errorf("the topic was created with %s=%s, partlog has %q", k, v, stored[k])
		}
	}
	n, err := a.partitions(ctx, x.tg, topic)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if n != 3 {
		return fmt.Errorf("the client's metadata says %d partitions, want 3", n)
	}
	if err := a.deleteTopic(ctx, x.tg, topic); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return x.tg.waitTopicGone(ctx, topic)
}

// topicConfigs returns a topic's configs as partlog describes them.
func (tg *target) topicConfigs(ctx context.Context, topic string) (map[string]string, error) {
	c, err := transport.Dial(ctx, tg.addrs()[0], tg.dialOptions())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	resp, err := c.DescribeConfigs(ctx, &transport.DescribeConfigsRequest{Resources: []transport.ConfigResource{{Type: transport.ConfigTopic, Name: topic}}})
	if err != nil {
		return nil, fmt.Errorf("harness: describe configs of %s: %w", topic, err)
	}
	if err := resp.Resources[0].Err; err != nil {
		return nil, fmt.Errorf("harness: describe configs of %s: %w", topic, err)
	}
	out := map[string]string{}
	for _, e := range resp.Resources[0].Configs {
		out[e.Name] = e.Value
	}
	return out, nil
}

// checkCreatePartitions: a topic of two partitions; the client grows it to
// five, which every node must then show with the target's replication
// factor and in-sync replicas, as must the client's metadata; a record
// produced to the new partition 4 lands at offset 0.
func checkCreatePartitions(ctx context.Context, x *run) error {
	a, topic := x.d.admin(), x.topic()
	if err := x.tg.createTopic(ctx, topic, 2, nil); err != nil {
		return err
	}
	if err := a.createPartitions(ctx, x.tg, topic, 5); err != nil {
		return err
	}
	if err := x.tg.waitTopic(ctx, topic, "5 partitions, all in sync", func(tm transport.TopicMetadata) bool {
		return len(tm.Partitions) == 5 && fullISR(tm) && !slices.ContainsFunc(tm.Partitions, func(p transport.PartitionMetadata) bool {
			return len(p.Replicas) != int(x.tg.rf)
		})
	}); err != nil {
		return err
	}
	n, err := a.partitions(ctx, x.tg, topic)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if n != 5 {
		return fmt.Errorf("the client's metadata says %d partitions, want 5", n)
	}
	written, err := x.tg.produceWithPartlog(ctx, topic, []rec{{Partition: 4, Key: []byte("k"), Value: []byte("in a new partition")}})
	if err != nil {
		return err
	}
	if written[0].Offset != 0 {
		return fmt.Errorf("the first record of new partition 4 is at offset %d", written[0].Offset)
	}
	return nil
}

// wantConfigs compares the configs a client described with what they must
// be: a value and whether it is a default.
func wantConfigs(got map[string]configValue, want map[string]configValue) error {
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			return fmt.Errorf("%s is not among the %d configs described", k, len(got))
		case (g.Value == nil) != (w.Value == nil) || (g.Value != nil && *g.Value != *w.Value):
			return fmt.Errorf("%s is %s, want %s", k, strOrNull(g.Value), strOrNull(w.Value))
		case g.IsDefault != w.IsDefault:
			return fmt.Errorf("%s=%s is described with default %v, want %v", k, strOrNull(g.Value), g.IsDefault, w.IsDefault)
		}
	}
	return nil
}

func strOrNull(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}

func set(v string) configValue       { return configValue{Value: &v} }
func byDefault(v string) configValue { return configValue{Value: &v, IsDefault: true} }

// minISR is what a topic created by the harness has as
// min.insync.replicas: the cluster's own, the single node's default.
func (tg *target) minISR() configValue {
	if tg.rf > 1 {
		return set("2")
	}
	return byDefault("1")
}

// checkDescribeConfigs: a topic created with retention.ms set; the client
// describes it: retention.ms as set, cleanup.policy and
// min.insync.replicas as they are.
func checkDescribeConfigs(ctx context.Context, x *run) error {
	a, topic := x.d.admin(), x.topic()
	if err := x.tg.createTopic(ctx, topic, 1, map[string]string{"retention.ms": "3600000"}); err != nil {
		return err
	}
	got, err := a.describeTopicConfig(ctx, x.tg, topic)
	if err != nil {
		return err
	}
	return wantConfigs(got, map[string]configValue{"retention.ms": set("3600000"), "cleanup.policy": byDefault("delete"),
		"min.insync.replicas": x.tg.minISR()})
}

// checkIncrementalAlterConfigs: a topic created with retention.bytes set;
// the client sets retention.ms incrementally and describes the topic:
// both are set.
func checkIncrementalAlterConfigs(ctx context.Context, x *run) error {
	a, topic := x.d.admin(), x.topic()
	if err := x.tg.createTopic(ctx, topic, 1, map[string]string{"retention.bytes": "104857600"}); err != nil {
		return err
	}
	if err := a.incrementalAlterTopicConfig(ctx, x.tg, topic, map[string]string{"retention.ms": "3600000"}); err != nil {
		return err
	}
	got, err := a.describeTopicConfig(ctx, x.tg, topic)
	if err != nil {
		return fmt.Errorf("describing it back: %w", err)
	}
	return wantConfigs(got, map[string]configValue{"retention.ms": set("3600000"), "retention.bytes": set("104857600"),
		"min.insync.replicas": x.tg.minISR()})
}

// checkAlterConfigs: a topic created with retention.bytes set; the client
// replaces its configs (legacy AlterConfigs) with retention.ms (and, on
// the cluster, min.insync.replicas=2) and describes the topic:
// retention.ms is set and retention.bytes back to its default.
func checkAlterConfigs(ctx context.Context, x *run) error {
	a, topic := x.d.admin(), x.topic()
	if err := x.tg.createTopic(ctx, topic, 1, map[string]string{"retention.bytes": "104857600"}); err != nil {
		return err
	}
	configs := map[string]string{"retention.ms": "7200000"}
	if x.tg.rf > 1 {
		configs["min.insync.replicas"] = "2"
	}
	if err := a.alterTopicConfig(ctx, x.tg, topic, configs); err != nil {
		return err
	}
	got, err := a.describeTopicConfig(ctx, x.tg, topic)
	if err != nil {
		return fmt.Errorf("describing it back: %w", err)
	}
	return wantConfigs(got, map[string]configValue{"retention.ms": set("7200000"), "retention.bytes": byDefault("-1"),
		"min.insync.replicas": x.tg.minISR()})
}

// checkBrokerConfigs: the client describes a broker's configs, which must
// include its node.id and the settings the harness serves with.
func checkBrokerConfigs(ctx context.Context, x *run) error {
	id := x.tg.ids()[0]
	got, err := x.d.admin().describeBrokerConfig(ctx, x.tg, id)
	if err != nil {
		return err
	}
	if v, ok := got["node.id"]; !ok || v.Value == nil || *v.Value != fmt.Sprint(id) {
		return fmt.Errorf("node.id is %s, want %d", strOrNull(v.Value), id)
	}
	for k, want := range map[string]string{"auto.create.topics.enable": "false", "group.initial.rebalance.delay.ms": "0", "num.partitions": "1"} {
		v, ok := got[k]
		if !ok || v.Value == nil || *v.Value != want {
			return fmt.Errorf("%s is %s, want %q (as served)", k, strOrNull(v.Value), want)
		}
	}
	return nil
}

// checkDeleteRecords: ten records; the client deletes those before offset
// 4, and then the answer's low watermark, the client's ListOffsets
// earliest, partlog's, and the client reading from the beginning must all
// start at 4.
func checkDeleteRecords(ctx context.Context, x *run) error {
	a, topic := x.d.admin(), x.topic()
	written, err := x.tg.createWithRecords(ctx, topic, 1, 10)
	if err != nil {
		return err
	}
	low, err := a.deleteRecords(ctx, x.tg, topic, 0, 4)
	if err != nil {
		return err
	}
	if low != -1 && low != 4 {
		return fmt.Errorf("DeleteRecords answered low watermark %d, want 4", low)
	}
	earliest, err := a.earliestOffset(ctx, x.tg, topic, 0)
	if err != nil {
		return fmt.Errorf("ListOffsets earliest: %w", err)
	}
	if earliest != 4 {
		return fmt.Errorf("ListOffsets earliest says %d after deleting before 4", earliest)
	}
	if e, err := x.tg.listOffset(ctx, topic, 0, kafka.EarliestTimestamp); err != nil || e != 4 {
		return fmt.Errorf("partlog's log start offset is %d (%v) after deleting before 4", e, err)
	}
	got, err := x.d.consume(ctx, x.tg, consumeSpec{Topic: topic, Partition: 0, From: start{Kind: "beginning"}, Count: 6})
	if err != nil {
		return fmt.Errorf("reading from the beginning: %w", err)
	}
	return sameRecords("read from the beginning", got, written[4:])
}

// checkDescribeCluster: the client describes the cluster: its brokers are
// the target's nodes, its controller one of them, and its id is not empty.
func checkDescribeCluster(ctx context.Context, x *run) error {
	info, err := x.d.admin().describeCluster(ctx, x.tg)
	if err != nil {
		return err
	}
	slices.Sort(info.Brokers)
	switch {
	case !slices.Equal(info.Brokers, x.tg.ids()):
		return fmt.Errorf("brokers %v, want %v", info.Brokers, x.tg.ids())
	case !slices.Contains(info.Brokers, info.ControllerID):
		return fmt.Errorf("controller id %d is none of the brokers %v", info.ControllerID, info.Brokers)
	case info.ClusterID != nil && *info.ClusterID == "":
		return fmt.Errorf("the cluster id is empty")
	}
	return nil
}

// checkDescribeLogDirs: a topic of two partitions, three records in
// partition 0; every replica's broker must describe both partitions, 0
// with bytes and 1 empty.
func checkDescribeLogDirs(ctx context.Context, x *run) error {
	a, topic := x.d.admin(), x.topic()
	if _, err := x.tg.createWithRecords(ctx, topic, 2, 3); err != nil {
		return err
	}
	md, err := x.tg.metadata(ctx, topic)
	if err != nil {
		return err
	}
	dirs, err := a.describeLogDirs(ctx, x.tg, topic)
	if err != nil {
		return err
	}
	for _, p := range md.Partitions {
		for _, r := range p.Replicas {
			size, ok := dirs[r][p.Partition]
			switch {
			case !ok:
				return fmt.Errorf("broker %d holds a replica of partition %d, but its log dirs do not (%v)", r, p.Partition, dirs[r])
			case p.Partition == 0 && size <= 0:
				return fmt.Errorf("broker %d describes partition 0, which holds 3 records, with size %d", r, size)
			case p.Partition == 1 && size != 0:
				return fmt.Errorf("broker %d describes the empty partition 1 with size %d", r, size)
			}
		}
	}
	return nil
}

// checkElectLeaders: on a single node every partition's preferred replica
// leads already, and a preferred election must say so
// (ELECTION_NOT_NEEDED) or succeed. On the cluster the preferred leader
// of a partition is stopped and restarted, so that another replica leads;
// the election must succeed and the preferred replica lead again.
func checkElectLeaders(ctx context.Context, x *run) error {
	a, topic := x.d.admin(), x.topic()
	if err := x.tg.createTopic(ctx, topic, 1, nil); err != nil {
		return err
	}
	md, err := x.tg.metadata(ctx, topic)
	if err != nil {
		return err
	}
	preferred := md.Partitions[0].Replicas[0]
	if len(x.tg.nodes) > 1 {
		if md.Partitions[0].Leader == preferred {
			if err := x.tg.nodes[preferred].terminate(); err != nil {
				return err
			}
			if err := x.tg.restart(ctx, preferred, topic); err != nil {
				return err
			}
		}
		md, err = x.tg.metadata(ctx, topic)
		if err != nil {
			return err
		}
		if md.Partitions[0].Leader == preferred {
			return fmt.Errorf("harness: node %d leads partition 0 again after its restart; nothing to elect", preferred)
		}
	}
	res, err := a.electPreferredLeaders(ctx, x.tg, topic, []int32{0})
	if err != nil {
		return err
	}
	switch e := res[0]; {
	case len(x.tg.nodes) == 1 && e != "" && e != "ELECTION_NOT_NEEDED":
		return fmt.Errorf("partition 0: %s, want ELECTION_NOT_NEEDED or success", e)
	case len(x.tg.nodes) > 1 && e != "":
		return fmt.Errorf("partition 0, led by %d rather than its preferred %d: %s", md.Partitions[0].Leader, preferred, e)
	}
	return x.tg.waitTopic(ctx, topic, fmt.Sprintf("the preferred replica %d to lead partition 0", preferred), func(tm transport.TopicMetadata) bool {
		return tm.Partitions[0].Leader == preferred
	})
}

// checkDescribeProducers: partlog's idempotent producer writes three
// records; the client must describe that producer, with the id, epoch and
// last sequence of the batches in the log.
func checkDescribeProducers(ctx context.Context, x *run) error {
	a, topic := x.d.admin(), x.topic()
	if _, err := x.tg.createWithRecords(ctx, topic, 1, 3); err != nil {
		return err
	}
	batches, err := x.tg.readLog(ctx, topic, 0)
	if err != nil {
		return err
	}
	last := batches[len(batches)-1]
	want := producerState{ProducerID: last.ProducerID, ProducerEpoch: int32(last.ProducerEpoch), LastSequence: last.BaseSequence + last.NumRecords - 1}
	got, err := a.describeProducers(ctx, x.tg, topic, 0)
	if err != nil {
		return err
	}
	if len(got) != 1 || got[0] != want {
		return fmt.Errorf("producers %+v, want [%+v]", got, want)
	}
	return nil
}

// checkOffsetForLeaderEpoch: five records; the end offset of the current
// leader epoch is the log end offset, 5.
func checkOffsetForLeaderEpoch(ctx context.Context, x *run) error {
	a, topic := x.d.admin(), x.topic()
	if _, err := x.tg.createWithRecords(ctx, topic, 1, 5); err != nil {
		return err
	}
	md, err := x.tg.metadata(ctx, topic)
	if err != nil {
		return err
	}
	epoch := md.Partitions[0].LeaderEpoch
	end, gotEpoch, err := a.offsetForLeaderEpoch(ctx, x.tg, topic, 0, epoch)
	if err != nil {
		return err
	}
	if end != 5 || gotEpoch != epoch {
		return fmt.Errorf("epoch %d ends at %d (epoch %d), want 5 (epoch %d)", epoch, end, gotEpoch, epoch)
	}
	return nil
}

// createWithRecords creates topic with partitions partitions and writes n
// records, key-i and value-i, with partlog's producer; it returns them as
// written.
func (tg *target) createWithRecords(ctx context.Context, topic string, partitions int32, n int) ([]rec, error) {
	if err := tg.createTopic(ctx, topic, partitions, nil); err != nil {
		return nil, err
	}
	return tg.produceWithPartlog(ctx, topic, keyedRecords(n))
}

// keyedRecords returns n records, key-i and value-i, to produce.
func keyedRecords(n int) []rec {
	recs := make([]rec, 0, n)
	for i := range n {
		recs = append(recs, rec{Key: fmt.Appendf(nil, "key-%d", i), Value: fmt.Appendf(nil, "value-%d", i)})
	}
	return recs
}

// checkReassign: on the cluster, the client moves a partition of three
// replicas to two of them in another order (the third is deleted at once:
// the two are in sync) and back to three (the added one catches up
// first); the metadata must show each assignment with a full ISR, the
// client must list no reassignment left, and the records must all be
// there.
func checkReassign(ctx context.Context, x *run) error {
	a, topic := x.d.admin(), x.topic()
	if _, err := x.tg.createWithRecords(ctx, topic, 1, 20); err != nil {
		return err
	}
	md, err := x.tg.metadata(ctx, topic)
	if err != nil {
		return err
	}
	r := md.Partitions[0].Replicas
	if len(r) != 3 {
		return fmt.Errorf("harness: partition 0 has replicas %v; the check wants three", r)
	}
	for _, target := range [][]int32{{r[1], r[0]}, {r[1], r[0], r[2]}} {
		if err := a.reassign(ctx, x.tg, topic, 0, target); err != nil {
			return fmt.Errorf("reassign to %v: %w", target, err)
		}
		if err := x.tg.waitTopic(ctx, topic, fmt.Sprintf("replicas %v, all in sync", target), func(tm transport.TopicMetadata) bool {
			p := tm.Partitions[0]
			return slices.Equal(p.Replicas, target) && len(p.ISR) == len(target)
		}); err != nil {
			return err
		}
	}
	left, err := a.reassigning(ctx, x.tg, topic)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("reassignments listed after they completed: %v", left)
	}
	return x.tg.waitEnds(ctx, topic, 1, 20)
}
