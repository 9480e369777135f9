package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/partlog/partlog/kafka"
)

// groupConfig is what the group options set.
type groupConfig struct {
	group              string
	instanceID         string
	clientID           string
	assignors          []Assignor
	sessionTimeout     time.Duration
	heartbeatInterval  time.Duration
	maxPollInterval    time.Duration
	autoCommit         bool
	autoCommitInterval time.Duration
	closeTimeout       time.Duration
	store              OffsetStore
	onAssigned         RebalanceCallback
	onRevoked          RebalanceCallback
	onLost             RebalanceCallback
	protocol           Protocol
	remoteAssignor     string
}

func defaultGroupConfig() groupConfig {
	return groupConfig{
		clientID:           "partlog-consumer",
		assignors:          []Assignor{Range(), CooperativeSticky()},
		sessionTimeout:     45 * time.Second,
		heartbeatInterval:  3 * time.Second,
		maxPollInterval:    5 * time.Minute,
		autoCommit:         true,
		autoCommitInterval: 5 * time.Second,
		closeTimeout:       30 * time.Second,
	}
}

// RebalanceCallback is told of partitions a rebalance takes from the
// consumer or gives it. It runs in the goroutine that calls Poll (or runs
// the Records loop), inside that call, as Kafka's
// ConsumerRebalanceListener does, so that no record of the partitions is
// being processed meanwhile; it may call the consumer's methods, Commit
// among them, but not Poll or Close (which waits for the rebalance).
type RebalanceCallback func(ctx context.Context, c *Consumer, tps []kafka.TopicPartition)

// Group makes the consumer a member of the consumer group id (group.id).
// With Topics, the group's members share the topics' partitions: the
// coordinator (the node that leads the group's partition of
// __consumer_offsets) runs the membership, the group's leader assigns
// with an Assignor, and each member starts each partition it is given at
// the group's committed offset, or as AutoOffsetReset says when there is
// none. With Partitions, the consumer takes no part in membership and
// only commits and fetches the group's offsets, as Kafka's assign with a
// group id. The client must implement transport.GroupClient unless an
// OffsetStore is set and the consumer is assigned.
func Group(id string) Option {
	return optionFunc(func(c *config) { c.grp.group = id })
}

// GroupInstanceID makes the consumer a static member (group.instance.id,
// KIP-345): a new consumer with the same instance id takes the old one's
// place and assignment, without a rebalance, and fences it. Close does not
// leave the group: the partitions wait for the instance to come back, up
// to SessionTimeout. Default: none, a dynamic member.
func GroupInstanceID(id string) Option {
	return optionFunc(func(c *config) { c.grp.instanceID = id })
}

// ClientID names the consumer to the coordinator (client.id); member ids
// start with it. Default "partlog-consumer".
func ClientID(id string) Option {
	return optionFunc(func(c *config) { c.grp.clientID = id })
}

// Assignors sets the assignors the consumer supports, most preferred first
// (partition.assignment.strategy); the group uses the first that every
// member supports. Default Range, CooperativeSticky, as Kafka 3's. The
// consumer rebalances cooperatively when every one of its assignors is
// Cooperative, eagerly otherwise.
func Assignors(as ...Assignor) Option {
	return optionFunc(func(c *config) { c.grp.assignors = as })
}

// SessionTimeout is how long the coordinator keeps the consumer in the
// group without a heartbeat (session.timeout.ms); default 45s. The node
// accepts values between its group.min.session.timeout.ms and
// group.max.session.timeout.ms.
func SessionTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.grp.sessionTimeout = d })
}

// HeartbeatInterval is how often the consumer heartbeats
// (heartbeat.interval.ms); default 3s, a third or less of SessionTimeout.
func HeartbeatInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.grp.heartbeatInterval = d })
}

// MaxPollInterval is the longest the consumer may go between Polls
// (max.poll.interval.ms); default 5 minutes. Past it the consumer leaves
// the group, which gives its partitions to others, and its next Poll
// rejoins. It is also the rebalance timeout: how long the coordinator
// waits for members to rejoin.
func MaxPollInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.grp.maxPollInterval = d })
}

// DisableAutoCommit turns automatic commits off (enable.auto.commit=false):
// offsets are committed only by Commit, CommitOffsets and CommitAsync. By
// default a consumer with a Group commits the positions of its partitions
// every AutoCommitInterval, at the start of a Poll (so, the records
// returned by the Polls before), before it gives partitions up in a
// rebalance, and when it closes.
func DisableAutoCommit() Option {
	return optionFunc(func(c *config) { c.grp.autoCommit = false })
}

// AutoCommitInterval is how often automatic commits happen
// (auto.commit.interval.ms); default 5s.
func AutoCommitInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.grp.autoCommitInterval = d })
}

