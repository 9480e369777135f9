package main

// share_groups.go is "partlog share-groups": Kafka's kafka-share-groups.sh
// (ShareGroupCommand) for the share groups of KIP-932 — list them,
// describe their start offsets, members and state, delete them. Resetting
// and deleting their start offsets is in share_groups_reset.go.

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

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

const shareGroupsHelp = `Usage: partlog share-groups <list|describe|reset-offsets|delete|delete-offsets> --dir DIR [flags]

Share-groups lists, describes and deletes share groups (KIP-932, queues
for Kafka) and resets or deletes their start offsets, as Kafka's
kafka-share-groups.sh does:

  partlog share-groups list --dir D [--state[=STATE,...]]
  partlog share-groups describe --dir D (--group G... | --all-groups)
          [--offsets | --members | --state] [--verbose]
  partlog share-groups reset-offsets --dir D --group G
          (--topic T[:P,P...]... | --all-topics)
          (--to-earliest | --to-latest | --to-datetime YYYY-MM-DDTHH:mm:SS.sss |
           --to-offset N | --by-duration PnDTnHnMnS) (--dry-run | --execute)
  partlog share-groups delete --dir D (--group G... | --all-groups)
  partlog share-groups delete-offsets --dir D --group G --topic T...

The action may also be given as Kafka's tool takes it, as a flag:
share-groups --describe is share-groups describe.

List prints the share groups' ids; with --state, each group's state (only
those in the states given, as --state=Stable,Empty: Empty, Stable or Dead).

Describe prints, by default (--offsets), each partition whose share state
the group has, with its share-partition start offset (START-OFFSET: the
records below it are done with) and its lag (LAG: the records from there
to the high watermark not yet accepted, released for good or rejected, as
Kafka 4.2's tool shows it); --members prints the members, how many
partitions each is assigned and which (ASSIGNMENT, as t:0,1;u:0); --state
the group's coordinator, state and member count. --verbose adds the leader
epoch, the member epoch, or the group and assignment epochs.

Reset-offsets sets the group's start offsets, for every partition of each
--topic (or those listed after its colon, as in t:0,2) or, with
--all-topics, for every partition the group has share state for:

  --to-earliest    the log start offset
  --to-latest      the log end offset
  --to-datetime T  the first offset whose record's timestamp is at or after
                   T, as YYYY-MM-DDTHH:mm:SS.sss in UTC, or in the zone that
                   follows it (Z, +02:00); the log end offset when none is
  --to-offset N    N, kept within the log start and log end offsets
  --by-duration D  as --to-datetime, the time D (ISO 8601, as P1DT2H30M)
                   before now

Kafka's tool has the first three; --to-offset and --by-duration are those
of groups reset-offsets. It prints the new offsets, and sets them only
with --execute; one of --dry-run and --execute must be given. A group
with members is refused: its start offsets can only be reset while it is
empty.

Delete deletes empty share groups with their share state. Delete-offsets
deletes the share state of whole topics of an empty group: its members
start again where share.auto.offset.reset says.

Instead of --dir DIR, --bootstrap-server HOST:PORT reaches a node that
'partlog serve' (or a program embedding partlog) serves over TCP.
`

// shareProtocolType is the protocol type ListGroups gives share groups.
const shareProtocolType = "share"

// shareStates are the states of a share group, as Kafka's
// GroupState.groupStatesForType(SHARE) has them.
var shareStates = []string{"Empty", "Stable", "Dead"}

// stateFlag is --state: a bool flag that may take a value, as Kafka's
// --state [STATES] does; the value must follow an equals sign.
type stateFlag struct {
	set   bool
	value string
}

func (s *stateFlag) String() string { return s.value }

func (s *stateFlag) Set(v string) error {
	s.set = true
	if v != "true" {
		s.value = v
	}
	return nil
}

func (s *stateFlag) IsBoolFlag() bool { return true }

