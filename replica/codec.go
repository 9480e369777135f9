package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/partlog/partlog/kafka"
)

// This file holds the binary encoding of Messages for a transport between
// processes: one buffer carries a batch of messages, usually all from one
// node to another. All integers are big endian and fixed width.
//
//	batch:    version u8 | count u32 | count × message
//	message:  type u8 | from i32 | to i32 | seq u64 | payloads u8 | payload...
//
// payloads has one bit per payload present, in this order, each encoded
// after the header in the same order:
//
//	bit 0 Fetch:          topic | partition i32 | current leader epoch i32 |
//	                      fetch offset i64 | last fetched epoch i32 |
//	                      log start offset i64 | max bytes i32 | replica epoch i64
//	bit 1 FetchResponse:  topic | partition i32 | err | leader epoch i32 |
//	                      high watermark i64 | log start offset i64 |
//	                      log end offset i64 | diverging u8 (0 or 1)
//	                      [| epoch i32 | end offset i64] | records len u32 | records
//	bit 2 EpochRequest:   topic | partition i32 | current leader epoch i32 |
//	                      leader epoch i32
//	bit 3 EpochResponse:  topic | partition i32 | err | leader epoch i32 |
//	                      end offset i64
//
//	topic:  len u16 | bytes
//	err:    code i16 [| len u16 | text], the text only when code is not 0
//
// The encoding carries a message as it is: it does not check that the
// payload Type names is there, which Replica.Step does.

// MessageVersion is the version AppendMessages writes. DecodeMessages
// refuses versions it does not know rather than misread them. Version 0 is
// never written, so a zeroed buffer does not decode.
const MessageVersion uint8 = 1

// The payload bits of an encoded message.
const (
	payloadFetch uint8 = 1 << iota
	payloadFetchResponse
	payloadEpochRequest
	payloadEpochResponse
	payloadAll = payloadFetch | payloadFetchResponse | payloadEpochRequest | payloadEpochResponse
)

// Fixed sizes bounding what a decoder allocates for a count it reads.
const (
	messageHeaderSize = 1 + 4 + 4 + 8 + 1
	maxText           = math.MaxUint16
)

// AppendMessages appends the encoding of msgs to dst and returns the
// extended buffer, as the append built-in does. Every field of each message
// and of its payloads is kept, except that an Err keeps only its Kafka code
// (kafka.CodeOf) and its text, empty Records decode as nil, and a
// topic or error text longer than 65535 bytes is cut to that length.
func AppendMessages(dst []byte, msgs []Message) []byte {
	dst = append(dst, MessageVersion)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(msgs)))
	for i := range msgs {
		dst = appendMessage(dst, &msgs[i])
	}
	return dst
}

