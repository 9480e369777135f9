package main

// share_groups_reset.go is "share-groups reset-offsets" and
// "share-groups delete-offsets": where kafka-share-groups.sh
// --reset-offsets moves a share group's start offsets, and its
// --delete-offsets.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// resetOffsets plans the group's new start offsets and prints them as
// Kafka's tool does (GROUP TOPIC PARTITION NEW-OFFSET); with execute it
// first sets them with AlterShareGroupOffsets. A group with members is
// refused, as Kafka's tool refuses it, before anything is planned.
func (n shareTarget) resetOffsets(ctx context.Context, group string, a shareArgs, w, stderr io.Writer) error {
	resp, err := n.share.ShareGroupDescribe(ctx, &transport.ShareGroupDescribeRequest{Groups: []string{group}})
	if err != nil {
		return err
	}
	if len(resp.Groups) > 0 {
		// A group that does not exist yet is made by the alter, as
		// Kafka's tool lets it be (EMPTY or DEAD go on).
		if d := resp.Groups[0]; d.Err == nil && d.State != "Empty" && d.State != "Dead" {
			return kafkaMessage(kafka.ErrNonEmptyGroup, "Share group '%s' is not empty.", group)
		}
	}
	rows, err := n.planShareReset(ctx, group, a.scope, a.spec, stderr)
	if err != nil {
		return err
	}
	if a.execute && len(rows) > 0 {
		if err := n.alterStartOffsets(ctx, group, rows); err != nil {
			return err
		}
	}
	if len(rows) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tNEW-OFFSET")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", r.group, r.tp.Topic, r.tp.Partition, r.offset)
		}
		tw.Flush()
	}
	return nil
}

// planShareReset returns the group's new start offsets: for the
// partitions scope names, or for every partition the group has share
// state for when scope is nil (--all-topics), in that order.
func (n shareTarget) planShareReset(ctx context.Context, group string, scope []topicScope, spec resetSpec, stderr io.Writer) ([]resetRow, error) {
	var tps []kafka.TopicPartition
	if scope == nil {
		current, err := n.startOffsets(ctx, group, nil)
		if err != nil {
			return nil, err
		}
		for _, r := range current {
			tps = append(tps, kafka.TopicPartition{Topic: r.topic, Partition: r.Partition})
		}
	}
	describe := n.describer()
	for _, ts := range scope {
		d, err := describe(ts.topic)
		if err != nil {
			return nil, err
		}
		partitions := ts.partitions
		if partitions == nil {
			for _, p := range d.Partitions {
				partitions = append(partitions, p.Partition)
			}
		}
		for _, p := range partitions {
			tps = append(tps, kafka.TopicPartition{Topic: ts.topic, Partition: p})
		}
	}
	var atTime map[kafka.TopicPartition]int64
	if spec.kind == "to-datetime" && len(tps) > 0 {
		var err error
		if atTime, err = offsetsForTime(ctx, n.groupTarget, tps, spec.timestamp); err != nil {
			return nil, err
		}
	}
	rows := make([]resetRow, 0, len(tps))
	for _, tp := range tps {
		d, err := describe(tp.Topic)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(d.Partitions, func(p partlog.PartitionDescription) bool { return p.Partition == tp.Partition })
		if i < 0 {
			return nil, fmt.Errorf("topic %s has no partition %d", tp.Topic, tp.Partition)
		}
		start, end := d.Partitions[i].LogStartOffset, d.Partitions[i].HighWatermark
		var off int64
		switch spec.kind {
		case "to-earliest":
			off = start
		case "to-latest":
			off = end
		case "to-offset":
			off = min(max(spec.offset, start), end)
		case "to-datetime":
			var ok bool
			if off, ok = atTime[tp]; !ok || off < 0 {
				fmt.Fprintf(stderr, "Warn: Partition %d from topic %s is empty. Falling back to latest known offset.\n", tp.Partition, tp.Topic)
				off = end
			}
		}
		rows = append(rows, resetRow{group: group, tp: tp, offset: off})
	}
	return rows, nil
}

