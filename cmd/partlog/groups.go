package main

// groups lists and describes consumer groups and resets their offsets, as
// Kafka's kafka-consumer-groups.sh does, on a node's data directory: the
// groups are those kept in its __consumer_offsets.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/transport"
)

const groupsHelp = `Usage: partlog groups <list|describe|reset-offsets|delete> --dir DIR [flags]

Groups lists and describes consumer groups and resets their committed
offsets, as Kafka's kafka-consumer-groups.sh does:

  partlog groups list --dir D
  partlog groups describe --dir D --group G [--members | --state]
  partlog groups reset-offsets --dir D --group G --topic T
          (--to-earliest | --to-latest | --to-offset N) [--dry-run | --execute]
  partlog groups delete --dir D --group G

Describe prints, for each partition the group has a committed offset for or
a member is assigned, the committed offset (CURRENT-OFFSET), the log end
offset, the lag between them, and the member that owns it; --members prints
the members and how many partitions each has, --state the group's state,
assignor and member count.

Reset-offsets sets the group's committed offsets for every partition of
TOPIC: to the log start offset (--to-earliest), the log end offset
(--to-latest) or N (--to-offset, kept within the two). Like Kafka it only
prints the new offsets unless --execute is given, and it refuses a group
that has members: offsets can only be reset while the group is inactive
(Empty). A group whose consumers crashed keeps their membership until their
session timeout passes on a running node.

Delete deletes a group without members and its committed offsets, writing
tombstones to __consumer_offsets.

Instead of --dir DIR, --bootstrap-server HOST:PORT reaches a node that
'partlog serve' (or a program embedding partlog) serves over TCP.
`

// runGroups runs "partlog groups".
func runGroups(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("groups")
	where := addTargetFlags(fs)
	group := fs.String("group", "", "the consumer `group`")
	topic := fs.String("topic", "", "the `topic` whose offsets reset-offsets sets")
	members := fs.Bool("members", false, "describe: print the members")
	state := fs.Bool("state", false, "describe: print the group's state")
	toEarliest := fs.Bool("to-earliest", false, "reset-offsets: to the log start offset")
	toLatest := fs.Bool("to-latest", false, "reset-offsets: to the log end offset")
	toOffset := fs.Int64("to-offset", -1, "reset-offsets: to `offset`")
	dryRun := fs.Bool("dry-run", false, "reset-offsets: print the new offsets only (the default)")
	execute := fs.Bool("execute", false, "reset-offsets: commit the new offsets")
	operands, err := parseFlags(fs, args, groupsHelp, stdout)
	if err != nil {
		return err
	}
	if len(operands) != 1 {
		return usageErrorf("groups", "say one of list, describe, reset-offsets, delete")
	}
	action := operands[0]
	switch action {
	case "list":
	case "describe":
		if *group == "" {
			return usageErrorf("groups", "describe needs --group")
		}
		if *members && *state {
			return usageErrorf("groups", "--members and --state cannot both be given")
		}
	case "delete":
		if *group == "" {
			return usageErrorf("groups", "delete needs --group")
		}
	case "reset-offsets":
		n := 0
		for _, b := range []bool{*toEarliest, *toLatest, *toOffset >= 0} {
			if b {
				n++
			}
		}
		switch {
		case *group == "" || *topic == "":
			return usageErrorf("groups", "reset-offsets needs --group and --topic")
		case n != 1:
			return usageErrorf("groups", "reset-offsets needs one of --to-earliest, --to-latest, --to-offset N")
		case *dryRun && *execute:
			return usageErrorf("groups", "--dry-run and --execute cannot both be given")
		}
	default:
		return usageErrorf("groups", "unknown action %q; say list, describe, reset-offsets or delete", action)
	}
	t, err := openTarget("groups", where, stderr)
	if err != nil {
		return err
	}
	gc, err := t.groups()
	if err != nil {
		t.close()
		return fmt.Errorf("groups: %w", err)
	}
	n := groupTarget{t, gc}
	defer n.Close()
	ctx := context.Background()
	switch action {
	case "list":
		err = listGroups(ctx, n, stdout)
	case "describe":
		err = describeGroup(ctx, n, *group, *members, *state, stdout)
	case "delete":
		var resp *transport.DeleteGroupsResponse
		if resp, err = n.DeleteGroups(ctx, &transport.DeleteGroupsRequest{Groups: []string{*group}}); err == nil {
			if err = resp.Results[0].Err; err == nil {
				fmt.Fprintf(stdout, "Deletion of requested consumer groups ('%s') was successful.\n", *group)
			}
		}
	case "reset-offsets":
		to := resetTo{earliest: *toEarliest, latest: *toLatest, offset: *toOffset}
		if !*execute {
			fmt.Fprintln(stderr, "WARN: No action will be performed as the --execute option is missing. In a future major release, the default behavior of this command will be to prompt the user before executing the reset rather than doing a dry run. You should add the --dry-run option explicitly if you are scripting this command and want to keep the current default behavior without prompting.")
		}
		err = resetOffsets(ctx, n, *group, *topic, to, *execute, stdout)
	}
	if err != nil {
		return fmt.Errorf("groups: %w", err)
	}
	return n.Close()
}

