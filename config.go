package partlog

import "github.com/partlog/partlog/topicconfig"

// Topic configuration keys, with Kafka's names and meanings (see package
// topicconfig for their defaults and checks).
const (
	ConfigCleanupPolicy       = topicconfig.CleanupPolicy
	ConfigDeleteRetentionMs   = topicconfig.DeleteRetentionMs
	ConfigFlushMessages       = topicconfig.FlushMessages
	ConfigFlushMs             = topicconfig.FlushMs
	ConfigIndexIntervalBytes  = topicconfig.IndexIntervalBytes
	ConfigMaxMessageBytes     = topicconfig.MaxMessageBytes
	ConfigTimestampType       = topicconfig.TimestampType
	ConfigMinCleanableRatio   = topicconfig.MinCleanableRatio
	ConfigMinCompactionLagMs  = topicconfig.MinCompactionLagMs
	ConfigMinInsyncReplicas   = topicconfig.MinInsyncReplicas
	ConfigRetentionBytes      = topicconfig.RetentionBytes
	ConfigRetentionMs         = topicconfig.RetentionMs
	ConfigSegmentBytes        = topicconfig.SegmentBytes
	ConfigSegmentIndexBytes   = topicconfig.SegmentIndexBytes
	ConfigSegmentMs           = topicconfig.SegmentMs
	ConfigUncleanLeaderElects = topicconfig.UncleanLeaderElects
)

// TopicConfigKeys returns the topic configs partlog accepts, sorted.
func TopicConfigKeys() []string { return topicconfig.Keys() }
