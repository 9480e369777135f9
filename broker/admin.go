package broker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/topicconfig"
	"github.com/partlog/partlog/transport"
)

// The Broker answers the admin requests too, so that the topic tools work
// over TCP.
var _ transport.AdminClient = (*Broker)(nil)

// CreateTopics creates each topic as CreateTopic does and answers topic by
// topic. ValidateOnly is refused (INVALID_REQUEST) rather than ignored.
func (n *Broker) CreateTopics(ctx context.Context, req *transport.CreateTopicsRequest) (*transport.CreateTopicsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	n.end()
	resp := &transport.CreateTopicsResponse{}
	for _, t := range req.Topics {
		res := transport.TopicResult{Name: t.Name}
		switch {
		case req.ValidateOnly:
			res.Err = fmt.Errorf("%w: validate_only is not supported", kafka.ErrInvalidRequest)
		case t.Partitions == 0 || t.Partitions < -1:
			res.Err = fmt.Errorf("%w: %d partitions; a topic has at least 1 (-1 asks for the default)", kafka.ErrInvalidPartitions, t.Partitions)
		case t.ReplicationFactor == 0 || t.ReplicationFactor < -1:
			res.Err = fmt.Errorf("%w: replication factor %d; at least 1 (-1 asks for the default)", kafka.ErrInvalidReplicationFactor, t.ReplicationFactor)
		default:
			// NewTopic's zero is the default that -1 asks for.
			res.Err = n.CreateTopic(ctx, NewTopic{Name: t.Name, Partitions: max(t.Partitions, 0),
				ReplicationFactor: max(t.ReplicationFactor, 0), Configs: t.Configs})
		}
		resp.Topics = append(resp.Topics, res)
	}
	return resp, nil
}

// DeleteTopics deletes each topic as DeleteTopic does and answers topic by
// topic.
func (n *Broker) DeleteTopics(ctx context.Context, req *transport.DeleteTopicsRequest) (*transport.DeleteTopicsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	n.end()
	resp := &transport.DeleteTopicsResponse{}
	for _, name := range req.Topics {
		resp.Topics = append(resp.Topics, transport.TopicResult{Name: name, Err: n.DeleteTopic(ctx, name)})
	}
	return resp, nil
}

// CreatePartitions raises each topic's partition count, as Kafka's
// CreatePartitions does: the new partitions start empty, and a key's
// partition may change (the producers' hash is modulo the count).
// Internal topics keep theirs: a group's coordinator is the hash of its id
// modulo __consumer_offsets' count.
func (n *Broker) CreatePartitions(ctx context.Context, req *transport.CreatePartitionsRequest) (*transport.CreatePartitionsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	n.end()
	resp := &transport.CreatePartitionsResponse{}
	for _, t := range req.Topics {
		resp.Topics = append(resp.Topics, transport.TopicResult{Name: t.Topic, Err: n.createPartitions(ctx, t.Topic, t.Count, req.ValidateOnly)})
	}
	return resp, nil
}

// createPartitions raises one topic's partition count to count.
func (n *Broker) createPartitions(ctx context.Context, name string, count int32, validateOnly bool) error {
	if strings.HasPrefix(name, "__") {
		return fmt.Errorf("%w: %s is an internal topic, whose partition count is fixed", kafka.ErrInvalidPartitions, name)
	}
	have := int32(-1)
	md, _ := n.member.metadata()
	if t, ok := md.Topics[name]; ok {
		have = int32(len(t.Partitions))
	}
	switch {
	case have < 0:
		return fmt.Errorf("%w: %q", kafka.ErrUnknownTopicOrPartition, name)
	case count <= have:
		return fmt.Errorf("%w: topic %s has %d partitions; a count can only grow, not to %d", kafka.ErrInvalidPartitions, name, have, count)
	case count > maxPartitions:
		return fmt.Errorf("%w: %d partitions; a topic has at most %d", kafka.ErrInvalidPartitions, count, maxPartitions)
	case validateOnly:
		return nil
	}
	return n.awaitChange(ctx)(n.member.ctl.CreatePartitions(ctx, name, have, count))
}

// awaitChange returns a function that waits until this node has
// reconciled with the metadata version a controller call's change made,
// or returns the call's error.
func (n *Broker) awaitChange(ctx context.Context) func(controller.Change, error) error {
	return func(c controller.Change, err error) error {
		if err != nil {
			return err
		}
		return n.member.waitReconciled(ctx, c.Version)
	}
}

