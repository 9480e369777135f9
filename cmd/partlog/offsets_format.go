package main

// offsets_format.go prints the records of __consumer_offsets, decoded with
// the group package's codec, in Kafka's words: as consume's
// --formatter prints them (GroupMetadataManager's OffsetsMessageFormatter
// and GroupMetadataMessageFormatter) and as dump-log --offsets-decoder
// prints them (GroupMetadataManager.formatRecordKeyAndValue, which
// kafka-dump-log.sh calls).

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/group"
)

// offsetsRecord is a decoded record of __consumer_offsets: an offset commit
// (key.IsGroup() false) or a group's metadata. A nil value is a tombstone.
type offsetsRecord struct {
	key    group.Key
	offset *group.OffsetValue
	group  *group.GroupValue
}

// decodeOffsetsRecord decodes a record's key and value.
func decodeOffsetsRecord(key, value []byte) (offsetsRecord, error) {
	k, err := group.DecodeKey(key)
	if err != nil {
		return offsetsRecord{}, err
	}
	rec := offsetsRecord{key: k}
	switch {
	case k.IsConsumerGroup():
		// Formatters skip it, as a kind of record they do not print.
		return offsetsRecord{}, fmt.Errorf("%w: a record of the consumer group protocol (key version %d), not printed yet", group.ErrUnknownVersion, k.Version)
	case value == nil:
	case k.IsGroup():
		v, err := group.DecodeGroupValue(value)
		if err != nil {
			return offsetsRecord{}, err
		}
		rec.group = &v
	default:
		v, err := group.DecodeOffsetValue(value)
		if err != nil {
			return offsetsRecord{}, err
		}
		rec.offset = &v
	}
	return rec, nil
}

// appendOffsetAndMetadata appends an offset commit's line as Kafka's
// OffsetsMessageFormatter prints it, without the newline:
//
//	[group,topic,partition]::OffsetAndMetadata(offset=5, leaderEpoch=Optional[3], metadata=, commitTimestamp=1700000000000, expireTimestamp=None)
//
// and [group,topic,partition]::NULL for a tombstone.
func (rec offsetsRecord) appendOffsetAndMetadata(b []byte) []byte {
	k := rec.key
	b = fmt.Appendf(b, "[%s,%s,%d]::", k.Group, k.Topic, k.Partition)
	v := rec.offset
	if v == nil {
		return append(b, "NULL"...)
	}
	return fmt.Appendf(b, "OffsetAndMetadata(offset=%d, leaderEpoch=%s, metadata=%s, commitTimestamp=%d, expireTimestamp=%s)",
		v.Offset, javaOptional(v.LeaderEpoch), v.Metadata, v.CommitTimestamp, scalaOption(v.ExpireTimestamp))
}

// javaOptional prints a leader epoch as Java's Optional<Integer> does:
// Optional.empty for none (-1), Optional[3].
func javaOptional(epoch int32) string {
	if epoch < 0 {
		return "Optional.empty"
	}
	return "Optional[" + strconv.Itoa(int(epoch)) + "]"
}

// scalaOption prints a timestamp as Scala's Option[Long] does: None for
// none (-1), Some(1700000000000).
func scalaOption(ts int64) string {
	if ts == -1 {
		return "None"
	}
	return "Some(" + strconv.FormatInt(ts, 10) + ")"
}