func appendMessage(dst []byte, m *Message) []byte {
	be := binary.BigEndian
	dst = append(dst, byte(m.Type))
	dst = be.AppendUint32(dst, uint32(m.From))
	dst = be.AppendUint32(dst, uint32(m.To))
	dst = be.AppendUint64(dst, m.Seq)
	var payloads uint8
	if m.Fetch != nil {
		payloads |= payloadFetch
	}
	if m.FetchResponse != nil {
		payloads |= payloadFetchResponse
	}
	if m.EpochRequest != nil {
		payloads |= payloadEpochRequest
	}
	if m.EpochResponse != nil {
		payloads |= payloadEpochResponse
	}
	dst = append(dst, payloads)
	if f := m.Fetch; f != nil {
		dst = appendText(dst, f.Topic)
		dst = be.AppendUint32(dst, uint32(f.Partition))
		dst = be.AppendUint32(dst, uint32(f.CurrentLeaderEpoch))
		dst = be.AppendUint64(dst, uint64(f.FetchOffset))
		dst = be.AppendUint32(dst, uint32(f.LastFetchedEpoch))
		dst = be.AppendUint64(dst, uint64(f.LogStartOffset))
		dst = be.AppendUint32(dst, uint32(f.MaxBytes))
		dst = be.AppendUint64(dst, uint64(f.ReplicaEpoch))
	}
	if r := m.FetchResponse; r != nil {
		dst = appendText(dst, r.Topic)
		dst = be.AppendUint32(dst, uint32(r.Partition))
		dst = appendError(dst, r.Err)
		dst = be.AppendUint32(dst, uint32(r.LeaderEpoch))
		dst = be.AppendUint64(dst, uint64(r.HighWatermark))
		dst = be.AppendUint64(dst, uint64(r.LogStartOffset))
		dst = be.AppendUint64(dst, uint64(r.LogEndOffset))
		if d := r.DivergingEpoch; d != nil {
			dst = append(dst, 1)
			dst = be.AppendUint32(dst, uint32(d.LeaderEpoch))
			dst = be.AppendUint64(dst, uint64(d.EndOffset))
		} else {
			dst = append(dst, 0)
		}
		dst = be.AppendUint32(dst, uint32(len(r.Records)))
		dst = append(dst, r.Records...)
	}
	if q := m.EpochRequest; q != nil {
		dst = appendText(dst, q.Topic)
		dst = be.AppendUint32(dst, uint32(q.Partition))
		dst = be.AppendUint32(dst, uint32(q.CurrentLeaderEpoch))
		dst = be.AppendUint32(dst, uint32(q.LeaderEpoch))
	}
	if r := m.EpochResponse; r != nil {
		dst = appendText(dst, r.Topic)
		dst = be.AppendUint32(dst, uint32(r.Partition))
		dst = appendError(dst, r.Err)
		dst = be.AppendUint32(dst, uint32(r.LeaderEpoch))
		dst = be.AppendUint64(dst, uint64(r.EndOffset))
	}
	return dst
}