// shareArgs are share-groups' parsed command line.
type shareArgs struct {
	action         string
	groups         []string
	allGroups      bool
	members, state bool
	states         []string // list --state=...
	verbose        bool
	scope          []topicScope // reset-offsets --topic; nil with --all-topics
	topics         []string     // delete-offsets --topic
	spec           resetSpec
	execute        bool
}

// runShareGroups runs "partlog share-groups".
func runShareGroups(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("share-groups")
	where := addTargetFlags(fs)
	var groupNames, topics stringsFlag
	var state stateFlag
	fs.Var(&groupNames, "group", "the share `group`; repeat for more")
	allGroups := fs.Bool("all-groups", false, "describe, delete: every share group")
	fs.Var(&topics, "topic", "reset-offsets: the `topic` whose start offsets to set, or topic:P,P... for some of its partitions; delete-offsets: the topic whose share state to delete; repeat for more")
	allTopics := fs.Bool("all-topics", false, "reset-offsets: every partition the group has share state for")
	offsets := fs.Bool("offsets", false, "describe: print the start offsets (the default)")
	members := fs.Bool("members", false, "describe: print the members")
	fs.Var(&state, "state", "describe: print the group's state; list: print each group's state, only those in the `states` given after =, as --state=Stable,Empty")
	verbose := fs.Bool("verbose", false, "describe: print more: epochs")
	var spec resetSpec
	toEarliest := fs.Bool("to-earliest", false, "reset-offsets: to the log start offset")
	toLatest := fs.Bool("to-latest", false, "reset-offsets: to the log end offset")
	toDatetime := fs.String("to-datetime", "", "reset-offsets: to the first offset at or after `datetime`, YYYY-MM-DDTHH:mm:SS.sss, UTC unless a zone (Z, +02:00) follows")
	fs.Int64Var(&spec.offset, "to-offset", 0, "reset-offsets: to `offset`")
	byDuration := fs.String("by-duration", "", "reset-offsets: to the first offset at or after the `duration` (ISO 8601, PnDTnHnMnS) before now")
	dryRun := fs.Bool("dry-run", false, "reset-offsets: print the new offsets only")
	execute := fs.Bool("execute", false, "reset-offsets: set the new offsets")
	actions := addActionFlags(fs, "share-groups", "list", "describe", "reset-offsets", "delete", "delete-offsets")
	operands, err := parseFlags(fs, args, shareGroupsHelp, stdout)
	if err != nil {
		return err
	}
	action, err := actions.only(operands)
	if err != nil {
		return err
	}
	a := shareArgs{action: action, groups: groupNames, allGroups: *allGroups, members: *members, state: state.set, verbose: *verbose, execute: *execute}
	usage := func(format string, args ...any) error { return usageErrorf("share-groups", format, args...) }

	// Kafka's ShareGroupCommandOptions.checkArgs, action by action.
	if len(groupNames) > 0 && *allGroups {
		return usage("--group and --all-groups cannot both be given")
	}
	if len(topics) > 0 && action != "reset-offsets" && action != "delete-offsets" {
		return usage("%s does not take --topic", action)
	}
	if action != "describe" {
		for _, f := range []string{"members", "offsets", "verbose"} {
			if isSet(fs, f) {
				return usage("--%s goes with describe only", f)
			}
		}
	}
	if state.set && action != "describe" && action != "list" {
		return usage("--state goes with describe and list only")
	}
	var scenarios []string
	for _, f := range []string{"to-earliest", "to-latest", "to-datetime", "to-offset", "by-duration"} {
		if isSet(fs, f) {
			scenarios = append(scenarios, "--"+f)
			spec.kind = f
		}
	}
	if action != "reset-offsets" {
		for _, f := range []string{"all-topics", "dry-run", "execute"} {
			if isSet(fs, f) {
				return usage("--%s goes with reset-offsets only", f)
			}
		}
		if len(scenarios) > 0 {
			return usage("%s goes with reset-offsets only", scenarios[0])
		}
	}
	switch action {
	case "list":
		if len(groupNames) > 0 || *allGroups {
			return usage("list does not take --group or --all-groups")
		}
		if state.value != "" {
			for s := range strings.SplitSeq(state.value, ",") {
				i := slices.IndexFunc(shareStates, func(v string) bool { return strings.EqualFold(v, strings.TrimSpace(s)) })
				if i < 0 {
					return usage("invalid state list '%s'; valid states are: %s", state.value, strings.Join(shareStates, ", "))
				}
				a.states = append(a.states, shareStates[i])
			}
		}
	case "describe":
		if len(groupNames) == 0 && !*allGroups {
			return usage("describe needs --group or --all-groups")
		}
		if n := btoi(*offsets) + btoi(*members) + btoi(state.set); n > 1 {
			return usage("describe takes at most one of --members, --offsets, --state")
		}
		if state.value != "" {
			return usage("describe does not take a value for --state")
		}
	case "delete":
		if len(groupNames) == 0 && !*allGroups {
			return usage("delete needs --group or --all-groups")
		}
	case "delete-offsets":
		if len(groupNames) != 1 || len(topics) == 0 {
			return usage("delete-offsets needs one --group and --topic")
		}
		a.topics = topics
	case "reset-offsets":
		switch {
		case *dryRun && *execute:
			return usage("reset-offsets takes one of --execute and --dry-run, not both")
		case !*dryRun && !*execute:
			return usage("reset-offsets needs --execute or --dry-run")
		case len(groupNames) != 1:
			return usage("reset-offsets needs one --group")
		case len(topics) == 0 && !*allTopics:
			return usage("reset-offsets needs --topic or --all-topics")
		case len(topics) > 0 && *allTopics:
			return usage("--topic and --all-topics cannot both be given")
		case len(scenarios) != 1:
			return usage("reset-offsets needs one of --to-earliest, --to-latest, --to-datetime T, --to-offset N, --by-duration D")
		case *toEarliest != isSet(fs, "to-earliest") || *toLatest != isSet(fs, "to-latest"):
			return usage("%s=false asks for nothing; leave it out", scenarios[0])
		}
		switch spec.kind {
		case "to-datetime":
			at, err := parseKafkaDatetime(*toDatetime)
			if err != nil {
				return usage("--to-datetime %q: %v", *toDatetime, err)
			}
			spec.timestamp = at.UnixMilli()
		case "by-duration":
			d, err := parseISODuration(*byDuration)
			if err != nil {
				return usage("--by-duration %q: %v", *byDuration, err)
			}
			spec.kind, spec.timestamp = "to-datetime", time.Now().Add(-d).UnixMilli()
		}
		for _, tv := range topics {
			ts, err := parseTopicScope(tv)
			if err != nil {
				return usage("--topic %q: %v", tv, err)
			}
			a.scope = append(a.scope, ts)
		}
		a.spec = spec
	}

	t, err := openTarget("share-groups", where, stderr)
	if err != nil {
		return err
	}
	n, err := openShareTarget(t)
	if err != nil {
		t.close()
		return fmt.Errorf("share-groups: %w", err)
	}
	defer t.close()
	if err := n.run(context.Background(), a, stdout, stderr); err != nil {
		return fmt.Errorf("share-groups: %w", err)
	}
	return t.close()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// shareTarget is a target with the calls share-groups makes: ListGroups
// and DeleteGroups of every group, ShareGroupDescribe, and the share
// group offsets calls.
type shareTarget struct {
	groupTarget
	share   transport.ShareGroupClient
	offsets transport.ShareGroupOffsetsClient
}

// openShareTarget finds t's share group calls: those of the node in this
// process, or of the node at --bootstrap-server (a cluster's client does
// not route them: the node asked coordinates the groups it answers for).
func openShareTarget(t *target) (shareTarget, error) {
	gc, err := t.groups()
	if err != nil {
		return shareTarget{}, err
	}
	n := shareTarget{groupTarget: groupTarget{t, gc}}
	for _, c := range []transport.Client{t.client(), t.remote} {
		if c == nil {
			continue
		}
		sg, ok1 := c.(transport.ShareGroupClient)
		so, ok2 := c.(transport.ShareGroupOffsetsClient)
		if ok1 && ok2 {
			n.share, n.offsets = sg, so
			return n, nil
		}
	}
	return shareTarget{}, fmt.Errorf("%s does not answer share group requests (ShareGroupDescribe, DescribeShareGroupOffsets)", t.where())
}

func (n shareTarget) run(ctx context.Context, a shareArgs, stdout, stderr io.Writer) error {
	names := a.groups
	if a.allGroups {
		listed, err := n.listShareGroups(ctx)
		if err != nil {
			return err
		}
		names = nil
		for _, g := range listed {
			names = append(names, g.Group)
		}
	}
	switch a.action {
	case "list":
		return n.list(ctx, a, stdout)
	case "describe":
		slices.Sort(names)
		names = slices.Compact(names)
		var errs []error
		for i, g := range names {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			if err := n.describe(ctx, g, a, stdout, stderr); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	case "delete":
		return n.deleteGroups(ctx, names, stdout)
	case "delete-offsets":
		return n.deleteOffsets(ctx, names[0], a.topics, stdout)
	case "reset-offsets":
		return n.resetOffsets(ctx, names[0], a, stdout, stderr)
	}
	return nil
}

// listShareGroups returns the share groups, sorted.
func (n shareTarget) listShareGroups(ctx context.Context) ([]transport.ListedGroup, error) {
	resp, err := n.ListGroups(ctx, &transport.ListGroupsRequest{})
	if err != nil {
		return nil, err
	}
	if resp.Err != nil {
		return nil, resp.Err
	}
	var out []transport.ListedGroup
	for _, g := range resp.Groups {
		if g.ProtocolType == shareProtocolType {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b transport.ListedGroup) int { return cmp.Compare(a.Group, b.Group) })
	return out, nil
}

// list prints the share groups' ids or, with --state, GROUP STATE.
func (n shareTarget) list(ctx context.Context, a shareArgs, w io.Writer) error {
	groups, err := n.listShareGroups(ctx)
	if err != nil {
		return err
	}
	if !a.state {
		for _, g := range groups {
			fmt.Fprintln(w, g.Group)
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	defer tw.Flush()
	fmt.Fprintln(tw, "GROUP\tSTATE")
	for _, g := range groups {
		if len(a.states) == 0 || slices.Contains(a.states, g.State) {
			fmt.Fprintf(tw, "%s\t%s\n", g.Group, cmp.Or(g.State, "Unknown"))
		}
	}
	return nil
}

// describeShareGroup describes one share group; a group that does not
// exist, or is not a share group, is an error, as Kafka's admin client
// makes GROUP_ID_NOT_FOUND one.
func (n shareTarget) describeShareGroup(ctx context.Context, group string) (transport.ShareGroupDescription, error) {
	resp, err := n.share.ShareGroupDescribe(ctx, &transport.ShareGroupDescribeRequest{Groups: []string{group}})
	if err != nil {
		return transport.ShareGroupDescription{}, err
	}
	if len(resp.Groups) == 0 {
		return transport.ShareGroupDescription{}, fmt.Errorf("share group '%s': no description", group)
	}
	d := resp.Groups[0]
	if errors.Is(d.Err, kafka.ErrGroupIDNotFound) || (d.Err == nil && d.State == "Dead") {
		return d, kafkaMessage(kafka.ErrGroupIDNotFound, "Share group '%s' does not exist.", group)
	}
	if d.Err != nil {
		return d, fmt.Errorf("share group '%s': %w", group, d.Err)
	}
	return d, nil
}

// describe prints one group in the view a asks for: offsets, members or
// state.
func (n shareTarget) describe(ctx context.Context, group string, a shareArgs, w, stderr io.Writer) error {
	d, err := n.describeShareGroup(ctx, group)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	defer tw.Flush()
	switch {
	case a.state:
		if d.State == "Empty" {
			fmt.Fprintf(stderr, "\nShare group '%s' has no active members.\n", group)
		}
		coordinator := fmt.Sprintf("%s (%d)", cmp.Or(n.addr, "localhost"), n.NodeID())
		if a.verbose {
			fmt.Fprintln(tw, "GROUP\tCOORDINATOR (ID)\tSTATE\tGROUP-EPOCH\tASSIGNMENT-EPOCH\t#MEMBERS")
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\n", group, coordinator, d.State, d.Epoch, d.AssignmentEpoch, len(d.Members))
		} else {
			fmt.Fprintln(tw, "GROUP\tCOORDINATOR (ID)\tSTATE\t#MEMBERS")
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", group, coordinator, d.State, len(d.Members))
		}
	case a.members:
		if d.State == "Empty" {
			fmt.Fprintf(stderr, "\nShare group '%s' has no active members.\n", group)
		}
		if len(d.Members) == 0 {
			return nil
		}
		ms := slices.SortedFunc(slices.Values(d.Members), func(a, b transport.ShareGroupMemberDescription) int {
			return cmp.Compare(a.MemberID, b.MemberID)
		})
		if a.verbose {
			fmt.Fprintln(tw, "GROUP\tCONSUMER-ID\tHOST\tCLIENT-ID\t#PARTITIONS\tMEMBER-EPOCH\tASSIGNMENT")
		} else {
			fmt.Fprintln(tw, "GROUP\tCONSUMER-ID\tHOST\tCLIENT-ID\t#PARTITIONS\tASSIGNMENT")
		}
		for _, m := range ms {
			count, assignment := shareAssignment(m.Assignment)
			if a.verbose {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", group, m.MemberID, dash(m.ClientHost), dash(m.ClientID), count, m.MemberEpoch, assignment)
			} else {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", group, m.MemberID, dash(m.ClientHost), dash(m.ClientID), count, assignment)
			}
		}
	default:
		rows, err := n.startOffsets(ctx, group, nil)
		if err != nil {
			return err
		}
		if a.verbose {
			fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tLEADER-EPOCH\tSTART-OFFSET\tLAG")
		} else {
			fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tSTART-OFFSET\tLAG")
		}
		for _, r := range rows {
			start, epoch, lag := "-", "-", "-"
			if r.StartOffset >= 0 {
				start = strconv.FormatInt(r.StartOffset, 10)
			}
			if r.StartOffset >= 0 && r.LeaderEpoch >= 0 {
				epoch = strconv.FormatInt(int64(r.LeaderEpoch), 10)
			}
			if r.StartOffset >= 0 && r.Lag >= 0 {
				lag = strconv.FormatInt(r.Lag, 10)
			}
			if a.verbose {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", group, r.topic, r.Partition, epoch, start, lag)
			} else {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", group, r.topic, r.Partition, start, lag)
			}
		}
	}
	return nil
}

// shareAssignment returns how many partitions an assignment has and the
// assignment as Kafka's tool writes it: topic:p,p for each topic, sorted,
// joined by semicolons.
func shareAssignment(a []transport.NamedTopicIDPartitions) (int, string) {
	byTopic := map[string][]int32{}
	count := 0
	for _, t := range a {
		byTopic[t.Topic] = append(byTopic[t.Topic], t.Partitions...)
		count += len(t.Partitions)
	}
	var parts []string
	for topic, ps := range byTopic {
		slices.Sort(ps)
		s := make([]string, len(ps))
		for i, p := range ps {
			s[i] = strconv.Itoa(int(p))
		}
		parts = append(parts, topic+":"+strings.Join(s, ","))
	}
	slices.Sort(parts)
	return count, dash(strings.Join(parts, ";"))
}

// sharePartitionOffset is a row of describe's offsets view.
type sharePartitionOffset struct {
	topic string
	transport.DescribeShareGroupOffsetsPartitionResult
}

// startOffsets returns the group's share-partition start offsets, of the
// partitions topics names, or of every partition the group has share
// state for when topics is nil, sorted; a partition answered with an
// error is left out, as Kafka's admin client leaves it out.
func (n shareTarget) startOffsets(ctx context.Context, group string, topics []transport.TopicPartitions) ([]sharePartitionOffset, error) {
	resp, err := n.offsets.DescribeShareGroupOffsets(ctx, &transport.DescribeShareGroupOffsetsRequest{
		Groups: []transport.DescribeShareGroupOffsetsGroup{{Group: group, Topics: topics}},
	})
	if err != nil {
		return nil, err
	}
	if len(resp.Groups) == 0 {
		return nil, fmt.Errorf("share group '%s': no offsets in the answer", group)
	}
	g := resp.Groups[0]
	if g.Err != nil {
		return nil, fmt.Errorf("share group '%s': %w", group, g.Err)
	}
	var rows []sharePartitionOffset
	for _, t := range g.Topics {
		for _, p := range t.Partitions {
			if p.Err == nil {
				rows = append(rows, sharePartitionOffset{t.Topic, p})
			}
		}
	}
	slices.SortFunc(rows, func(a, b sharePartitionOffset) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.Partition, b.Partition))
	})
	return rows, nil
}

// deleteGroups deletes share groups and prints what kafka-share-groups.sh
// --delete prints. Like Kafka's tool it first checks, by ListGroups, that
// each is a share group and empty, and sends DeleteGroups for those that
// are.
func (n shareTarget) deleteGroups(ctx context.Context, groups []string, w io.Writer) error {
	listed, err := n.listShareGroups(ctx)
	if err != nil {
		return err
	}
	var outcomes []transport.DeletedGroup
	var toDelete []string
	for _, g := range groups {
		if slices.ContainsFunc(outcomes, func(o transport.DeletedGroup) bool { return o.Group == g }) || slices.Contains(toDelete, g) {
			continue
		}
		i := slices.IndexFunc(listed, func(l transport.ListedGroup) bool { return l.Group == g })
		switch {
		case i < 0:
			outcomes = append(outcomes, transport.DeletedGroup{Group: g, Err: kafkaMessage(kafka.ErrGroupIDNotFound, "Group '%s' is not a share group.", g)})
		case listed[i].State == "Dead":
			outcomes = append(outcomes, transport.DeletedGroup{Group: g, Err: kafkaMessage(kafka.ErrGroupIDNotFound, "Share group '%s' group state is DEAD.", g)})
		case listed[i].State != "Empty":
			outcomes = append(outcomes, transport.DeletedGroup{Group: g, Err: kafkaMessage(kafka.ErrNonEmptyGroup, "Share group '%s' is not EMPTY.", g)})
		default:
			toDelete = append(toDelete, g)
		}
	}
	if len(toDelete) > 0 {
		resp, err := n.DeleteGroups(ctx, &transport.DeleteGroupsRequest{Groups: toDelete})
		if err != nil {
			return err
		}
		outcomes = append(outcomes, resp.Results...)
	}
	return printDeletions(w, "share groups", "\nError: Deletion of some share groups failed:", outcomes)
}

// messageError is an error that says what Kafka's tool says, and unwraps
// to the Kafka error it stands for.
type messageError struct {
	msg string
	err error
}

func (e *messageError) Error() string { return e.msg }
func (e *messageError) Unwrap() error { return e.err }

// kafkaMessage returns an error whose message is Kafka's tool's, which
// unwraps to err.
func kafkaMessage(err error, format string, args ...any) error {
	return &messageError{fmt.Sprintf(format, args...), err}
}
