package partlog

import (
	"time"

	"github.com/partlog/partlog/broker"
)

// OffsetsTopicPartitions sets the partitions of __consumer_offsets when the
// node creates it (Kafka's offsets.topic.num.partitions); the default is
// 50. A group lives in partition abs(hash(group id)) % n, as in Kafka. It
// has no effect once the topic exists.
func OffsetsTopicPartitions(n int32) Option {
	return optionFunc(func(o *broker.Options) { o.Groups.Partitions = n })
}

// GroupMinSessionTimeout sets the shortest session timeout a group member
// may ask for (group.min.session.timeout.ms); the default is 6s.
func GroupMinSessionTimeout(d time.Duration) Option {
	return optionFunc(func(o *broker.Options) { o.Groups.MinSessionTimeout = d })
}

// GroupMaxSessionTimeout sets the longest session timeout a group member
// may ask for (group.max.session.timeout.ms); the default is 30 minutes.
func GroupMaxSessionTimeout(d time.Duration) Option {
	return optionFunc(func(o *broker.Options) { o.Groups.MaxSessionTimeout = d })
}

// GroupMaxSize sets the most members a group may have (group.max.size);
// the default is no limit.
func GroupMaxSize(n int) Option {
	return optionFunc(func(o *broker.Options) { o.Groups.MaxSize = n })
}

// OffsetsRetention sets how long a group without members keeps its
// committed offsets after its last commit (Kafka's
// offsets.retention.minutes); the default is 7 days.
func OffsetsRetention(d time.Duration) Option {
	return optionFunc(func(o *broker.Options) { o.Groups.OffsetsRetention = d })
}

// GroupInitialRebalanceDelay sets group.initial.rebalance.delay.ms: the
// first rebalance of an empty group waits this long for more members
// before it completes (each member joining meanwhile makes it wait again,
// up to the rebalance timeout), so that consumers started together share
// the partitions from the first generation. The default is Kafka's 3s;
// zero or less means no wait (what tests of a group of one want).
func GroupInitialRebalanceDelay(d time.Duration) Option {
	return optionFunc(func(o *broker.Options) {
		if d <= 0 {
			d = -1
		}
		o.Groups.InitialRebalanceDelay = d
	})
}

// GroupConsumerHeartbeatInterval sets group.consumer.heartbeat.interval.ms:
// how often members of consumer-protocol groups (KIP-848) are told to
// heartbeat, and so how soon they learn of a new assignment; the default
// is Kafka's 5s.
func GroupConsumerHeartbeatInterval(d time.Duration) Option {
	return optionFunc(func(o *broker.Options) { o.Groups.ConsumerHeartbeatInterval = d })
}

// GroupConsumerSessionTimeout sets group.consumer.session.timeout.ms: a
// member of a consumer-protocol group not heard from for this long is
// removed; the default is Kafka's 45s.
func GroupConsumerSessionTimeout(d time.Duration) Option {
	return optionFunc(func(o *broker.Options) { o.Groups.ConsumerSessionTimeout = d })
}

// ShareRecordLockDuration is how long a share group member holds the
// records it acquires (Kafka's group.share.record.lock.duration.ms):
// records it has not acknowledged by then are delivered again. Default
// 30s.
func ShareRecordLockDuration(d time.Duration) Option {
	return optionFunc(func(o *broker.Options) { o.Shares.RecordLockDuration = d })
}

// ShareDeliveryCountLimit is how many times a share group delivers a
// record before it gives up on it and archives it (Kafka's
// group.share.delivery.count.limit). Default 5.
func ShareDeliveryCountLimit(n int) Option {
	return optionFunc(func(o *broker.Options) { o.Shares.DeliveryCountLimit = n })
}
