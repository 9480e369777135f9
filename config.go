package partlog

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
)

// Topic configuration keys, with Kafka's names and meanings.
const (
	ConfigCleanupPolicy       = "cleanup.policy"
	ConfigDeleteRetentionMs   = "delete.retention.ms"
	ConfigFlushMessages       = "flush.messages"
	ConfigFlushMs             = "flush.ms"
	ConfigIndexIntervalBytes  = "index.interval.bytes"
	ConfigMaxMessageBytes     = "max.message.bytes"
	ConfigTimestampType       = "message.timestamp.type"
	ConfigMinCleanableRatio   = "min.cleanable.dirty.ratio"
	ConfigMinCompactionLagMs  = "min.compaction.lag.ms"
	ConfigMinInsyncReplicas   = "min.insync.replicas"
	ConfigRetentionBytes      = "retention.bytes"
	ConfigRetentionMs         = "retention.ms"
	ConfigSegmentBytes        = "segment.bytes"
	ConfigSegmentIndexBytes   = "segment.index.bytes"
	ConfigSegmentMs           = "segment.ms"
	ConfigUncleanLeaderElects = "unclean.leader.election.enable"
)

// configDef describes one topic config: its default and how to check a
// value.
type configDef struct {
	def   string
	check func(string) error
	doc   string
}

// topicConfigDefs are the topic configs partlog knows. The defaults are
// Kafka's, except flush.messages: partlog's is 1, so that an acknowledged
// record is on disk (appenders share fsyncs).
var topicConfigDefs = map[string]configDef{
	ConfigCleanupPolicy:       {"delete", checkPolicy, "delete, compact or compact,delete"},
	ConfigDeleteRetentionMs:   {"86400000", checkLong(0, math.MaxInt64), "how long tombstones stay in a compacted topic"},
	ConfigFlushMessages:       {"1", checkLong(1, math.MaxInt64), "records between fsyncs; 1 syncs before every acknowledgement"},
	ConfigFlushMs:             {strconv.FormatInt(math.MaxInt64, 10), checkLong(0, math.MaxInt64), "ms between background fsyncs"},
	ConfigIndexIntervalBytes:  {"4096", checkLong(0, math.MaxInt32), "bytes between index entries"},
	ConfigMaxMessageBytes:     {"1048588", checkLong(0, math.MaxInt32), "largest record batch"},
	ConfigTimestampType:       {"CreateTime", checkOneOf("CreateTime", "LogAppendTime"), "CreateTime or LogAppendTime"},
	ConfigMinCleanableRatio:   {"0.5", checkRatio, "dirty share of a log before it is compacted"},
	ConfigMinCompactionLagMs:  {"0", checkLong(0, math.MaxInt64), "how long a record stays uncompacted"},
	ConfigMinInsyncReplicas:   {"1", checkLong(1, math.MaxInt32), "in-sync replicas an acks=all write needs"},
	ConfigRetentionBytes:      {"-1", checkLong(-1, math.MaxInt64), "largest size a partition keeps; -1 no limit"},
	ConfigRetentionMs:         {"604800000", checkLong(-1, math.MaxInt64), "how long records are kept; -1 forever"},
	ConfigSegmentBytes:        {"1073741824", checkLong(1024, math.MaxInt32), "segment file size"},
	ConfigSegmentIndexBytes:   {"10485760", checkLong(48, math.MaxInt32), "preallocated index size"},
	ConfigSegmentMs:           {"604800000", checkLong(1, math.MaxInt64), "time before a segment rolls"},
	ConfigUncleanLeaderElects: {"false", checkOneOf("true", "false"), "may an out-of-sync replica become leader"},
}

// TopicConfigKeys returns the topic configs partlog accepts, sorted.
func TopicConfigKeys() []string {
	keys := make([]string, 0, len(topicConfigDefs))
	for k := range topicConfigDefs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func checkLong(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		if n < lo || n > hi {
			return fmt.Errorf("%d is outside [%d, %d]", n, lo, hi)
		}
		return nil
	}
}

