// Package topicconfig is the topic configs partlog knows, by Kafka's
// names: their defaults, how a value is checked, how a topic's overrides
// over a node's defaults make the configs in force, how those map onto a
// partition's log and partition options, and how Kafka's config changes
// (IncrementalAlterConfigs' SET, DELETE, APPEND and SUBTRACT) apply. The
// broker and the controller both use it.
package topicconfig

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/transport"
)

// Topic configuration keys, with Kafka's names and meanings.
const (
	CleanupPolicy       = "cleanup.policy"
	DeleteRetentionMs   = "delete.retention.ms"
	FlushMessages       = "flush.messages"
	FlushMs             = "flush.ms"
	IndexIntervalBytes  = "index.interval.bytes"
	MaxMessageBytes     = "max.message.bytes"
	TimestampType       = "message.timestamp.type"
	MinCleanableRatio   = "min.cleanable.dirty.ratio"
	MinCompactionLagMs  = "min.compaction.lag.ms"
	MinInsyncReplicas   = "min.insync.replicas"
	RetentionBytes      = "retention.bytes"
	RetentionMs         = "retention.ms"
	SegmentBytes        = "segment.bytes"
	SegmentIndexBytes   = "segment.index.bytes"
	SegmentMs           = "segment.ms"
	UncleanLeaderElects = "unclean.leader.election.enable"
)

// configDef describes one topic config: its default and how to check a
// value.
type configDef struct {
	def   string
	check func(string) error
	doc   string
}

// defs are the topic configs partlog knows. The defaults are
// Kafka's, except flush.messages: partlog's is 1, so that an acknowledged
// record is on disk (appenders share fsyncs).
var defs = map[string]configDef{
	CleanupPolicy:       {"delete", checkPolicy, "delete, compact or compact,delete"},
	DeleteRetentionMs:   {"86400000", checkLong(0, math.MaxInt64), "how long tombstones stay in a compacted topic"},
	FlushMessages:       {"1", checkLong(1, math.MaxInt64), "records between fsyncs; 1 syncs before every acknowledgement"},
	FlushMs:             {strconv.FormatInt(math.MaxInt64, 10), checkLong(0, math.MaxInt64), "ms between background fsyncs"},
	IndexIntervalBytes:  {"4096", checkLong(0, math.MaxInt32), "bytes between index entries"},
	MaxMessageBytes:     {"1048588", checkLong(0, math.MaxInt32), "largest record batch"},
	TimestampType:       {"CreateTime", checkOneOf("CreateTime", "LogAppendTime"), "CreateTime or LogAppendTime"},
	MinCleanableRatio:   {"0.5", checkRatio, "dirty share of a log before it is compacted"},
	MinCompactionLagMs:  {"0", checkLong(0, math.MaxInt64), "how long a record stays uncompacted"},
	MinInsyncReplicas:   {"1", checkLong(1, math.MaxInt32), "in-sync replicas an acks=all write needs"},
	RetentionBytes:      {"-1", checkLong(-1, math.MaxInt64), "largest size a partition keeps; -1 no limit"},
	RetentionMs:         {"604800000", checkLong(-1, math.MaxInt64), "how long records are kept; -1 forever"},
	SegmentBytes:        {"1073741824", checkLong(1024, math.MaxInt32), "segment file size"},
	SegmentIndexBytes:   {"10485760", checkLong(48, math.MaxInt32), "preallocated index size"},
	SegmentMs:           {"604800000", checkLong(1, math.MaxInt64), "time before a segment rolls"},
	UncleanLeaderElects: {"false", checkOneOf("true", "false"), "may an out-of-sync replica become leader"},
}

