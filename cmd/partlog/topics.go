package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
)

const topicsHelp = `Usage: partlog topics <create|list|describe|alter|delete> --dir DIR [flags]

Topics manages a node's topics, as Kafka's kafka-topics.sh does:

  partlog topics create --dir D --topic T --partitions N [--replication-factor R] [--config k=v]...
  partlog topics list --dir D
  partlog topics describe --dir D [--topic T] [--under-replicated-partitions]
          [--unavailable-partitions] [--under-min-isr-partitions] [--at-min-isr-partitions]
  partlog topics alter --dir D --topic T [--partitions N] [--config k=v]... [--delete-config k]...
  partlog topics delete --dir D --topic T

The action may also be given as Kafka's tool takes it, as a flag: topics
--describe is topics describe.

Describe prints each partition's log start offset, log end offset and high
watermark beside Kafka's leader, replicas and in-sync replicas. Topic configs
take Kafka's names (retention.ms, segment.bytes, cleanup.policy, ...).

Alter raises a topic's partition count to N (a count only grows; a key's
partition may change, as its hash is taken modulo the count), and sets and
removes the topic's own configs, leaving the others as they are, as older
kafka-topics.sh did; 'partlog configs' (kafka-configs.sh) does the same and
describes them.

With any of the four partition filters, describe prints only the lines of
the partitions that match one of them, without the topics' lines, as
kafka-topics.sh does (nothing when none match):

  --under-replicated-partitions   fewer in-sync replicas than replicas
  --unavailable-partitions        no leader, or a leader that is not a live
                                  node, or a log that could not be opened
  --under-min-isr-partitions      fewer in-sync replicas than the topic's
                                  min.insync.replicas, or no leader
  --at-min-isr-partitions         exactly min.insync.replicas in sync

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
	var deleteConfigs listFlag
	fs.Var(&deleteConfigs, "delete-config", "alter: remove the topic's own value of config `key`, so that the default applies; repeat, or separate keys with commas, for more")
	actions := addActionFlags(fs, "topics", "create", "list", "describe", "alter", "delete")
	var filter partitionFilter
	fs.BoolVar(&filter.underReplicated, "under-replicated-partitions", false, "describe: only the partitions with fewer in-sync replicas than replicas")
	fs.BoolVar(&filter.unavailable, "unavailable-partitions", false, "describe: only the partitions without a live leader")
	fs.BoolVar(&filter.underMinISR, "under-min-isr-partitions", false, "describe: only the partitions with fewer in-sync replicas than min.insync.replicas")
	fs.BoolVar(&filter.atMinISR, "at-min-isr-partitions", false, "describe: only the partitions with exactly min.insync.replicas in sync")
	operands, err := parseFlags(fs, args, topicsHelp, stdout)
	if err != nil {
		return err
	}
	action, err := actions.only(operands)
	if err != nil {
		return err
	}
	if filter.any() && action != "describe" {
		return usageErrorf("topics", "--under-replicated-partitions, --unavailable-partitions, --under-min-isr-partitions and --at-min-isr-partitions go with describe, not %s", action)
	}
	switch action {
	case "create", "delete":
		if *topic == "" {
			return usageErrorf("topics", "%s needs --topic", action)
		}
		// Checked here, before they are cut to the wire's integers:
		// 2147483648 partitions would wrap to a negative count.
		if action == "create" && (*partitions < 1 || *partitions > math.MaxInt32) {
			return fmt.Errorf("topics: %w: --partitions %d is not a partition count (1 to %d)", kafka.ErrInvalidPartitions, *partitions, math.MaxInt32)
		}
		if action == "create" && (*replication < 1 || *replication > math.MaxInt16) {
			return fmt.Errorf("topics: %w: --replication-factor %d is not a replica count (1 to %d)", kafka.ErrInvalidReplicationFactor, *replication, math.MaxInt16)
		}
	case "alter":
		if err := checkAlter(fs, *topic, *partitions, len(configs)+len(deleteConfigs)); err != nil {
			return err
		}
	case "list", "describe":
	default:
		return usageErrorf("topics", "unknown action %q; say create, list, describe, alter or delete", action)
	}
	if len(deleteConfigs) > 0 && action != "alter" {
		return usageErrorf("topics", "--delete-config goes with alter, not %s", action)
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
	case "alter":
		var count int32
		if isSet(fs, "partitions") {
			count = int32(*partitions)
		}
		err = alterTopic(ctx, n, *topic, count, configs, deleteConfigs, stdout, stderr)
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
		if descs, err = n.describe(ctx, names...); err != nil {
			break
		}
		if !filter.any() {
			for _, d := range descs {
				writeTopicDescription(stdout, d)
			}
			break
		}
		if filter.live, err = n.liveNodes(ctx); err == nil {
			for _, d := range descs {
				for _, p := range d.Partitions {
					if filter.match(d, p) {
						writePartitionDescription(stdout, d.Name, p)
					}
				}
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
		writePartitionDescription(w, d.Name, p)
	}
}

// writePartitionDescription prints a partition's line of describe.
func writePartitionDescription(w io.Writer, topic string, p partlog.PartitionDescription) {
	if p.Offline != nil {
		// As kafka-topics.sh shows a partition of a failed log
		// directory, with why.
		fmt.Fprintf(w, "\tTopic: %s\tPartition: %d\tLeader: none\tReplicas: %s\tIsr: \tOffline: %s\tError: %v\n",
			topic, p.Partition, ids(p.Replicas), ids(p.Replicas), p.Offline)
		return
	}
	leader := "none"
	if p.Leader >= 0 {
		leader = strconv.Itoa(int(p.Leader))
	}
	fmt.Fprintf(w, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s\tLogStartOffset: %d\tLogEndOffset: %d\tHighWatermark: %d\n",
		topic, p.Partition, leader, ids(p.Replicas), ids(p.ISR), p.LogStartOffset, p.LogEndOffset, p.HighWatermark)
}

// partitionFilter is describe's partition filters, Kafka's
// --under-replicated-partitions and its kin; a partition that matches any
// one that is set is printed.
type partitionFilter struct {
	underReplicated, unavailable, underMinISR, atMinISR bool
	// live is the ids of the live nodes, or nil when every leader named
	// counts as live (a data directory opened in this process).
	live []int32
}

func (f partitionFilter) any() bool {
	return f.underReplicated || f.unavailable || f.underMinISR || f.atMinISR
}

// match reports whether p of topic d is one that the filters ask for, as
// kafka-topics.sh's PartitionDescription decides.
func (f partitionFilter) match(d partlog.TopicDescription, p partlog.PartitionDescription) bool {
	hasLeader := p.Offline == nil && p.Leader >= 0
	minISR, err := strconv.Atoi(d.Effective[partlog.ConfigMinInsyncReplicas])
	knowMinISR := err == nil
	isr := len(p.ISR)
	if p.Offline != nil {
		isr = 0
	}
	switch {
	case f.underReplicated && isr < len(p.Replicas):
		return true
	case f.unavailable && (!hasLeader || (f.live != nil && !slices.Contains(f.live, p.Leader))):
		return true
	case f.underMinISR && (!hasLeader || (knowMinISR && isr < minISR)):
		return true
	case f.atMinISR && knowMinISR && isr == minISR:
		return true
	}
	return false
}

func ids(xs []int32) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
