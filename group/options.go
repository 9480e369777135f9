package group

import (
	"io"
	"log/slog"
	"time"
)

// Options configures a Coordinator. The zero value works: each field's
// zero means Kafka's default.
type Options struct {
	// Partitions is offsets.topic.num.partitions, the partitions of
	// __consumer_offsets that groups are spread over; zero means 50.
	Partitions int32
	// MinSessionTimeout is group.min.session.timeout.ms; zero means 6s.
	// A member asking for less is refused with INVALID_SESSION_TIMEOUT.
	MinSessionTimeout time.Duration
	// MaxSessionTimeout is group.max.session.timeout.ms; zero means 30
	// minutes.
	MaxSessionTimeout time.Duration
	// MaxSize is group.max.size, the most members a group has; zero means
	// no limit.
	MaxSize int
	// MaxMetadataBytes is offset.metadata.max.bytes, the longest metadata
	// string of a committed offset; zero means 4096.
	MaxMetadataBytes int
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: the first
	// rebalance of an Empty group waits this long for more members before
	// it completes, and each member joining meanwhile makes it wait this
	// long again (never past the rebalance timeout), so that consumers
	// started together share the partitions from the first generation
	// rather than one taking them all. Zero means 3s, Kafka's default;
	// negative means no wait.
	InitialRebalanceDelay time.Duration
	// OffsetsRetention is offsets.retention.minutes: a group that has been
	// Empty this long, with no commit meanwhile, has its offsets and
	// metadata deleted (tombstones in its partition); zero means 7 days.
	OffsetsRetention time.Duration
	// Topics returns the cluster's topics, for the groups of the
	// consumer group protocol (KIP-848), whose coordinator assigns their
	// partitions; nil means none.
	Topics func() []TopicInfo
	// ConsumerSessionTimeout is group.consumer.session.timeout.ms: a
	// consumer-protocol member not heard from for this long is removed.
	// Zero means 45s.
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms:
	// how often consumer-protocol members are told to heartbeat. Zero
	// means 5s.
	ConsumerHeartbeatInterval time.Duration
	// Now is the clock; nil means time.Now. Timeouts are checked against
	// it by Tick only, so that a test can drive time by hand.
	Now func() time.Time
	// NewMemberID makes the id of a member that joins without one; nil
	// means the client id, a dash and a random UUID, as Kafka does.
	NewMemberID func(clientID string) string
	// Logger reports rebalances and member expirations; nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Partitions <= 0 {
		o.Partitions = DefaultOffsetsTopicPartitions
	}
	if o.MinSessionTimeout <= 0 {
		o.MinSessionTimeout = 6 * time.Second
	}
	if o.MaxSessionTimeout <= 0 {
		o.MaxSessionTimeout = 30 * time.Minute
	}
	if o.InitialRebalanceDelay == 0 {
		o.InitialRebalanceDelay = 3 * time.Second
	}
	if o.OffsetsRetention <= 0 {
		o.OffsetsRetention = 7 * 24 * time.Hour
	}
	if o.MaxMetadataBytes <= 0 {
		o.MaxMetadataBytes = 4096
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewMemberID == nil {
		o.NewMemberID = randomMemberID
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}
