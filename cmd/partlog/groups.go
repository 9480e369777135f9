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
	"strings"
	"text/tabwriter"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

const groupsHelp = `Usage: partlog groups <list|describe|reset-offsets|delete> --dir DIR [flags]

Groups lists and describes consumer groups and resets their committed
offsets, as Kafka's kafka-consumer-groups.sh does:

  partlog groups list --dir D
  partlog groups describe --dir D (--group G... | --all-groups) [--members | --state]
  partlog groups reset-offsets --dir D (--group G... | --all-groups)
          (--topic T[:P,P...]... | --all-topics)
          (--to-earliest | --to-latest | --to-offset N | --shift-by N |
           --to-datetime YYYY-MM-DDTHH:mm:SS.sss) [--dry-run | --execute]
  partlog groups delete --dir D (--group G... | --all-groups)

The action may also be given as Kafka's tool takes it, as a flag: groups
--describe is groups describe. --group may be repeated; --all-groups names
every group the node knows.

Describe prints, for each partition the group has a committed offset for or
a member is assigned, the committed offset (CURRENT-OFFSET), the log end
offset, the lag between them, and the member that owns it; --members prints
the members and how many partitions each has, --state the group's state,
assignor and member count. Several groups are described one after another,
a blank line between them.

Reset-offsets sets the groups' committed offsets for every partition of
each --topic (or the partitions listed after its colon, as in t:0,2), or,
with --all-topics, for every partition a group has committed offsets for:

  --to-earliest    the log start offset
  --to-latest      the log end offset
  --to-offset N    N
  --shift-by N     the committed offset plus N (minus, when N is negative);
                   a partition without a committed offset is an error
  --to-datetime T  the first offset whose record's timestamp is at or after
                   T, as YYYY-MM-DDTHH:mm:SS.sss (as 2024-05-01T09:30:00.000)
                   in UTC, or in the zone that follows it (Z, +02:00, +0200,
                   +02), as Kafka's tool reads it; a partition without such
                   a record goes to its log end offset

each kept within the log start and log end offsets. Like Kafka it only
prints the new offsets unless --execute is given, and it refuses a group
that has members: offsets can only be reset while the group is inactive
(Empty). A group whose consumers crashed keeps their membership until their
session timeout passes on a running node.

Delete deletes groups without members and their committed offsets, writing
tombstones to __consumer_offsets.

Instead of --dir DIR, --bootstrap-server HOST:PORT reaches a node that
'partlog serve' (or a program embedding partlog) serves over TCP.
`

