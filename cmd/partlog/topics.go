package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/transport"
)

const topicsHelp = `Usage: partlog topics <create|list|describe|delete> --dir DIR [flags]

Topics manages a node's topics, as Kafka's kafka-topics.sh does:

  partlog topics create --dir D --topic T --partitions N [--replication-factor R] [--config k=v]...
  partlog topics list --dir D
  partlog topics describe --dir D [--topic T]
  partlog topics delete --dir D --topic T

Describe prints each partition's log start offset, log end offset and high
watermark beside Kafka's leader, replicas and in-sync replicas. Topic configs
take Kafka's names (retention.ms, segment.bytes, cleanup.policy, ...).

Instead of --dir DIR, --bootstrap-server HOST:PORT reaches a node that
'partlog serve' (or a program embedding partlog) serves over TCP.
`

// runTopics runs "partlog topics".
func runTopics(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("topics")
	where := addTargetFlags(fs)
	topic := fs.String("topic", "", "the topic's `name`")
	partitions := fs.Int("partitions", 1, "how many `partitions` a new topic has")
	replication := fs.Int("replication-factor", 1, "how many `replicas` each partition has")
	configs := configFlag{}
	fs.Var(configs, "config", "a topic config `key=value`; repeat for more")
	operands, err := parseFlags(fs, args, topicsHelp, stdout)
	if err != nil {
		return err
	}
	if len(operands) != 1 {
		return usageErrorf("topics", "say one of create, list, describe, delete")
	}
	action := operands[0]
	switch action {
	case "create", "delete":
		if *topic == "" {
			return usageErrorf("topics", "%s needs --topic", action)
		}
		// Checked here, before they are cut to the wire's integers:
		// 2147483648 partitions would wrap to a negative count.
		if action == "create" && (*partitions < 1 || *partitions > math.MaxInt32) {
			return fmt.Errorf("topics: %w: --partitions %d is not a partition count (1 to %d)", transport.ErrInvalidPartitions, *partitions, math.MaxInt32)
		}
		if action == "create" && (*replication < 1 || *replication > math.MaxInt16) {
			return fmt.Errorf("topics: %w: --replication-factor %d is not a replica count (1 to %d)", transport.ErrInvalidReplicationFactor, *replication, math.MaxInt16)
		}
	case "list", "describe":
	default:
		return usageErrorf("topics", "unknown action %q; say create, list, describe or delete", action)
	}
	n, err := openTarget("topics", where, stderr)
	if err != nil {
		return err
	}
	defer n.close()
	ctx := context.Background()
	switch action {
	case "create":
		err = n.createTopic(ctx, partlog.NewTopic{Name: *topic, Partitions: int32(*partitions), ReplicationFactor: int16(*replication), Configs: configs})
		if err == nil {
			fmt.Fprintf(stdout, "Created topic %s.\n", *topic)
		}
	case "delete":
		if err = n.deleteTopic(ctx, *topic); err == nil {
			fmt.Fprintf(stdout, "Deleted topic %s.\n", *topic)
		}
	case "list":
		var names []string
		names, err = n.listTopics(ctx)
		for _, name := range names {
			fmt.Fprintln(stdout, name)
		}
	case "describe":
		var names []string
		if *topic != "" {
			names = []string{*topic}
		}
		var descs []partlog.TopicDescription
		if descs, err = n.describe(ctx, names...); err == nil {
			for _, d := range descs {
				writeTopicDescription(stdout, d)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("topics: %w", err)
	}
	return n.close()
}

// writeTopicDescription prints a topic as kafka-topics.sh --describe does,
// with each partition's offsets added.
func writeTopicDescription(w io.Writer, d partlog.TopicDescription) {
	var configs []string
	for _, k := range slices.Sorted(maps.Keys(d.Configs)) {
		configs = append(configs, k+"="+d.Configs[k])
	}
	fmt.Fprintf(w, "Topic: %s\tTopicId: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n",
		d.Name, d.ID, len(d.Partitions), d.ReplicationFactor, strings.Join(configs, ","))
	for _, p := range d.Partitions {
		if p.Offline != nil {
			// As kafka-topics.sh shows a partition of a failed log
			// directory, with why.
			fmt.Fprintf(w, "\tTopic: %s\tPartition: %d\tLeader: none\tReplicas: %s\tIsr: \tOffline: %s\tError: %v\n",
				d.Name, p.Partition, ids(p.Replicas), ids(p.Replicas), p.Offline)
			continue
		}
		fmt.Fprintf(w, "\tTopic: %s\tPartition: %d\tLeader: %d\tReplicas: %s\tIsr: %s\tLogStartOffset: %d\tLogEndOffset: %d\tHighWatermark: %d\n",
			d.Name, p.Partition, p.Leader, ids(p.Replicas), ids(p.ISR), p.LogStartOffset, p.LogEndOffset, p.HighWatermark)
	}
}

func ids(xs []int32) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