// AlterConfigs changes topics' configs, as Kafka's IncrementalAlterConfigs
// and AlterConfigs do: each change is checked as CreateTopic checks
// configs, then the topic's whole new set is stored and reaches its open
// partitions — retention, segment rolling, max.message.bytes, cleanup and
// compaction, min.insync.replicas and message.timestamp.type at once;
// flush.messages and flush.ms once a partition is next opened (a restart),
// since the high watermark of a partition rests on its flush policy. A
// group's configs (a GROUP resource, named by the group id) are checked
// and stored by the controller, as Kafka's GroupConfig checks them, for a
// group that need not exist yet (see groupConfigs). A node's own settings
// are static (partlog serve's flags): altering them is refused with
// INVALID_REQUEST.
func (n *Broker) AlterConfigs(ctx context.Context, req *transport.AlterConfigsRequest) (*transport.AlterConfigsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	n.end()
	resp := &transport.AlterConfigsResponse{}
	for _, a := range req.Resources {
		res := transport.ConfigResult{ConfigResource: a.ConfigResource}
		switch a.Type {
		case transport.ConfigTopic:
			res.Err = n.alterTopicConfigs(ctx, a, req.ValidateOnly)
		case transport.ConfigGroup:
			res.Err = n.alterGroupConfigs(ctx, a, req.ValidateOnly)
		case transport.ConfigBroker:
			res.Err = fmt.Errorf("%w: a partlog node's settings are static: set them with partlog serve's flags or the Go options", kafka.ErrInvalidRequest)
		default:
			res.Err = fmt.Errorf("%w: configs of %s resources", kafka.ErrInvalidRequest, a.Type)
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

// alterTopicConfigs makes one topic's config changes.
func (n *Broker) alterTopicConfigs(ctx context.Context, a transport.ConfigAlteration, validateOnly bool) error {
	effective, own := n.member.topicConfigs(a.Name)
	if effective == nil {
		return fmt.Errorf("%w: %q", kafka.ErrUnknownTopicOrPartition, a.Name)
	}
	if _, err := topicconfig.Apply(own, a); err != nil || validateOnly {
		return err
	}
	// The controller applies the changes to the configs it has.
	return n.awaitChange(ctx)(n.member.ctl.AlterConfigs(ctx, a.Name, a))
}

// reconfigure applies a topic's configs in force to its open partitions.
func (n *Broker) reconfigure(cfg topicconfig.Config, parts ...*partition.Partition) {
	lo, po := cfg.LogOptions(), cfg.PartitionOptions()
	for _, p := range parts {
		if err := p.Log().Reconfigure(lo); err != nil {
			n.logger.Error("applying a topic's new configs", "partition", p.Topic()+"-"+strconv.Itoa(int(p.ID())), "err", err)
		}
		p.Reconfigure(po)
	}
}

// DescribeConfigs answers every config in force for each topic, sorted by
// name, marking those the topic does not set as defaults; the same for
// each group (a GROUP resource), whose configs all have their defaults
// when it sets none or does not exist, as in Kafka; and, for the node
// itself (a BROKER resource named by its id, or empty), its settings by
// Kafka's broker config names, all read-only.
func (n *Broker) DescribeConfigs(ctx context.Context, req *transport.DescribeConfigsRequest) (*transport.DescribeConfigsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	if slices.ContainsFunc(req.Resources, func(r transport.ConfigResource) bool {
		return r.Type == transport.ConfigTopic || r.Type == transport.ConfigGroup
	}) {
		// Another node may have changed the configs a moment ago:
		// answer with the controller's metadata, not this node's last
		// heartbeat's, so that an alter then a describe reads back the
		// change whichever nodes they reach.
		if err := n.member.sync(ctx); err != nil {
			n.logger.Debug("DescribeConfigs answers from the metadata the node has", "err", err)
		}
	}
	resp := &transport.DescribeConfigsResponse{}
	for _, r := range req.Resources {
		rc := transport.ResourceConfigs{ConfigResource: r}
		switch r.Type {
		case transport.ConfigTopic:
			rc.Configs, rc.Err = n.topicConfigEntries(r.Name)
		case transport.ConfigGroup:
			rc.Configs, rc.Err = n.groupConfigEntries(r.Name)
		case transport.ConfigBroker:
			if r.Name != "" && r.Name != strconv.Itoa(int(n.meta.NodeID)) {
				rc.Err = fmt.Errorf("%w: node %d describes its own configs; ask node %s", kafka.ErrInvalidRequest, n.meta.NodeID, r.Name)
				break
			}
			rc.Configs = n.brokerConfigEntries()
		default:
			rc.Err = fmt.Errorf("%w: configs of %s resources", kafka.ErrInvalidRequest, r.Type)
		}
		resp.Resources = append(resp.Resources, rc)
	}
	return resp, nil
}

// topicConfigEntries returns a topic's configs in force, sorted by name.
func (n *Broker) topicConfigEntries(name string) ([]transport.ConfigEntry, error) {
	effective, own := n.member.topicConfigs(name)
	if effective == nil {
		return nil, fmt.Errorf("%w: %q", kafka.ErrUnknownTopicOrPartition, name)
	}
	// The topic's configs only: not DescribeTopics, which also measures
	// every partition's log.
	var entries []transport.ConfigEntry
	for _, k := range slices.Sorted(maps.Keys(effective)) {
		_, set := own[k]
		entries = append(entries, transport.ConfigEntry{Name: k, Value: effective[k], IsDefault: !set})
	}
	return entries, nil
}

// groupInitialDelay is the group.initial.rebalance.delay.ms in force.
func (n *Broker) groupInitialDelay() time.Duration {
	switch d := n.opts.Groups.InitialRebalanceDelay; {
	case d == 0:
		return 3 * time.Second // group.Options' default
	case d < 0:
		return 0
	default:
		return d
	}
}

// BrokerConfigName returns the name of the node setting that gives a
// topic config's default, as Kafka names its broker configs
// ("retention.ms" → "log.retention.ms"), and whether the topic config is
// one partlog knows. A node's DescribeConfigs answers its settings by these
// names.
func BrokerConfigName(topicConfig string) (string, bool) {
	name, ok := brokerConfigNames[topicConfig]
	return name, ok
}

// brokerConfigNames maps the topic configs to the broker configs that
// give their defaults, as Kafka names them.
var brokerConfigNames = map[string]string{
	topicconfig.CleanupPolicy:       "log.cleanup.policy",
	topicconfig.DeleteRetentionMs:   "log.cleaner.delete.retention.ms",
	topicconfig.FlushMessages:       "log.flush.interval.messages",
	topicconfig.FlushMs:             "log.flush.interval.ms",
	topicconfig.IndexIntervalBytes:  "log.index.interval.bytes",
	topicconfig.MaxMessageBytes:     "message.max.bytes",
	topicconfig.TimestampType:       "log.message.timestamp.type",
	topicconfig.MinCleanableRatio:   "log.cleaner.min.cleanable.ratio",
	topicconfig.MinCompactionLagMs:  "log.cleaner.min.compaction.lag.ms",
	topicconfig.MinInsyncReplicas:   "min.insync.replicas",
	topicconfig.RetentionBytes:      "log.retention.bytes",
	topicconfig.RetentionMs:         "log.retention.ms",
	topicconfig.SegmentBytes:        "log.segment.bytes",
	topicconfig.SegmentIndexBytes:   "log.index.size.max.bytes",
	topicconfig.SegmentMs:           "log.roll.ms",
	topicconfig.UncleanLeaderElects: "unclean.leader.election.enable",
}

// brokerConfigEntries returns the node's settings by Kafka's broker config
// names, sorted: its id and directory, topic creation defaults, the group
// coordinator's initial delay, and the defaults of every topic config.
func (n *Broker) brokerConfigEntries() []transport.ConfigEntry {
	o := n.opts
	entries := []transport.ConfigEntry{
		{Name: "node.id", Value: strconv.Itoa(int(n.meta.NodeID))},
		{Name: "broker.id", Value: strconv.Itoa(int(n.meta.NodeID))},
		{Name: "log.dirs", Value: n.dir},
		{Name: "auto.create.topics.enable", Value: strconv.FormatBool(!o.NoAutoCreateTopics), IsDefault: !o.NoAutoCreateTopics},
		{Name: "num.partitions", Value: strconv.Itoa(int(o.AutoCreatePartitions)), IsDefault: o.AutoCreatePartitions == 1},
		{Name: "default.replication.factor", Value: strconv.Itoa(int(o.AutoCreateReplicationFactor)), IsDefault: o.AutoCreateReplicationFactor == 1},
		{Name: "group.initial.rebalance.delay.ms", Value: strconv.FormatInt(n.groupInitialDelay().Milliseconds(), 10),
			IsDefault: o.Groups.InitialRebalanceDelay == 0},
	}
	defaults := n.topicConfig(nil).Values()
	for k, name := range brokerConfigNames {
		_, set := o.TopicDefaults[k]
		entries = append(entries, transport.ConfigEntry{Name: name, Value: defaults[k], IsDefault: !set})
	}
	for i := range entries {
		entries[i].ReadOnly = true
	}
	slices.SortFunc(entries, func(a, b transport.ConfigEntry) int { return strings.Compare(a.Name, b.Name) })
	return entries
}