// appendText appends s with a uint16 length, cut to maxText bytes at a
// rune boundary.
func appendText(dst []byte, s string) []byte {
	if len(s) > maxText {
		n := maxText
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

// appendError appends err's Kafka code and, for a non-nil err, its text. A
// non-nil error whose code is 0 is written as UNKNOWN_SERVER_ERROR, so that
// it stays an error.
func appendError(dst []byte, err error) []byte {
	code := errorCode(err)
	dst = binary.BigEndian.AppendUint16(dst, uint16(code))
	if code == 0 {
		return dst
	}
	return appendText(dst, err.Error())
}

// errorCode returns the code err is sent with: the code it came with when
// it was decoded (an unknown code stays itself), else kafka.CodeOf.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var re *remoteError
	if errors.As(err, &re) {
		return re.code
	}
	if code := kafka.CodeOf(err); code != 0 {
		return code
	}
	return kafka.ErrUnknownServerError.Code
}

// remoteError is an error decoded from a message: it reads as the sender's
// error read and unwraps to the Kafka error of its code, so errors.Is
// matches the sentinel the sender's error matched.
type remoteError struct {
	code int16
	text string
	err  error // kafka.ErrorForCode(code)
}

func (e *remoteError) Error() string { return e.text }
func (e *remoteError) Unwrap() error { return e.err }

// DecodeMessages decodes what AppendMessages wrote. The Records of fetch
// responses point into b, which must therefore stay unchanged while they
// are in use; nothing else refers to b. An Err decodes to an error with the
// sender's text that matches, with errors.Is and errors.As, the
// *kafka.Error of its code (an unknown code still decodes to a non-nil
// error). Anything else fails with an error matching ErrCorruptMessage,
// and a corrupt length never makes DecodeMessages allocate more than b
// justifies.
func DecodeMessages(b []byte) ([]Message, error) {
	d := decoder{b: b}
	if v := d.u8(); d.err == nil && v != MessageVersion {
		d.fail("version %d", v)
	}
	n := d.u32()
	if d.err == nil && uint64(n) > uint64(len(d.b)/messageHeaderSize) {
		d.fail("%d messages in %d bytes", n, len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	msgs := make([]Message, n)
	for i := range msgs {
		d.message(&msgs[i])
		if d.err != nil {
			return nil, d.err
		}
	}
	if len(d.b) != 0 {
		d.fail("%d bytes after the last message", len(d.b))
		return nil, d.err
	}
	return msgs, nil
}

// decoder reads big-endian fields, remembering the first failure, which
// wraps ErrCorruptMessage.
type decoder struct {
	b     []byte
	err   error
	topic string // the last topic read, to share among messages
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorruptMessage, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.fail("truncated: %d bytes left, %d wanted", len(d.b), n)
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) u8() uint8 {
	if p := d.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if p := d.take(2); p != nil {
		return binary.BigEndian.Uint16(p)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if p := d.take(4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if p := d.take(8); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

func (d *decoder) message(m *Message) {
	m.Type = MessageType(d.u8())
	m.From = d.i32()
	m.To = d.i32()
	m.Seq = d.u64()
	payloads := d.u8()
	if d.err != nil {
		return
	}
	if payloads&^payloadAll != 0 {
		d.fail("payload bits %#x", payloads)
		return
	}
	if payloads&payloadFetch != 0 {
		m.Fetch = &kafka.ReplicaFetchPartition{
			Topic:              d.topicName(),
			Partition:          d.i32(),
			CurrentLeaderEpoch: d.i32(),
			FetchOffset:        d.i64(),
			LastFetchedEpoch:   d.i32(),
			LogStartOffset:     d.i64(),
			MaxBytes:           d.i32(),
			ReplicaEpoch:       d.i64(),
		}
	}
	if payloads&payloadFetchResponse != 0 {
		r := &kafka.ReplicaFetchPartitionResponse{
			Topic:          d.topicName(),
			Partition:      d.i32(),
			Err:            d.error(),
			LeaderEpoch:    d.i32(),
			HighWatermark:  d.i64(),
			LogStartOffset: d.i64(),
			LogEndOffset:   d.i64(),
		}
		switch diverging := d.u8(); diverging {
		case 0:
		case 1:
			r.DivergingEpoch = &kafka.EpochEndOffset{LeaderEpoch: d.i32(), EndOffset: d.i64()}
		default:
			d.fail("diverging flag %d", diverging)
		}
		r.Records = d.blob()
		m.FetchResponse = r
	}
	if payloads&payloadEpochRequest != 0 {
		m.EpochRequest = &kafka.OffsetForLeaderEpochPartition{
			Topic:              d.topicName(),
			Partition:          d.i32(),
			CurrentLeaderEpoch: d.i32(),
			LeaderEpoch:        d.i32(),
		}
	}
	if payloads&payloadEpochResponse != 0 {
		r := &kafka.OffsetForLeaderEpochPartitionResponse{
			Topic:     d.topicName(),
			Partition: d.i32(),
			Err:       d.error(),
		}
		r.LeaderEpoch = d.i32()
		r.EndOffset = d.i64()
		m.EpochResponse = r
	}
}

func (d *decoder) i32() int32 { return int32(d.u32()) }
func (d *decoder) i64() int64 { return int64(d.u64()) }

// text reads a string with a uint16 length.
func (d *decoder) text() string {
	n := int(d.u16())
	return string(d.take(n))
}

// topicName reads a topic name as text does, sharing the string with the
// previous message's when they are equal: a batch often carries many
// partitions of one topic.
func (d *decoder) topicName() string {
	n := int(d.u16())
	p := d.take(n)
	if string(p) != d.topic {
		d.topic = string(p)
	}
	return d.topic
}

// blob reads bytes with a uint32 length, without copying them: the slice
// points into the input, its capacity cut to its length so that appending
// to it cannot overwrite what follows. Zero bytes read as nil.
func (d *decoder) blob() []byte {
	n := d.u32()
	if d.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(d.b)) {
		d.fail("truncated: %d bytes left, %d wanted", len(d.b), n)
		return nil
	}
	if n == 0 {
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

// error reads an error as appendError wrote it.
func (d *decoder) error() error {
	code := int16(d.u16())
	if d.err != nil || code == 0 {
		return nil
	}
	text := d.text()
	if d.err != nil {
		return nil
	}
	return &remoteError{code: code, text: text, err: kafka.ErrorForCode(code)}
}
