package controller

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// Group configs are Kafka's per-group settings (GroupConfig, KIP-848 and
// KIP-932): an operator sets them on a group id with
// IncrementalAlterConfigs or AlterConfigs (config resource type GROUP) and
// reads them with DescribeConfigs. The group need not exist: its configs
// are kept for when it does. The controller keeps each group's own
// configs in the metadata (RecordGroupConfig), checked as Kafka checks
// them, and the nodes read them from the Metadata they get; a config a
// group does not set has its default (GroupConfigDefaults).

// The group configs, by Kafka's names. Kafka's streams.* group configs are
// left out: partlog has no streams groups.
const (
	// GroupConsumerSessionTimeoutMs is consumer.session.timeout.ms: how
	// long a consumer group's member (KIP-848) lives without a heartbeat.
	// Default 45000 (the broker's group.consumer.session.timeout.ms),
	// between group.consumer.min.session.timeout.ms (45000) and
	// group.consumer.max.session.timeout.ms (60000), and above
	// consumer.heartbeat.interval.ms.
	GroupConsumerSessionTimeoutMs = "consumer.session.timeout.ms"
	// GroupConsumerHeartbeatIntervalMs is consumer.heartbeat.interval.ms:
	// how often a consumer group's member heartbeats. Default 5000
	// (group.consumer.heartbeat.interval.ms), between
	// group.consumer.min.heartbeat.interval.ms (5000) and
	// group.consumer.max.heartbeat.interval.ms (15000).
	GroupConsumerHeartbeatIntervalMs = "consumer.heartbeat.interval.ms"
	// GroupShareSessionTimeoutMs is share.session.timeout.ms: how long a
	// share group's member lives without a heartbeat. Default 45000
	// (group.share.session.timeout.ms), between
	// group.share.min.session.timeout.ms (45000) and
	// group.share.max.session.timeout.ms (60000), and above
	// share.heartbeat.interval.ms.
	GroupShareSessionTimeoutMs = "share.session.timeout.ms"
	// GroupShareHeartbeatIntervalMs is share.heartbeat.interval.ms: how
	// often a share group's member heartbeats. Default 5000
	// (group.share.heartbeat.interval.ms), between
	// group.share.min.heartbeat.interval.ms (5000) and
	// group.share.max.heartbeat.interval.ms (15000).
	GroupShareHeartbeatIntervalMs = "share.heartbeat.interval.ms"
	// GroupShareRecordLockDurationMs is share.record.lock.duration.ms: how
	// long a share group's member holds the records it acquired before
	// they are released for another delivery. Default 30000
	// (group.share.record.lock.duration.ms), between
	// group.share.min.record.lock.duration.ms (15000) and
	// group.share.max.record.lock.duration.ms (60000).
	GroupShareRecordLockDurationMs = "share.record.lock.duration.ms"
	// GroupShareAutoOffsetReset is share.auto.offset.reset: where a share
	// partition starts when the group first reads it — "latest" (the
	// default), "earliest", or "by_duration:" and an ISO-8601 duration
	// (PnDTnHnMn.nS, not negative), the first record at or after that long
	// ago. ParseShareAutoOffsetReset reads it.
	GroupShareAutoOffsetReset = "share.auto.offset.reset"
	// GroupShareIsolationLevel is share.isolation.level: "read_uncommitted"
	// (the default) delivers every record, "read_committed" only those of
	// committed transactions.
	GroupShareIsolationLevel = "share.isolation.level"
)

// groupConfigDef is one group config: its default and how a value is
// checked, as Kafka's GroupConfig defines it.
type groupConfigDef struct {
	name string
	def  string
	// An INT config has atLeast, GroupConfig's own floor, and the range
	// the broker's group.*.min and group.*.max configs allow, at Kafka's
	// defaults (minName, maxName).
	isInt            bool
	atLeast          int64
	min, max         int64
	minName, maxName string
	// check refuses a STRING config's value; it is given trimmed.
	check func(name, value string) error
}