// groupTarget is a target with its group calls.
type groupTarget struct {
	*target
	transport.GroupClient
}

// DescribeTopics describes topics, which must exist.
func (g groupTarget) DescribeTopics(names ...string) ([]partlog.TopicDescription, error) {
	return g.describe(context.Background(), names...)
}

// NodeID returns the id of the node that coordinates the groups.
func (g groupTarget) NodeID() int32 { return g.nodeID(context.Background()) }

// Close closes the target.
func (g groupTarget) Close() error { return g.close() }

func listGroups(ctx context.Context, n groupTarget, w io.Writer) error {
	resp, err := n.ListGroups(ctx, &transport.ListGroupsRequest{})
	if err != nil {
		return err
	}
	if resp.Err != nil {
		return resp.Err
	}
	for _, g := range resp.Groups {
		fmt.Fprintln(w, g.Group)
	}
	return nil
}

// groupPartition is a row of describe: a partition, its offsets and owner.
type groupPartition struct {
	tp        consumer.TopicPartition
	committed int64 // -1 when none
	logEnd    int64 // -1 when the topic is gone
	member    *transport.DescribedMember
}

func describeGroup(ctx context.Context, n groupTarget, group string, members, state bool, w io.Writer) error {
	dresp, err := n.DescribeGroups(ctx, &transport.DescribeGroupsRequest{Groups: []string{group}})
	if err != nil {
		return err
	}
	g := dresp.Groups[0]
	if g.Err != nil {
		return g.Err
	}
	if g.State == "Dead" {
		return fmt.Errorf("%w: consumer group '%s' does not exist", transport.ErrGroupIDNotFound, group)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	defer tw.Flush()
	if state {
		fmt.Fprintln(tw, "GROUP\tCOORDINATOR (ID)\tASSIGNMENT-STRATEGY\tSTATE\t#MEMBERS")
		fmt.Fprintf(tw, "%s\tlocalhost (%d)\t%s\t%s\t%d\n", group, n.NodeID(), dash(g.Protocol), g.State, len(g.Members))
		return nil
	}
	if members {
		if len(g.Members) == 0 {
			fmt.Fprintf(w, "Consumer group '%s' has no active members.\n", group)
			return nil
		}
		fmt.Fprintln(tw, "GROUP\tCONSUMER-ID\tHOST\tCLIENT-ID\t#PARTITIONS")
		for _, m := range g.Members {
			a, _ := consumer.DecodeAssignment(m.Assignment)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", group, m.MemberID, dash(m.ClientHost), m.ClientID, len(a.Partitions))
		}
		return nil
	}
	rows, err := groupPartitions(ctx, n, group, g)
	if err != nil {
		return err
	}
	if len(g.Members) == 0 {
		fmt.Fprintf(w, "Consumer group '%s' has no active members.\n\n", group)
	}
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\tHOST\tCLIENT-ID")
	for _, r := range rows {
		cur, end, lag := "-", "-", "-"
		if r.committed >= 0 {
			cur = strconv.FormatInt(r.committed, 10)
		}
		if r.logEnd >= 0 {
			end = strconv.FormatInt(r.logEnd, 10)
		}
		if r.committed >= 0 && r.logEnd >= 0 {
			lag = strconv.FormatInt(max(r.logEnd-r.committed, 0), 10)
		}
		id, host, client := "-", "-", "-"
		if r.member != nil {
			id, host, client = r.member.MemberID, dash(r.member.ClientHost), r.member.ClientID
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", group, r.tp.Topic, r.tp.Partition, cur, end, lag, id, host, client)
	}
	return nil
}

// groupPartitions returns the partitions a group has committed offsets for
// or has assigned, sorted, with their log end offsets (the high
// watermark, as Kafka's tool reports it).
func groupPartitions(ctx context.Context, n groupTarget, group string, g transport.DescribedGroup) ([]groupPartition, error) {
	fresp, err := n.OffsetFetch(ctx, &transport.OffsetFetchRequest{Group: group})
	if err != nil {
		return nil, err
	}
	if fresp.Err != nil {
		return nil, fresp.Err
	}
	byTP := map[consumer.TopicPartition]*groupPartition{}
	row := func(tp consumer.TopicPartition) *groupPartition {
		r := byTP[tp]
		if r == nil {
			r = &groupPartition{tp: tp, committed: -1, logEnd: -1}
			byTP[tp] = r
		}
		return r
	}
	for _, t := range fresp.Topics {
		for _, p := range t.Partitions {
			row(consumer.TopicPartition{Topic: t.Topic, Partition: p.Partition}).committed = p.Offset
		}
	}
	for i := range g.Members {
		m := &g.Members[i]
		a, err := consumer.DecodeAssignment(m.Assignment)
		if err != nil {
			continue // another protocol's assignment
		}
		for _, tp := range a.Partitions {
			row(tp).member = m
		}
	}
	ends := map[string]partlog.TopicDescription{}
	rows := make([]groupPartition, 0, len(byTP))
	for tp, r := range byTP {
		d, ok := ends[tp.Topic]
		if !ok {
			if ds, err := n.DescribeTopics(tp.Topic); err == nil {
				d = ds[0]
			}
			ends[tp.Topic] = d
		}
		if int(tp.Partition) < len(d.Partitions) {
			r.logEnd = d.Partitions[tp.Partition].HighWatermark
		}
		rows = append(rows, *r)
	}
	slices.SortFunc(rows, func(a, b groupPartition) int {
		return cmp.Or(cmp.Compare(a.tp.Topic, b.tp.Topic), cmp.Compare(a.tp.Partition, b.tp.Partition))
	})
	return rows, nil
}

// resetTo is where reset-offsets moves offsets.
type resetTo struct {
	earliest, latest bool
	offset           int64
}

func resetOffsets(ctx context.Context, n groupTarget, group, topic string, to resetTo, execute bool, w io.Writer) error {
	dresp, err := n.DescribeGroups(ctx, &transport.DescribeGroupsRequest{Groups: []string{group}})
	if err != nil {
		return err
	}
	if g := dresp.Groups[0]; g.State != "Empty" && g.State != "Dead" {
		return fmt.Errorf("%w: assignments can only be reset if the group '%s' is inactive, but the current state is %s (%d members)",
			transport.ErrNonEmptyGroup, group, g.State, len(g.Members))
	}
	ds, err := n.DescribeTopics(topic)
	if err != nil {
		return err
	}
	req := &transport.OffsetCommitRequest{Group: group, GenerationID: transport.NoGeneration,
		Topics: []transport.OffsetCommitTopic{{Topic: topic}}}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tNEW-OFFSET")
	for _, p := range ds[0].Partitions {
		off := to.offset
		switch {
		case to.earliest:
			off = p.LogStartOffset
		case to.latest:
			off = p.HighWatermark
		}
		off = min(max(off, p.LogStartOffset), p.HighWatermark)
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, transport.OffsetCommitPartition{Partition: p.Partition, Offset: off, LeaderEpoch: -1})
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", group, topic, p.Partition, off)
	}
	tw.Flush()
	if !execute {
		return nil
	}
	resp, err := n.OffsetCommit(ctx, req)
	if err != nil {
		return err
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

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
