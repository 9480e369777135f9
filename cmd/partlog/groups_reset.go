package main

// groups_reset.go is "groups reset-offsets": where Kafka's
// kafka-consumer-groups.sh --reset-offsets moves a group's committed
// offsets, for which partitions, and the plan it prints.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// resetSpec is where reset-offsets moves offsets: kind is the flag that
// says so, without its dashes.
type resetSpec struct {
	kind      string // to-earliest, to-latest, to-offset, shift-by, to-datetime
	offset    int64  // --to-offset
	shift     int64  // --shift-by
	timestamp int64  // --to-datetime, in ms
}

// topicScope is a --topic of reset-offsets: a topic, and the partitions
// listed after its colon (nil for all of them).
type topicScope struct {
	topic      string
	partitions []int32
}

// parseTopicScope parses TOPIC or TOPIC:P,P,..., as Kafka's tool takes
// --topic.
func parseTopicScope(s string) (topicScope, error) {
	topic, list, ok := strings.Cut(s, ":")
	if topic == "" {
		return topicScope{}, errors.New("no topic")
	}
	ts := topicScope{topic: topic}
	if !ok {
		return ts, nil
	}
	for p := range strings.SplitSeq(list, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || v < 0 {
			return topicScope{}, fmt.Errorf("%q is not a partition", p)
		}
		ts.partitions = append(ts.partitions, int32(v))
	}
	return ts, nil
}

// kafkaDatetimeLayouts are the forms of --to-datetime, as Kafka's
// Utils.getDateTime parses them: milliseconds are required, and a zone, if
// any, is Z, +hh:mm, +hhmm or +hh.
var kafkaDatetimeLayouts = []string{
	"2006-01-02T15:04:05.000Z07:00",
	"2006-01-02T15:04:05.000Z0700",
	"2006-01-02T15:04:05.000Z07",
}

// parseKafkaDatetime parses a --to-datetime value. Like Kafka's tool, it
// reads a time without a zone as UTC.
func parseKafkaDatetime(s string) (time.Time, error) {
	date, clock, ok := strings.Cut(s, "T")
	if !ok || date == "" {
		return time.Time{}, errors.New("not YYYY-MM-DDTHH:mm:SS.sss: no T between the date and the time")
	}
	if !strings.ContainsAny(clock, "+-Z") {
		s += "Z" // UTC, as Kafka's Utils.getDateTime reads it
	}
	for _, layout := range kafkaDatetimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not YYYY-MM-DDTHH:mm:SS.sss, optionally followed by a zone (Z, +02:00, +0200, +02)")
}

// resetRow is a row of reset-offsets' plan: a partition and its new offset.
type resetRow struct {
	group  string
	tp     kafka.TopicPartition
	offset int64
}