// groupConfigDefs are the group configs in GroupConfig's order, which is
// the order Kafka checks them in.
var groupConfigDefs = []groupConfigDef{
	{name: GroupConsumerSessionTimeoutMs, def: "45000", isInt: true, atLeast: 1, min: 45000, max: 60000,
		minName: "group.consumer.min.session.timeout.ms", maxName: "group.consumer.max.session.timeout.ms"},
	{name: GroupConsumerHeartbeatIntervalMs, def: "5000", isInt: true, atLeast: 1, min: 5000, max: 15000,
		minName: "group.consumer.min.heartbeat.interval.ms", maxName: "group.consumer.max.heartbeat.interval.ms"},
	{name: GroupShareSessionTimeoutMs, def: "45000", isInt: true, atLeast: 1, min: 45000, max: 60000,
		minName: "group.share.min.session.timeout.ms", maxName: "group.share.max.session.timeout.ms"},
	{name: GroupShareHeartbeatIntervalMs, def: "5000", isInt: true, atLeast: 1, min: 5000, max: 15000,
		minName: "group.share.min.heartbeat.interval.ms", maxName: "group.share.max.heartbeat.interval.ms"},
	{name: GroupShareRecordLockDurationMs, def: "30000", isInt: true, atLeast: 1000, min: 15000, max: 60000,
		minName: "group.share.min.record.lock.duration.ms", maxName: "group.share.max.record.lock.duration.ms"},
	{name: GroupShareAutoOffsetReset, def: string(ShareResetLatest), check: checkShareAutoOffsetReset},
	{name: GroupShareIsolationLevel, def: "read_uncommitted", check: checkShareIsolationLevel},
}

// groupRangeOrder is the order in which Kafka checks the INT configs
// against the broker's bounds (GroupConfig.validateValues).
var groupRangeOrder = []string{GroupConsumerHeartbeatIntervalMs, GroupConsumerSessionTimeoutMs,
	GroupShareHeartbeatIntervalMs, GroupShareSessionTimeoutMs, GroupShareRecordLockDurationMs}

// GroupConfigDefaults returns every group config's default, by name: the
// value in force for a group that does not set it. The map is the
// caller's.
func GroupConfigDefaults() map[string]string {
	defaults := make(map[string]string, len(groupConfigDefs))
	for _, d := range groupConfigDefs {
		defaults[d.name] = d.def
	}
	return defaults
}

// lookupGroupConfig returns the definition of the config name.
func lookupGroupConfig(name string) (groupConfigDef, bool) {
	i := slices.IndexFunc(groupConfigDefs, func(d groupConfigDef) bool { return d.name == name })
	if i < 0 {
		return groupConfigDef{}, false
	}
	return groupConfigDefs[i], true
}

// ShareResetStrategy is a share.auto.offset.reset strategy.
type ShareResetStrategy string

// The share.auto.offset.reset strategies.
const (
	// ShareResetLatest starts a share partition at its log end offset.
	ShareResetLatest ShareResetStrategy = "latest"
	// ShareResetEarliest starts a share partition at its log start offset.
	ShareResetEarliest ShareResetStrategy = "earliest"
	// ShareResetByDuration starts a share partition at the first record
	// whose timestamp is at or after now less a duration.
	ShareResetByDuration ShareResetStrategy = "by_duration"
)

// ShareAutoOffsetReset is a share.auto.offset.reset value, read.
type ShareAutoOffsetReset struct {
	// Strategy says where a share partition starts.
	Strategy ShareResetStrategy
	// Duration is ShareResetByDuration's: how long before now the share
	// partition starts; zero for the other strategies. An ISO-8601
	// duration longer than a time.Duration holds (about 292 years) is the
	// longest one.
	Duration time.Duration
}

// ParseShareAutoOffsetReset reads a share.auto.offset.reset value as Kafka
// reads it (ShareGroupAutoOffsetResetStrategy): "latest", "earliest", or
// "by_duration:" and a duration Java's Duration.parse takes that is not
// negative. It refuses anything else, such as "none", "LATEST" or a bare
// "by_duration", with kafka.ErrInvalidConfig.
func ParseShareAutoOffsetReset(value string) (ShareAutoOffsetReset, error) {
	invalid := func() (ShareAutoOffsetReset, error) {
		return ShareAutoOffsetReset{}, fmt.Errorf("%w: Invalid value `%s` for configuration %s. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'",
			kafka.ErrInvalidConfig, value, GroupShareAutoOffsetReset)
	}
	switch value {
	case string(ShareResetLatest), string(ShareResetEarliest):
		return ShareAutoOffsetReset{Strategy: ShareResetStrategy(value)}, nil
	}
	iso, ok := strings.CutPrefix(value, string(ShareResetByDuration)+":")
	if !ok {
		return invalid()
	}
	d, ok := parseISODuration(iso)
	if !ok {
		return invalid()
	}
	return ShareAutoOffsetReset{Strategy: ShareResetByDuration, Duration: d}, nil
}

func checkShareAutoOffsetReset(_, value string) error {
	_, err := ParseShareAutoOffsetReset(value)
	return err
}

