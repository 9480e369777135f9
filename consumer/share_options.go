package consumer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// shareConfig is what the share consumer's own options set.
type shareConfig struct {
	group string
	onAck func(topic string, partition int32, offsets []int64, err error)
}

// shareOption is an option of NewShare only: New refuses it, since a
// Consumer is no member of a share group.
type shareOption func(*shareConfig)

func (shareOption) apply(c *config) { c.shareOnly = true }

// ShareGroup makes the consumer a member of the share group id (KIP-932's
// group.id for a KafkaShareConsumer): the members share the records of the
// topics they subscribe to (Topics), record by record rather than
// partition by partition. NewShare requires it; New refuses it.
func ShareGroup(id string) Option {
	return shareOption(func(c *shareConfig) { c.group = id })
}

// OnShareAcknowledged sets the function told how the acknowledgements a
// share consumer sent fared, as Kafka's AcknowledgementCommitCallback: once
// per partition and request, with the offsets of the records acknowledged
// (gaps left out) and nil, or why the node did not apply them
// (kafka.ErrInvalidRecordState when their acquisition locks had expired,
// a share session error, a network error, ...). It runs in the goroutine
// that called Poll, Commit or Close, inside that call, after the request
// is answered; it may call Acknowledge but not Poll, Commit or Close.
// Default: none. NewShare only: New refuses it.
func OnShareAcknowledged(fn func(topic string, partition int32, offsets []int64, err error)) Option {
	return shareOption(func(c *shareConfig) { c.onAck = fn })
}

// AckType is how a share consumer acknowledges a record it was delivered:
// KIP-932's AcknowledgeType, without Gap, which the consumer sends by
// itself for offsets that hold no record.
type AckType int8

// The acknowledgement types; their values are the wire's.
const (
	// AckAccept says the record was processed: it is not delivered
	// again. What a record gets unless Acknowledge says otherwise.
	AckAccept = AckType(transport.AcknowledgeAccept)
	// AckRelease gives the record back, to be delivered again, to this
	// member or another, with its delivery count one higher.
	AckRelease = AckType(transport.AcknowledgeRelease)
	// AckReject says the record cannot be processed: it is not delivered
	// again.
	AckReject = AckType(transport.AcknowledgeReject)
)

// String returns the type as Kafka's AcknowledgeType spells it.
func (t AckType) String() string {
	switch t {
	case AckAccept:
		return "ACCEPT"
	case AckRelease:
		return "RELEASE"
	case AckReject:
		return "REJECT"
	}
	return fmt.Sprintf("AckType(%d)", int8(t))
}

// shareRefused are the options of Consumer that NewShare refuses, each
// with a test of whether an option set its field. The share group's
// coordinator and the share partitions' leaders decide what these decide
// for a Consumer: where a member starts (share.auto.offset.reset), the
// isolation level (share.isolation.level), the session timeout and the
// heartbeat interval, the assignment; acknowledgements replace offset
// commits.
var shareRefused = []struct {
	name string
	set  func(before, after *config) bool
}{
	{"Partitions or PartitionsAt", func(b, a *config) bool { return a.assigning != b.assigning || len(a.assign) != len(b.assign) }},
	{"MaxPartitionFetchBytes", func(b, a *config) bool { return a.maxPartitionFetchBytes != b.maxPartitionFetchBytes }},
	{"AutoOffsetReset", func(b, a *config) bool { return a.reset != b.reset }},
	{"Isolation", func(b, a *config) bool { return a.isolation != b.isolation }},
	{"FetchBuffers", func(b, a *config) bool { return a.buffers != b.buffers }},
	{"MetadataMaxAge", func(b, a *config) bool { return a.metadataMaxAge != b.metadataMaxAge }},
	{"Group (use ShareGroup)", func(b, a *config) bool { return a.grp.group != b.grp.group }},
	{"GroupInstanceID", func(b, a *config) bool { return a.grp.instanceID != b.grp.instanceID }},
	{"Assignors", func(b, a *config) bool {
		return len(a.grp.assignors) != len(b.grp.assignors) || len(a.grp.assignors) > 0 && &a.grp.assignors[0] != &b.grp.assignors[0]
	}},
	{"SessionTimeout", func(b, a *config) bool { return a.grp.sessionTimeout != b.grp.sessionTimeout }},
	{"HeartbeatInterval", func(b, a *config) bool { return a.grp.heartbeatInterval != b.grp.heartbeatInterval }},
	{"MaxPollInterval", func(b, a *config) bool { return a.grp.maxPollInterval != b.grp.maxPollInterval }},
	{"DisableAutoCommit", func(b, a *config) bool { return a.grp.autoCommit != b.grp.autoCommit }},
	{"AutoCommitInterval", func(b, a *config) bool { return a.grp.autoCommitInterval != b.grp.autoCommitInterval }},
	{"Offsets", func(b, a *config) bool { return a.grp.store != nil }},
	{"OnPartitionsAssigned", func(b, a *config) bool { return a.grp.onAssigned != nil }},
	{"OnPartitionsRevoked", func(b, a *config) bool { return a.grp.onRevoked != nil }},
	{"OnPartitionsLost", func(b, a *config) bool { return a.grp.onLost != nil }},
	{"GroupProtocol", func(b, a *config) bool { return a.grp.protocol != b.grp.protocol }},
	{"GroupRemoteAssignor", func(b, a *config) bool { return a.grp.remoteAssignor != b.grp.remoteAssignor }},
}

// refusedByShare returns the names of the options of shareRefused that o
// is. It applies o to two configs whose refused fields all differ, so
// that an option is caught whatever value it sets, the defaults included.
func refusedByShare(o Option) []string {
	def, alt := defaultConfig(), defaultConfig()
	alt.maxPartitionFetchBytes, alt.metadataMaxAge = -1, -1
	alt.reset, alt.isolation, alt.buffers = None, ReadCommitted, ReuseBuffers
	alt.grp.group, alt.grp.instanceID, alt.grp.remoteAssignor = "\x00", "\x00", "\x00"
	alt.grp.assignors = nil
	alt.grp.sessionTimeout, alt.grp.heartbeatInterval, alt.grp.maxPollInterval, alt.grp.autoCommitInterval = -1, -1, -1, -1
	alt.grp.autoCommit, alt.grp.protocol = !def.grp.autoCommit, ConsumerProtocol
	var names []string
	for _, probe := range []config{def, alt} {
		after := probe
		after.startAt = map[kafka.TopicPartition]int64{}
		o.apply(&after)
		for _, r := range shareRefused {
			if r.set(&probe, &after) && !slices.Contains(names, r.name) {
				names = append(names, r.name)
			}
		}
	}
	return names
}

// refusedError names the refused options given.
func refusedError(names []string) error {
	return fmt.Errorf("consumer: options that do not apply to a share consumer (NewShare): %s", strings.Join(names, ", "))
}