// TopicConfigKeys returns the topic configs partlog accepts, sorted.
func Keys() []string {
	keys := make([]string, 0, len(defs))
	for k := range defs {
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

// Validate checks topic config overrides: known keys, legal values.
func Validate(configs map[string]string) error {
	for k, v := range configs {
		def, ok := defs[k]
		if !ok {
			return fmt.Errorf("%w: unknown topic config %q (known: %s)", kafka.ErrInvalidConfig, k, strings.Join(Keys(), ", "))
		}
		if err := def.check(v); err != nil {
			return fmt.Errorf("%w: %s: %v", kafka.ErrInvalidConfig, k, err)
		}
	}
	return nil
}

// Config is a topic's effective configuration: defaults overlaid with
// its overrides, parsed.
type Config struct {
	values map[string]string
}

// Values returns every config in force, by name. The map is the Config's:
// the caller must not change it.
func (c Config) Values() map[string]string { return c.values }

// Effective returns the configs in force for a topic that overrides the
// defaults with overrides.
func Effective(overrides map[string]string) Config {
	values := make(map[string]string, len(defs))
	for k, def := range defs {
		values[k] = def.def
	}
	for k, v := range overrides {
		values[k] = v
	}
	return Config{values: values}
}

func (c Config) long(key string) int64 {
	n, _ := strconv.ParseInt(c.values[key], 10, 64)
	return n
}

func (c Config) ms(key string) time.Duration {
	n := c.long(key)
	if n > math.MaxInt64/int64(time.Millisecond) {
		return 0 // "forever": the zero value means no limit where used
	}
	return time.Duration(n) * time.Millisecond
}

// LogOptions maps the config onto a partition log's options.
func (c Config) LogOptions() log.Options {
	o := log.Options{
		SegmentBytes:       c.long(SegmentBytes),
		SegmentMs:          c.ms(SegmentMs),
		IndexIntervalBytes: int(c.long(IndexIntervalBytes)),
		MaxIndexBytes:      int(c.long(SegmentIndexBytes)),
		MaxMessageBytes:    int(c.long(MaxMessageBytes)),
		RetentionBytes:     c.long(RetentionBytes),
		RetentionMs:        c.ms(RetentionMs),
	}
	if c.long(RetentionMs) < 0 {
		o.RetentionMs = -1
	}
	if o.IndexIntervalBytes == 0 {
		o.IndexIntervalBytes = 1 // an entry per batch
	}
	c.cleanerOptions(&o)
	switch flush := c.long(FlushMessages); {
	case flush == 1:
		o.SyncBeforeAck = true
	case flush < math.MaxInt64:
		o.FlushMessages = flush
	}
	if ms := c.long(FlushMs); ms < math.MaxInt64 {
		o.FlushInterval = max(time.Duration(ms)*time.Millisecond, time.Millisecond)
	}
	return o
}

// PartitionOptions maps the config onto a partition's options.
func (c Config) PartitionOptions() partition.Options {
	return partition.Options{
		MinInsyncReplicas:    int(c.long(MinInsyncReplicas)),
		DurableHighWatermark: c.long(FlushMessages) == 1,
		LogAppendTime:        c.values[TimestampType] == "LogAppendTime",
		Compacted:            c.Compacted(),
	}
}

// Compacted reports whether the topic's cleanup.policy includes compact.
func (c Config) Compacted() bool {
	p, _ := log.ParseCleanupPolicy(c.values[CleanupPolicy])
	return p.Compacts()
}

// cleanerOptions maps cleanup.policy, delete.retention.ms,
// min.cleanable.dirty.ratio and min.compaction.lag.ms onto a log's options,
// whose zero values are Kafka's defaults.
func (c Config) cleanerOptions(o *log.Options) {
	o.CleanupPolicy, _ = log.ParseCleanupPolicy(c.values[CleanupPolicy])
	if ms := c.long(DeleteRetentionMs); ms == 0 {
		o.DeleteRetentionMs = -1 // none: the log's zero means the default
	} else {
		o.DeleteRetentionMs = longMs(ms)
	}
	ratio, _ := strconv.ParseFloat(c.values[MinCleanableRatio], 64)
	if ratio == 0 {
		ratio = -1 // any dirt: the log's zero means the default
	}
	o.MinCleanableDirtyRatio = ratio
	o.MinCompactionLagMs = longMs(c.long(MinCompactionLagMs))
}

// longMs turns a config in milliseconds into a duration, saturating.
func longMs(ms int64) time.Duration {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// Apply returns a topic's own configs after a's changes:
// own's (none when a replaces the set) with a's applied in order, checked.
// own is not changed.
func Apply(own map[string]string, a transport.ConfigAlteration) (map[string]string, error) {
	next := map[string]string{}
	if !a.Replace {
		maps.Copy(next, own)
	}
	for _, c := range a.Changes {
		if _, ok := defs[c.Name]; !ok {
			return nil, fmt.Errorf("%w: unknown topic config %q (known: %s)", kafka.ErrInvalidConfig, c.Name, strings.Join(Keys(), ", "))
		}
		switch c.Op {
		case transport.ConfigSet:
			next[c.Name] = c.Value
		case transport.ConfigDelete:
			delete(next, c.Name)
		case transport.ConfigAppend, transport.ConfigSubtract:
			if c.Name != CleanupPolicy {
				return nil, fmt.Errorf("%w: %s is not a list: APPEND and SUBTRACT change list configs (cleanup.policy)", kafka.ErrInvalidConfig, c.Name)
			}
			cur, ok := next[c.Name]
			if !ok {
				cur = defs[c.Name].def
			}
			next[c.Name] = editList(cur, c.Value, c.Op == transport.ConfigAppend)
		default:
			return nil, fmt.Errorf("%w: config operation %d", kafka.ErrInvalidRequest, c.Op)
		}
	}
	if err := Validate(next); err != nil {
		return nil, err
	}
	if len(next) == 0 {
		return nil, nil
	}
	return next, nil
}

// editList adds the comma-separated items of values to the list cur, or
// removes them, keeping the order of cur.
func editList(cur, values string, add bool) string {
	var items []string
	for _, it := range strings.Split(cur, ",") {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
		}
	}
	for _, v := range strings.Split(values, ",") {
		v = strings.TrimSpace(v)
		i := slices.Index(items, v)
		switch {
		case v == "":
		case add && i < 0:
			items = append(items, v)
		case !add && i >= 0:
			items = slices.Delete(items, i, i+1)
		}
	}
	return strings.Join(items, ",")
}