// appendGroupMetadata appends a group metadata record's line as Kafka's
// GroupMetadataMessageFormatter prints it (GroupMetadata.toString), without
// the newline:
//
//	g::GroupMetadata(groupId=g, generation=1, protocolType=Some(consumer), currentState=Stable, members=HashMap(m -> MemberMetadata(memberId=m, groupInstanceId=None, clientId=c, clientHost=/127.0.0.1, sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, supportedProtocols=List(range))))
//
// and g::NULL for a tombstone. A loaded group is Empty without members and
// Stable with them, as Kafka loads it; members are in the record's order.
func (rec offsetsRecord) appendGroupMetadata(b []byte) []byte {
	b = append(b, rec.key.Group...)
	b = append(b, "::"...)
	v := rec.group
	if v == nil {
		return append(b, "NULL"...)
	}
	state := "Stable"
	if len(v.Members) == 0 {
		state = "Empty"
	}
	b = fmt.Appendf(b, "GroupMetadata(groupId=%s, generation=%d, protocolType=%s, currentState=%s, members=HashMap(",
		rec.key.Group, v.Generation, scalaString(v.ProtocolType), state)
	for i, m := range v.Members {
		if i > 0 {
			b = append(b, ", "...)
		}
		protocol := v.Protocol
		if protocol == "" {
			protocol = "null"
		}
		b = fmt.Appendf(b, "%s -> MemberMetadata(memberId=%s, groupInstanceId=%s, clientId=%s, clientHost=%s, sessionTimeoutMs=%d, rebalanceTimeoutMs=%d, supportedProtocols=List(%s))",
			m.MemberID, m.MemberID, scalaString(m.GroupInstanceID), m.ClientID, m.ClientHost, m.SessionTimeout, m.RebalanceTimeout, protocol)
	}
	return append(b, "))"...)
}

// scalaString prints an optional string as Scala's Option[String] does:
// None for none (empty), Some(s).
func scalaString(s string) string {
	if s == "" {
		return "None"
	}
	return "Some(" + s + ")"
}

// dumpKeyValue returns the key and payload dump-log --offsets-decoder
// prints for the record, as Kafka's GroupMetadataManager.formatRecordKeyAndValue
// writes them:
//
//	offset_commit::group=g,partition=t-0   offset=5 (,metadata=m when there is some)
//	group_metadata::group=g                {"protocolType":"consumer","protocol":"range","generationId":1,"assignment":"{m=[t-0, t-1]}"}
//
// and <DELETE> as the payload of a tombstone.
func (rec offsetsRecord) dumpKeyValue() (key, payload string) {
	k := rec.key
	if !k.IsGroup() {
		key = fmt.Sprintf("offset_commit::group=%s,partition=%s-%d", k.Group, k.Topic, k.Partition)
		switch v := rec.offset; {
		case v == nil:
			payload = "<DELETE>"
		case v.Metadata == "":
			payload = fmt.Sprintf("offset=%d", v.Offset)
		default:
			payload = fmt.Sprintf("offset=%d,metadata=%s", v.Offset, v.Metadata)
		}
		return key, payload
	}
	key = "group_metadata::group=" + k.Group
	v := rec.group
	if v == nil {
		return key, "<DELETE>"
	}
	var assignment []string
	for _, m := range v.Members {
		a, err := consumer.DecodeAssignment(m.Assignment)
		if v.ProtocolType != "consumer" || err != nil {
			assignment = append(assignment, m.MemberID+"="+bigIntHex(m.Assignment))
			continue
		}
		tps := make([]string, len(a.Partitions))
		for i, tp := range a.Partitions {
			tps[i] = fmt.Sprintf("%s-%d", tp.Topic, tp.Partition)
		}
		s := m.MemberID + "=[" + strings.Join(tps, ", ") + "]"
		if len(a.UserData) > 0 {
			s += ":" + bigIntHex(a.UserData)
		}
		assignment = append(assignment, s)
	}
	j := struct {
		ProtocolType string  `json:"protocolType"`
		Protocol     *string `json:"protocol"`
		GenerationID int32   `json:"generationId"`
		Assignment   string  `json:"assignment"`
	}{v.ProtocolType, nil, v.Generation, "{" + strings.Join(assignment, ",") + "}"}
	if v.Protocol != "" {
		j.Protocol = &v.Protocol
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as Jackson writes <, > and &
	enc.Encode(j)            // cannot fail: strings and numbers
	return key, strings.TrimSuffix(buf.String(), "\n")
}

// bigIntHex prints bytes as Kafka's dump does, "%X".format(BigInt(1,
// bytes)): upper-case hexadecimal without leading zeros, "" for none.
func bigIntHex(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	s := strings.TrimLeft(strings.ToUpper(hex.EncodeToString(b)), "0")
	if s == "" {
		return "0"
	}
	return s
}