// runGroups runs "partlog groups".
func runGroups(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("groups")
	where := addTargetFlags(fs)
	var groupNames, topics stringsFlag
	fs.Var(&groupNames, "group", "the consumer `group`; repeat for more")
	allGroups := fs.Bool("all-groups", false, "describe, delete, reset-offsets: every group")
	fs.Var(&topics, "topic", "reset-offsets: the `topic` whose offsets to set, or topic:P,P... for some of its partitions; repeat for more")
	allTopics := fs.Bool("all-topics", false, "reset-offsets: every partition a group has committed offsets for")
	members := fs.Bool("members", false, "describe: print the members")
	state := fs.Bool("state", false, "describe: print the group's state")
	var spec resetSpec
	toEarliest := fs.Bool("to-earliest", false, "reset-offsets: to the log start offset")
	toLatest := fs.Bool("to-latest", false, "reset-offsets: to the log end offset")
	fs.Int64Var(&spec.offset, "to-offset", 0, "reset-offsets: to `offset`")
	fs.Int64Var(&spec.shift, "shift-by", 0, "reset-offsets: by `N` offsets from the committed offset, back when negative")
	toDatetime := fs.String("to-datetime", "", "reset-offsets: to the first offset at or after `datetime`, YYYY-MM-DDTHH:mm:SS.sss, UTC unless a zone (Z, +02:00) follows")
	dryRun := fs.Bool("dry-run", false, "reset-offsets: print the new offsets only (the default)")
	execute := fs.Bool("execute", false, "reset-offsets: commit the new offsets")
	actions := addActionFlags(fs, "groups", "list", "describe", "reset-offsets", "delete")
	operands, err := parseFlags(fs, args, groupsHelp, stdout)
	if err != nil {
		return err
	}
	action, err := actions.only(operands)
	if err != nil {
		return err
	}
	if action != "list" {
		switch {
		case len(groupNames) == 0 && !*allGroups:
			return usageErrorf("groups", "%s needs --group or --all-groups", action)
		case len(groupNames) > 0 && *allGroups:
			return usageErrorf("groups", "--group and --all-groups cannot both be given")
		}
	}
	var scope []topicScope
	switch action {
	case "describe":
		if *members && *state {
			return usageErrorf("groups", "--members and --state cannot both be given")
		}
	case "reset-offsets":
		var specs []string
		for _, f := range []string{"to-earliest", "to-latest", "to-offset", "shift-by", "to-datetime"} {
			if isSet(fs, f) {
				specs = append(specs, "--"+f)
				spec.kind = f
			}
		}
		switch {
		case len(topics) == 0 && !*allTopics:
			return usageErrorf("groups", "reset-offsets needs --topic or --all-topics")
		case len(topics) > 0 && *allTopics:
			return usageErrorf("groups", "--topic and --all-topics cannot both be given")
		case len(specs) != 1:
			return usageErrorf("groups", "reset-offsets needs one of --to-earliest, --to-latest, --to-offset N, --shift-by N, --to-datetime T")
		case *toEarliest != isSet(fs, "to-earliest") || *toLatest != isSet(fs, "to-latest"):
			return usageErrorf("groups", "%s=false asks for nothing; leave it out", specs[0])
		case *dryRun && *execute:
			return usageErrorf("groups", "--dry-run and --execute cannot both be given")
		}
		if spec.kind == "to-datetime" {
			at, err := parseKafkaDatetime(*toDatetime)
			if err != nil {
				return usageErrorf("groups", "--to-datetime %q: %v", *toDatetime, err)
			}
			spec.timestamp = at.UnixMilli()
		}
		for _, tv := range topics {
			ts, err := parseTopicScope(tv)
			if err != nil {
				return usageErrorf("groups", "--topic %q: %v", tv, err)
			}
			scope = append(scope, ts)
		}
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
	names := []string(groupNames)
	if *allGroups {
		if names, err = n.groupIDs(ctx); err != nil {
			return fmt.Errorf("groups: %w", err)
		}
	}
	switch action {
	case "list":
		err = listGroups(ctx, n, stdout)
	case "describe":
		var errs []error
		for i, g := range names {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			if err := describeGroup(ctx, n, g, *members, *state, stdout); err != nil {
				errs = append(errs, err)
			}
		}
		err = errors.Join(errs...)
	case "delete":
		err = deleteGroups(ctx, n, names, stdout)
	case "reset-offsets":
		if !*execute {
			fmt.Fprintln(stderr, "WARN: No action will be performed as the --execute option is missing. In a future major release, the default behavior of this command will be to prompt the user before executing the reset rather than doing a dry run. You should add the --dry-run option explicitly if you are scripting this command and want to keep the current default behavior without prompting.")
		}
		err = resetOffsets(ctx, n, names, scope, spec, *execute, stdout, stderr)
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

// describer returns DescribeTopics for one topic, each described once
// and then remembered: a reset plans many partitions of few topics.
func (g groupTarget) describer() func(topic string) (partlog.TopicDescription, error) {
	described := map[string]partlog.TopicDescription{}
	return func(topic string) (partlog.TopicDescription, error) {
		if d, ok := described[topic]; ok {
			return d, nil
		}
		ds, err := g.DescribeTopics(topic)
		if err != nil {
			return partlog.TopicDescription{}, fmt.Errorf("topic %s: %w", topic, err)
		}
		described[topic] = ds[0]
		return ds[0], nil
	}
}

// NodeID returns the id of the node that coordinates the groups.
func (g groupTarget) NodeID() int32 { return g.nodeID(context.Background()) }

// Close closes the target.
func (g groupTarget) Close() error { return g.close() }

func listGroups(ctx context.Context, n groupTarget, w io.Writer) error {
	ids, err := n.groupIDs(ctx)
	for _, g := range ids {
		fmt.Fprintln(w, g)
	}
	return err
}

// groupIDs returns the ids of every group, in ListGroups' order (sorted).
func (g groupTarget) groupIDs(ctx context.Context) ([]string, error) {
	resp, err := g.ListGroups(ctx, &transport.ListGroupsRequest{})
	if err != nil {
		return nil, err
	}
	if resp.Err != nil {
		return nil, resp.Err
	}
	var ids []string
	for _, lg := range resp.Groups {
		ids = append(ids, lg.Group)
	}
	return ids, nil
}

// deleteGroups deletes groups and prints what kafka-consumer-groups.sh
// --delete prints: that the deletion was successful, or which groups could
// not be deleted and why, then those that were.
func deleteGroups(ctx context.Context, n groupTarget, groups []string, w io.Writer) error {
	if len(groups) == 0 {
		return nil
	}
	resp, err := n.DeleteGroups(ctx, &transport.DeleteGroupsRequest{Groups: groups})
	if err != nil {
		return err
	}
	if len(groups) == 1 {
		if err := resp.Results[0].Err; err != nil {
			return err
		}
	}
	return printDeletions(w, "consumer groups", "Deletion of some consumer groups failed:", resp.Results)
}

// printDeletions prints how the deletion of groups of kind ("consumer
// groups", "share groups") went, as Kafka's tools print it: that it was
// successful, or failedHeader, which groups could not be deleted and
// why, then those that were. It returns the failures, joined.
func printDeletions(w io.Writer, kind, failedHeader string, results []transport.DeletedGroup) error {
	var deleted, failed []string
	var errs []error
	for _, r := range results {
		if r.Err != nil {
			failed = append(failed, fmt.Sprintf("* Group '%s' could not be deleted due to: %v", r.Group, r.Err))
			errs = append(errs, fmt.Errorf("group %s: %w", r.Group, r.Err))
			continue
		}
		deleted = append(deleted, "'"+r.Group+"'")
	}
	if len(failed) == 0 {
		fmt.Fprintf(w, "Deletion of requested %s (%s) was successful.\n", kind, strings.Join(deleted, ", "))
		return nil
	}
	fmt.Fprintln(w, failedHeader)
	for _, f := range failed {
		fmt.Fprintln(w, f)
	}
	if len(deleted) > 0 {
		fmt.Fprintf(w, "\nThese %s were deleted successfully: %s\n", kind, strings.Join(deleted, ", "))
	}
	return errors.Join(errs...)
}

// groupPartition is a row of describe: a partition, its offsets and owner.
type groupPartition struct {
	tp        kafka.TopicPartition
	committed int64 // -1 when none
	logEnd    int64 // -1 when the topic is gone
	member    *transport.DescribedMember
}

func describeGroup(ctx context.Context, n groupTarget, group string, members, state bool, w io.Writer) error {
	g, ok, err := describeConsumerProtocol(ctx, n, group)
	if err != nil {
		return err
	}
	if !ok {
		dresp, err := n.DescribeGroups(ctx, &transport.DescribeGroupsRequest{Groups: []string{group}})
		if err != nil {
			return err
		}
		g = dresp.Groups[0]
		if g.Err != nil {
			return g.Err
		}
	}
	if g.State == "Dead" {
		return fmt.Errorf("%w: consumer group '%s' does not exist", kafka.ErrGroupIDNotFound, group)
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
	byTP := map[kafka.TopicPartition]*groupPartition{}
	row := func(tp kafka.TopicPartition) *groupPartition {
		r := byTP[tp]
		if r == nil {
			r = &groupPartition{tp: tp, committed: -1, logEnd: -1}
			byTP[tp] = r
		}
		return r
	}
	for _, t := range fresp.Topics {
		for _, p := range t.Partitions {
			row(kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition}).committed = p.Offset
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

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