func checkShareIsolationLevel(name, value string) error {
	if value != "read_committed" && value != "read_uncommitted" {
		return fmt.Errorf("%w: Invalid value %s for configuration %s: String must be one of: read_committed, read_uncommitted",
			kafka.ErrInvalidConfig, value, name)
	}
	return nil
}

// isoDuration is Java's Duration.parse pattern: days, hours, minutes and
// seconds (with up to nine decimals), each signed, any letter case.
var isoDuration = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// parseISODuration reads an ISO-8601 duration as Java's Duration.parse
// does, and reports whether it is one that is not negative: at least one
// of days, hours, minutes and seconds; no "T" without a time after it;
// no part that overflows Java's seconds (an int64). A duration past
// time.Duration's range saturates.
func parseISODuration(s string) (time.Duration, bool) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || (m[2] == "" && m[4] == "" && m[5] == "" && m[6] == "") || strings.EqualFold(m[3], "T") {
		return 0, false
	}
	var secs int64
	for _, p := range []struct {
		group int
		unit  int64
	}{{2, 86400}, {4, 3600}, {5, 60}, {6, 1}} { // Java's order of sums
		if m[p.group] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[p.group], 10, 64)
		if err != nil {
			return 0, false
		}
		part, ok := mulExact(n, p.unit)
		if !ok {
			return 0, false
		}
		if secs, ok = addExact(secs, part); !ok {
			return 0, false
		}
	}
	var nanos int64
	if f := m[7]; f != "" {
		nanos, _ = strconv.ParseInt((f + "000000000")[:9], 10, 64)
		if strings.HasPrefix(m[6], "-") {
			nanos = -nanos
		}
	}
	if m[1] == "-" {
		if secs == math.MinInt64 {
			return 0, false
		}
		secs, nanos = -secs, -nanos
	}
	if secs < 0 || (secs == 0 && nanos < 0) {
		return 0, false // Kafka refuses a negative duration
	}
	if nanos < 0 {
		secs, nanos = secs-1, nanos+int64(time.Second)
	}
	if secs > (math.MaxInt64-nanos)/int64(time.Second) {
		return math.MaxInt64, true
	}
	return time.Duration(secs)*time.Second + time.Duration(nanos), true
}

// mulExact returns a*b and whether it did not overflow.
func mulExact(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	return p, true
}

// addExact returns a+b and whether it did not overflow.
func addExact(a, b int64) (int64, bool) {
	s := a + b
	if (a > 0 && b > 0 && s < 0) || (a < 0 && b < 0 && s >= 0) {
		return 0, false
	}
	return s, true
}

// javaTrim trims s as Java's String.trim does, as Kafka's ConfigDef trims
// a value before it parses it: every character up to ' '.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// checkGroupConfigs checks a group's own configs as Kafka's
// GroupConfig.validate does, with the broker's bounds at Kafka's
// defaults, and returns them as Kafka's DescribeConfigs shows them:
// trimmed, integers in decimal; nil when there are none. It refuses, with
// kafka.ErrInvalidConfig, an unknown name, a value that does not parse or
// is out of range, and a session timeout not above its heartbeat
// interval (the defaults standing in for what the group does not set).
func checkGroupConfigs(own map[string]string) (map[string]string, error) {
	for _, k := range slices.Sorted(maps.Keys(own)) {
		if _, ok := lookupGroupConfig(k); !ok {
			return nil, fmt.Errorf("%w: Unknown group config name: %s", kafka.ErrInvalidConfig, k)
		}
	}
	canonical := map[string]string{}
	ints := map[string]int64{}
	for _, d := range groupConfigDefs {
		v, set := own[d.name]
		if !set {
			if d.isInt {
				ints[d.name], _ = strconv.ParseInt(d.def, 10, 32)
			}
			continue
		}
		v = javaTrim(v)
		if len(v) > maxMetadataList {
			return nil, fmt.Errorf("%w: the value of %s is %d bytes; at most %d", kafka.ErrInvalidConfig, d.name, len(v), maxMetadataList)
		}
		if !d.isInt {
			if err := d.check(d.name, v); err != nil {
				return nil, err
			}
			canonical[d.name] = v
			continue
		}
		n, err := strconv.ParseInt(v, 10, 32)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: Invalid value %s for configuration %s: Not a number of type INT", kafka.ErrInvalidConfig, v, d.name)
		case n < d.atLeast:
			return nil, fmt.Errorf("%w: Invalid value %d for configuration %s: Value must be at least %d", kafka.ErrInvalidConfig, n, d.name, d.atLeast)
		}
		ints[d.name] = n
		canonical[d.name] = strconv.FormatInt(n, 10)
	}
	for _, name := range groupRangeOrder {
		d, _ := lookupGroupConfig(name)
		switch v := ints[name]; {
		case v < d.min:
			return nil, fmt.Errorf("%w: %s must be greater than or equal to %s (%d), not %d", kafka.ErrInvalidConfig, name, d.minName, d.min, v)
		case v > d.max:
			return nil, fmt.Errorf("%w: %s must be less than or equal to %s (%d), not %d", kafka.ErrInvalidConfig, name, d.maxName, d.max, v)
		}
	}
	for _, p := range [][2]string{{GroupConsumerSessionTimeoutMs, GroupConsumerHeartbeatIntervalMs}, {GroupShareSessionTimeoutMs, GroupShareHeartbeatIntervalMs}} {
		if ints[p[0]] <= ints[p[1]] {
			return nil, fmt.Errorf("%w: %s must be greater than %s", kafka.ErrInvalidConfig, p[0], p[1])
		}
	}
	return cloneConfigs(canonical), nil
}