// Offsets sets where the group's offsets are committed and fetched;
// default CoordinatorOffsets of the client.
func Offsets(store OffsetStore) Option {
	return optionFunc(func(c *config) { c.grp.store = store })
}

// OnPartitionsAssigned sets the callback told of partitions the consumer
// is given, after their positions are set from the committed offsets.
func OnPartitionsAssigned(fn RebalanceCallback) Option {
	return optionFunc(func(c *config) { c.grp.onAssigned = fn })
}

// OnPartitionsRevoked sets the callback told of partitions the consumer is
// about to give up in a rebalance, or when it closes: the place to commit
// what was processed (Commit), since after it another member consumes
// them from the committed offsets.
func OnPartitionsRevoked(fn RebalanceCallback) Option {
	return optionFunc(func(c *config) { c.grp.onRevoked = fn })
}

// OnPartitionsLost sets the callback told of partitions the consumer lost
// without giving them up: its membership ended (session timeout,
// MaxPollInterval passed, fenced) and others may own them already, so a
// commit would be refused. Without it, OnPartitionsRevoked is called, as
// Kafka's default onPartitionsLost does.
func OnPartitionsLost(fn RebalanceCallback) Option {
	return optionFunc(func(c *config) { c.grp.onLost = fn })
}

// Protocol is group.protocol: which of Kafka's consumer group protocols
// the consumer speaks.
type Protocol int8

const (
	// ClassicProtocol is the protocol of JoinGroup and SyncGroup: every
	// member rejoins for a rebalance and the group's leader assigns with
	// the consumer's Assignors. The default, as in Kafka 4.
	ClassicProtocol Protocol = iota
	// ConsumerProtocol is KIP-848's: the coordinator assigns with a
	// server assignor and moves partitions member by member, one
	// heartbeat at a time, with no group-wide barrier (Kafka 4's
	// group.protocol=consumer). The coordinator sets the session timeout
	// and the heartbeat interval; SessionTimeout, HeartbeatInterval and
	// Assignors do not apply.
	ConsumerProtocol
)

// String returns the protocol as Kafka's group.protocol spells it.
func (p Protocol) String() string {
	if p == ConsumerProtocol {
		return "consumer"
	}
	return "classic"
}

// GroupProtocol sets the group protocol the consumer speaks
// (group.protocol); default ClassicProtocol. A group has one protocol at
// a time: the coordinator refuses a member of the other protocol while
// the group has members (INCONSISTENT_GROUP_PROTOCOL), and switches an
// empty group to the protocol of the next member. ConsumerProtocol needs
// a client that implements transport.ConsumerGroupClient.
func GroupProtocol(p Protocol) Option {
	return optionFunc(func(c *config) { c.grp.protocol = p })
}

// GroupRemoteAssignor names the server assignor the coordinator is to use
// for the group under ConsumerProtocol (group.remote.assignor): "uniform"
// or "range" on partlog and Kafka. Default: none named, the coordinator's
// default (uniform).
func GroupRemoteAssignor(name string) Option {
	return optionFunc(func(c *config) { c.grp.remoteAssignor = name })
}

// validateGroup checks the group options, naming the one at fault.
func (c *config) validateGroup() error {
	g := &c.grp
	if g.group == "" {
		if g.instanceID != "" {
			return errors.New("consumer: GroupInstanceID given without a Group")
		}
		return nil
	}
	switch {
	case g.protocol != ClassicProtocol && g.protocol != ConsumerProtocol:
		return fmt.Errorf("consumer: GroupProtocol %d is neither ClassicProtocol nor ConsumerProtocol", g.protocol)
	case g.remoteAssignor != "" && g.protocol != ConsumerProtocol:
		return errors.New("consumer: GroupRemoteAssignor applies to ConsumerProtocol only")
	case len(g.assignors) == 0:
		return errors.New("consumer: Assignors given no assignor")
	case g.sessionTimeout <= 0:
		return fmt.Errorf("consumer: SessionTimeout %v is not positive", g.sessionTimeout)
	case g.heartbeatInterval <= 0 || g.heartbeatInterval >= g.sessionTimeout:
		return fmt.Errorf("consumer: HeartbeatInterval %v must be positive and below SessionTimeout %v", g.heartbeatInterval, g.sessionTimeout)
	case g.maxPollInterval <= 0:
		return fmt.Errorf("consumer: MaxPollInterval %v is not positive", g.maxPollInterval)
	case g.autoCommitInterval <= 0:
		return fmt.Errorf("consumer: AutoCommitInterval %v is not positive", g.autoCommitInterval)
	}
	names := map[string]bool{}
	for _, a := range g.assignors {
		if a == nil || a.Name() == "" {
			return errors.New("consumer: Assignors given an assignor without a name")
		}
		if names[a.Name()] {
			return fmt.Errorf("consumer: Assignors names %q twice", a.Name())
		}
		names[a.Name()] = true
	}
	return nil
}