// resetOffsets plans the groups' new offsets, prints the plan as Kafka's
// tool does, and with execute commits them. A group that cannot be reset
// (it has members, a --shift-by partition has no committed offset) is
// reported and the others are still reset.
func resetOffsets(ctx context.Context, n groupTarget, groups []string, scope []topicScope, spec resetSpec, execute bool, w, stderr io.Writer) error {
	var (
		rows []resetRow
		errs []error
	)
	describe := n.describer()
	planned := map[string][]resetRow{}
	for _, g := range groups {
		gr, err := planReset(ctx, n, g, scope, spec, describe, stderr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		planned[g] = gr
		rows = append(rows, gr...)
	}
	if len(rows) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tNEW-OFFSET")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", r.group, r.tp.Topic, r.tp.Partition, r.offset)
		}
		tw.Flush()
	}
	if execute {
		for _, g := range groups {
			if err := commitReset(ctx, n, g, planned[g]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// planReset returns a group's new offsets.
func planReset(ctx context.Context, n groupTarget, group string, scope []topicScope, spec resetSpec,
	describe func(string) (partlog.TopicDescription, error), stderr io.Writer) ([]resetRow, error) {
	dresp, err := n.DescribeGroups(ctx, &transport.DescribeGroupsRequest{Groups: []string{group}})
	if err != nil {
		return nil, err
	}
	if g := dresp.Groups[0]; g.State != "Empty" && g.State != "Dead" {
		return nil, fmt.Errorf("%w: assignments can only be reset if the group '%s' is inactive, but the current state is %s (%d members)",
			kafka.ErrNonEmptyGroup, group, g.State, len(g.Members))
	}
	fresp, err := n.OffsetFetch(ctx, &transport.OffsetFetchRequest{Group: group})
	if err == nil {
		err = fresp.Err
	}
	if err != nil {
		return nil, fmt.Errorf("group %s: %w", group, err)
	}
	committed := map[kafka.TopicPartition]int64{}
	for _, t := range fresp.Topics {
		for _, p := range t.Partitions {
			if p.Err == nil && p.Offset >= 0 {
				committed[kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.Offset
			}
		}
	}

	// The partitions to reset, each with its description.
	type target struct {
		tp kafka.TopicPartition
		p  partlog.PartitionDescription
	}
	var targets []target
	add := func(topic string, partition int32) error {
		d, err := describe(topic)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(d.Partitions, func(p partlog.PartitionDescription) bool { return p.Partition == partition })
		if i < 0 {
			return fmt.Errorf("topic %s has no partition %d", topic, partition)
		}
		targets = append(targets, target{kafka.TopicPartition{Topic: topic, Partition: partition}, d.Partitions[i]})
		return nil
	}
	if scope == nil { // --all-topics
		tps := slices.SortedFunc(func(yield func(kafka.TopicPartition) bool) {
			for tp := range committed {
				if !yield(tp) {
					return
				}
			}
		}, func(a, b kafka.TopicPartition) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		for _, tp := range tps {
			if err := add(tp.Topic, tp.Partition); err != nil {
				return nil, fmt.Errorf("group %s: %w", group, err)
			}
		}
	}
	for _, ts := range scope {
		partitions := ts.partitions
		if partitions == nil {
			d, err := describe(ts.topic)
			if err != nil {
				return nil, err
			}
			for _, p := range d.Partitions {
				partitions = append(partitions, p.Partition)
			}
		}
		for _, p := range partitions {
			if err := add(ts.topic, p); err != nil {
				return nil, err
			}
		}
	}

	var atTime map[kafka.TopicPartition]int64
	if spec.kind == "to-datetime" {
		var tps []kafka.TopicPartition
		for _, t := range targets {
			tps = append(tps, t.tp)
		}
		if atTime, err = offsetsForTime(ctx, n, tps, spec.timestamp); err != nil {
			return nil, fmt.Errorf("group %s: %w", group, err)
		}
	}
	rows := make([]resetRow, 0, len(targets))
	for _, t := range targets {
		start, end := t.p.LogStartOffset, t.p.HighWatermark
		var off int64
		switch spec.kind {
		case "to-earliest":
			off = start
		case "to-latest":
			off = end
		case "to-offset":
			off = spec.offset
		case "shift-by":
			c, ok := committed[t.tp]
			if !ok {
				return nil, fmt.Errorf("group %s: cannot shift the offset of %s-%d: the group has no committed offset for it", group, t.tp.Topic, t.tp.Partition)
			}
			off = c + spec.shift
		case "to-datetime":
			var ok bool
			if off, ok = atTime[t.tp]; !ok || off < 0 {
				fmt.Fprintf(stderr, "Warn: Partition %d from topic %s is empty. Falling back to latest known offset.\n", t.tp.Partition, t.tp.Topic)
				off = end
			}
		}
		rows = append(rows, resetRow{group: group, tp: t.tp, offset: min(max(off, start), end)})
	}
	return rows, nil
}

// offsetsForTime returns the first offset of each partition whose record's
// timestamp is at or after ts (ms), or -1 where there is none: ListOffsets
// by timestamp, as Kafka's tool asks for it.
func offsetsForTime(ctx context.Context, n groupTarget, tps []kafka.TopicPartition, ts int64) (map[kafka.TopicPartition]int64, error) {
	req := &transport.ListOffsetsRequest{ReplicaID: kafka.ConsumerReplicaID}
	for _, tp := range tps {
		i := slices.IndexFunc(req.Topics, func(lt transport.ListOffsetsTopic) bool { return lt.Topic == tp.Topic })
		if i < 0 {
			req.Topics = append(req.Topics, transport.ListOffsetsTopic{Topic: tp.Topic})
			i = len(req.Topics) - 1
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, transport.ListOffsetsPartition{Partition: tp.Partition, CurrentLeaderEpoch: -1, Timestamp: ts})
	}
	resp, err := n.client().ListOffsets(ctx, req)
	if err != nil {
		return nil, err
	}
	out := map[kafka.TopicPartition]int64{}
	for _, tr := range resp.Topics {
		for _, pr := range tr.Partitions {
			if pr.Err != nil {
				return nil, fmt.Errorf("%s-%d: %w", tr.Topic, pr.Partition, pr.Err)
			}
			out[kafka.TopicPartition{Topic: tr.Topic, Partition: pr.Partition}] = pr.Offset
		}
	}
	return out, nil
}

// commitReset commits a group's new offsets.
func commitReset(ctx context.Context, n groupTarget, group string, rows []resetRow) error {
	if len(rows) == 0 {
		return nil
	}
	req := &transport.OffsetCommitRequest{Group: group, GenerationID: transport.NoGeneration}
	for _, r := range rows {
		i := slices.IndexFunc(req.Topics, func(t transport.OffsetCommitTopic) bool { return t.Topic == r.tp.Topic })
		if i < 0 {
			req.Topics = append(req.Topics, transport.OffsetCommitTopic{Topic: r.tp.Topic})
			i = len(req.Topics) - 1
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, transport.OffsetCommitPartition{Partition: r.tp.Partition, Offset: r.offset, LeaderEpoch: -1})
	}
	resp, err := n.OffsetCommit(ctx, req)
	if err != nil {
		return fmt.Errorf("group %s: %w", group, err)
	}
	var errs []error
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.Err != nil {
				errs = append(errs, fmt.Errorf("group %s: %s-%d: %w", group, t.Topic, p.Partition, p.Err))
			}
		}
	}
	return errors.Join(errs...)
}