// alterStartOffsets sets the group's start offsets to rows'.
func (n shareTarget) alterStartOffsets(ctx context.Context, group string, rows []resetRow) error {
	req := &transport.AlterShareGroupOffsetsRequest{Group: group}
	for _, r := range rows {
		i := slices.IndexFunc(req.Topics, func(t transport.AlterShareGroupOffsetsTopic) bool { return t.Topic == r.tp.Topic })
		if i < 0 {
			req.Topics = append(req.Topics, transport.AlterShareGroupOffsetsTopic{Topic: r.tp.Topic})
			i = len(req.Topics) - 1
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, transport.AlterShareGroupOffsetsPartition{Partition: r.tp.Partition, StartOffset: r.offset})
	}
	resp, err := n.offsets.AlterShareGroupOffsets(ctx, req)
	if err != nil {
		return err
	}
	if errors.Is(resp.Err, kafka.ErrNonEmptyGroup) {
		// A member joined between the check and the alter.
		return kafkaMessage(resp.Err, "Share group '%s' is not empty.", group)
	}
	if resp.Err != nil {
		return fmt.Errorf("share group '%s': %w", group, resp.Err)
	}
	var errs []error
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.Err != nil {
				errs = append(errs, fmt.Errorf("%s-%d: %w", t.Topic, p.Partition, p.Err))
			}
		}
	}
	return errors.Join(errs...)
}

// deleteOffsets deletes the share state of the group's topics and prints
// what kafka-share-groups.sh --delete-offsets prints: an error the group
// as a whole met, then TOPIC STATUS for each topic.
func (n shareTarget) deleteOffsets(ctx context.Context, group string, topics []string, w io.Writer) error {
	slices.Sort(topics)
	topics = slices.Compact(topics)
	resp, err := n.offsets.DeleteShareGroupOffsets(ctx, &transport.DeleteShareGroupOffsetsRequest{Group: group, Topics: topics})
	if err != nil {
		return err
	}
	status := map[string]error{}
	for _, t := range topics {
		status[t] = resp.Err // the group's error is every topic's, as Kafka's futures fail
	}
	for _, t := range resp.Topics {
		if resp.Err == nil {
			status[t.Topic] = t.Err
		}
	}
	if resp.Err != nil {
		fmt.Fprintf(w, "\nError: %v\n", resp.Err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tSTATUS")
	var errs []error
	for _, t := range topics {
		if err := status[t]; err != nil {
			fmt.Fprintf(tw, "%s\tError: %v\n", t, err)
			errs = append(errs, fmt.Errorf("topic %s: %w", t, err))
			continue
		}
		fmt.Fprintf(tw, "%s\tSuccessful\n", t)
	}
	tw.Flush()
	if resp.Err != nil {
		return fmt.Errorf("share group '%s': %w", group, resp.Err)
	}
	return errors.Join(errs...)
}

// isoDuration is the ISO 8601 duration --by-duration takes, as Java's
// Duration.parse reads it: days, hours, minutes and seconds (with a
// fraction).
var isoDuration = regexp.MustCompile(`^[Pp](?:(\d+)[Dd])?(?:[Tt](?:(\d+)[Hh])?(?:(\d+)[Mm])?(?:(\d+(?:\.\d{1,9})?)[Ss])?)?$`)

// parseISODuration parses a --by-duration value.
func parseISODuration(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || s == "P" || s == "PT" || s[len(s)-1] == 'T' || s[len(s)-1] == 't' {
		return 0, errors.New("not an ISO 8601 duration PnDTnHnMnS, as P1DT2H30M or PT0.5S")
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute} {
		if m[i+1] != "" {
			v, err := strconv.ParseInt(m[i+1], 10, 64)
			if err != nil {
				return 0, err
			}
			d += time.Duration(v) * unit
		}
	}
	if m[4] != "" {
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return 0, err
		}
		d += time.Duration(v * float64(time.Second))
	}
	return d, nil
}