// applyGroupConfigs returns a group's own configs after a's changes, as
// Kafka's controller makes them: own's (none when a replaces the set)
// with a's applied, then the whole set checked (checkGroupConfigs). A
// config named twice is refused with kafka.ErrInvalidRequest, APPEND and
// SUBTRACT with kafka.ErrInvalidConfig (no group config is a list).
// Deleting a config the group does not set changes nothing, as in Kafka.
// own is not changed.
func applyGroupConfigs(own map[string]string, a transport.ConfigAlteration) (map[string]string, error) {
	next := map[string]string{}
	if !a.Replace {
		maps.Copy(next, own)
	}
	named := make(map[string]bool, len(a.Changes))
	for _, c := range a.Changes {
		if named[c.Name] {
			return nil, fmt.Errorf("%w: Error due to duplicate config keys: %s", kafka.ErrInvalidRequest, c.Name)
		}
		named[c.Name] = true
		switch c.Op {
		case transport.ConfigSet:
			next[c.Name] = c.Value
		case transport.ConfigDelete:
			delete(next, c.Name)
		case transport.ConfigAppend, transport.ConfigSubtract:
			op := "APPEND"
			if c.Op == transport.ConfigSubtract {
				op = "SUBTRACT"
			}
			return nil, fmt.Errorf("%w: Can't %s to key %s because its type is not LIST", kafka.ErrInvalidConfig, op, c.Name)
		default:
			return nil, fmt.Errorf("%w: config operation %d", kafka.ErrInvalidRequest, c.Op)
		}
	}
	return checkGroupConfigs(next)
}

// AlterGroupConfigs makes a's changes to the configs group sets itself
// (a's resource is not read), in one commit, or with validateOnly only
// checks them. The group need not exist. It fails with
// kafka.ErrInvalidRequest for an empty group id (Kafka has no default
// group resource) or one longer than a metadata record holds (4096
// bytes), and as applyGroupConfigs fails; then nothing changes. Changes
// that leave the configs as they are commit nothing.
func (c *Machine) AlterGroupConfigs(group string, a transport.ConfigAlteration, validateOnly bool) error {
	switch {
	case group == "":
		return fmt.Errorf("%w: Default group resources are not allowed", kafka.ErrInvalidRequest)
	case len(group) > maxMetadataList:
		return fmt.Errorf("%w: a group id is at most %d bytes in the metadata", kafka.ErrInvalidRequest, maxMetadataList)
	}
	next, err := applyGroupConfigs(c.groupConfigs[group], a)
	if err != nil {
		return err
	}
	if validateOnly || maps.Equal(next, c.groupConfigs[group]) {
		return nil
	}
	return c.commit([]Record{{Type: RecordGroupConfig, Group: group, Configs: next}})
}

// GroupConfigs returns a copy of the configs group sets itself, nil when
// it sets none.
func (c *Machine) GroupConfigs(group string) map[string]string {
	return cloneConfigs(c.groupConfigs[group])
}

// cloneGroupConfigs returns a deep copy of byGroup, nil when it is empty.
func cloneGroupConfigs(byGroup map[string]map[string]string) map[string]map[string]string {
	if len(byGroup) == 0 {
		return nil
	}
	out := make(map[string]map[string]string, len(byGroup))
	for g, configs := range byGroup {
		out[g] = maps.Clone(configs)
	}
	return out
}