func checkOneOf(allowed ...string) func(string) error {
	return func(v string) error {
		if !slices.Contains(allowed, v) {
			return fmt.Errorf("%q is not one of %s", v, strings.Join(allowed, ", "))
		}
		return nil
	}
}

func checkRatio(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 1 {
		return fmt.Errorf("%q is not a number in [0, 1]", v)
	}
	return nil
}

func checkPolicy(v string) error {
	parts := strings.Split(v, ",")
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "delete" && p != "compact" {
			return fmt.Errorf("%q is not delete, compact or both", v)
		}
	}
	return nil
}

// validateConfigs checks topic config overrides: known keys, legal values.
func validateConfigs(configs map[string]string) error {
	for k, v := range configs {
		def, ok := topicConfigDefs[k]
		if !ok {
			return fmt.Errorf("%w: unknown topic config %q (known: %s)", kafka.ErrInvalidConfig, k, strings.Join(TopicConfigKeys(), ", "))
		}
		if err := def.check(v); err != nil {
			return fmt.Errorf("%w: %s: %v", kafka.ErrInvalidConfig, k, err)
		}
	}
	return nil
}

// topicConfig is a topic's effective configuration: defaults overlaid with
// its overrides, parsed.
type topicConfig struct {
	values map[string]string
}

func effectiveConfig(overrides map[string]string) topicConfig {
	values := make(map[string]string, len(topicConfigDefs))
	for k, def := range topicConfigDefs {
		values[k] = def.def
	}
	for k, v := range overrides {
		values[k] = v
	}
	return topicConfig{values: values}
}

func (c topicConfig) long(key string) int64 {
	n, _ := strconv.ParseInt(c.values[key], 10, 64)
	return n
}

func (c topicConfig) ms(key string) time.Duration {
	n := c.long(key)
	if n > math.MaxInt64/int64(time.Millisecond) {
		return 0 // "forever": the zero value means no limit where used
	}
	return time.Duration(n) * time.Millisecond
}

// logOptions maps the config onto a partition log's options.
func (c topicConfig) logOptions() log.Options {
	o := log.Options{
		SegmentBytes:       c.long(ConfigSegmentBytes),
		SegmentMs:          c.ms(ConfigSegmentMs),
		IndexIntervalBytes: int(c.long(ConfigIndexIntervalBytes)),
		MaxIndexBytes:      int(c.long(ConfigSegmentIndexBytes)),
		MaxMessageBytes:    int(c.long(ConfigMaxMessageBytes)),
		RetentionBytes:     c.long(ConfigRetentionBytes),
		RetentionMs:        c.ms(ConfigRetentionMs),
	}
	if c.long(ConfigRetentionMs) < 0 {
		o.RetentionMs = -1
	}
	if o.IndexIntervalBytes == 0 {
		o.IndexIntervalBytes = 1 // an entry per batch
	}
	c.cleanerOptions(&o)
	switch flush := c.long(ConfigFlushMessages); {
	case flush == 1:
		o.SyncBeforeAck = true
	case flush < math.MaxInt64:
		o.FlushMessages = flush
	}
	if ms := c.long(ConfigFlushMs); ms < math.MaxInt64 {
		o.FlushInterval = max(time.Duration(ms)*time.Millisecond, time.Millisecond)
	}
	return o
}

// partitionOptions maps the config onto a partition's options.
func (c topicConfig) partitionOptions() partition.Options {
	return partition.Options{
		MinInsyncReplicas:    int(c.long(ConfigMinInsyncReplicas)),
		DurableHighWatermark: c.long(ConfigFlushMessages) == 1,
		LogAppendTime:        c.values[ConfigTimestampType] == "LogAppendTime",
		Compacted:            c.compacted(),
	}
}
