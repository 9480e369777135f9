package replica_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/replica/replicatest"
)

// codecSamples are messages of every type with every field set, and the
// corner cases of their payloads: no error, an error that is not Kafka's,
// no diverging epoch, no records, and all payloads in one message.
func codecSamples() []replica.Message {
	fetch := &kafka.ReplicaFetchPartition{Topic: "orders", Partition: 7, CurrentLeaderEpoch: 12,
		FetchOffset: 1 << 40, LastFetchedEpoch: 11, LogStartOffset: 1 << 33, MaxBytes: 1 << 20, ReplicaEpoch: 1<<50 + 3}
	response := &kafka.ReplicaFetchPartitionResponse{Topic: "orders", Partition: 7,
		Err:         fmt.Errorf("%w: partition orders-7 moved to epoch 13", kafka.ErrFencedLeaderEpoch),
		LeaderEpoch: 13, HighWatermark: 1<<40 - 5, LogStartOffset: 1 << 33, LogEndOffset: 1<<40 + 9,
		DivergingEpoch: &kafka.EpochEndOffset{LeaderEpoch: 11, EndOffset: 1<<40 - 2},
		Records:        []byte("batch bytes as stored \x00\xff")}
	epochRequest := &kafka.OffsetForLeaderEpochPartition{Topic: "payments", Partition: 2, CurrentLeaderEpoch: 5, LeaderEpoch: 4}
	epochResponse := &kafka.OffsetForLeaderEpochPartitionResponse{Topic: "payments", Partition: 2,
		Err: kafka.ErrNotLeaderOrFollower, EpochEndOffset: kafka.EpochEndOffset{LeaderEpoch: 4, EndOffset: 1 << 35}}
	return []replica.Message{
		{Type: replica.MsgFetch, From: 2, To: 1, Seq: 1<<63 + 5, Fetch: fetch},
		{Type: replica.MsgFetchResponse, From: 1, To: 2, Seq: 1<<63 + 5, FetchResponse: response},
		{Type: replica.MsgOffsetsForLeaderEpoch, From: 3, To: 1, Seq: 9, EpochRequest: epochRequest},
		{Type: replica.MsgOffsetsForLeaderEpochResponse, From: 1, To: 3, Seq: 9, EpochResponse: epochResponse},
		// Negative values, no error, no diverging epoch, no records.
		{Type: replica.MsgFetchResponse, From: -1, To: 0, FetchResponse: &kafka.ReplicaFetchPartitionResponse{
			Topic: "t", LeaderEpoch: -1, HighWatermark: -1, LogStartOffset: -1, LogEndOffset: -1}},
		{Type: replica.MsgFetch, Fetch: &kafka.ReplicaFetchPartition{LastFetchedEpoch: kafka.UndefinedEpoch}},
		// An error that is no Kafka error travels as UNKNOWN_SERVER_ERROR.
		{Type: replica.MsgOffsetsForLeaderEpochResponse, From: 1, To: 3, EpochResponse: &kafka.OffsetForLeaderEpochPartitionResponse{
			Topic: "payments", Err: errors.New("disk on fire"),
			EpochEndOffset: kafka.EpochEndOffset{LeaderEpoch: kafka.UndefinedEpoch, EndOffset: -1}}},
		// The encoding keeps whatever payloads a message has.
		{Type: replica.MsgFetch, From: 4, To: 5, Seq: 1, Fetch: fetch, FetchResponse: response,
			EpochRequest: epochRequest, EpochResponse: epochResponse},
		{Type: replica.MessageType(200), From: 4, To: 5, Seq: 2},
	}
}

// errorOf returns the *kafka.Error err matches, or nil.
func errorOf(err error) *kafka.Error {
	var e *kafka.Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// checkError checks that got reads as want reads and matches the Kafka
// error want matches, or UNKNOWN_SERVER_ERROR when want matches none.
func checkError(t testing.TB, got, want error) {
	t.Helper()
	switch {
	case want == nil && got == nil:
		return
	case want == nil || got == nil:
		t.Fatalf("error %v, want %v", got, want)
	}
	sentinel := errorOf(want)
	if sentinel == nil {
		sentinel = kafka.ErrUnknownServerError
	}
	if !errors.Is(got, sentinel) || errorOf(got) != sentinel {
		t.Fatalf("error %v does not match %v", got, sentinel)
	}
	if got.Error() != want.Error() {
		t.Fatalf("error reads %q, want %q", got.Error(), want.Error())
	}
}

// normalised returns a deep copy of m without its errors, which
// checkError compares, and with empty Records as nil.
func normalised(m replica.Message) (replica.Message, []error) {
	var errs []error
	if m.FetchResponse != nil {
		r := *m.FetchResponse
		errs = append(errs, r.Err)
		r.Err = nil
		if len(r.Records) == 0 {
			r.Records = nil
		}
		m.FetchResponse = &r
	}
	if m.EpochResponse != nil {
		r := *m.EpochResponse
		errs = append(errs, r.Err)
		r.Err = nil
		m.EpochResponse = &r
	}
	return m, errs
}

// checkRoundTrip checks that got is want after a round trip.
func checkRoundTrip(t testing.TB, got, want []replica.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("decoded %d messages, want %d", len(got), len(want))
	}
	for i := range want {
		g, gotErrs := normalised(got[i])
		w, wantErrs := normalised(want[i])
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("message %d decoded as\n%+v\nwant\n%+v", i, g, w)
		}
		for j := range wantErrs {
			checkError(t, gotErrs[j], wantErrs[j])
		}
	}
}

// Every message type with every field set survives a round trip, one by
// one and batched, appended after existing bytes; a cut at any length, a
// byte more, or an unknown version fails with ErrCorruptMessage.
func TestMessagesRoundTrip(t *testing.T) {
	samples := codecSamples()
	batches := [][]replica.Message{nil, samples}
	for i := range samples {
		batches = append(batches, samples[i:i+1])
	}
	for _, msgs := range batches {
		prefix := []byte("prefix")
		b := replica.AppendMessages(bytes.Clone(prefix), msgs)
		if !bytes.Equal(b[:len(prefix)], prefix) {
			t.Fatalf("AppendMessages changed dst's bytes: %q", b[:len(prefix)])
		}
		b = b[len(prefix):]
		if b[0] != replica.MessageVersion {
			t.Fatalf("version byte %d, want %d", b[0], replica.MessageVersion)
		}
		got, err := replica.DecodeMessages(b)
		if err != nil {
			t.Fatalf("%v: %v", msgs, err)
		}
		checkRoundTrip(t, got, msgs)
		if again := replica.AppendMessages(nil, got); !bytes.Equal(again, b) {
			t.Fatalf("decoded messages encode to %x, want %x", again, b)
		}
		for n := range len(b) {
			if m, err := replica.DecodeMessages(b[:n]); !errors.Is(err, replica.ErrCorruptMessage) || m != nil {
				t.Fatalf("%v cut to %d of %d bytes: %v, %v", msgs, n, len(b), m, err)
			}
		}
		if _, err := replica.DecodeMessages(append(bytes.Clone(b), 0)); !errors.Is(err, replica.ErrCorruptMessage) {
			t.Fatalf("%v with a byte more: %v", msgs, err)
		}
		for _, v := range []byte{0, replica.MessageVersion + 1} {
			c := bytes.Clone(b)
			c[0] = v
			if _, err := replica.DecodeMessages(c); !errors.Is(err, replica.ErrCorruptMessage) {
				t.Fatalf("%v in version %d: %v", msgs, v, err)
			}
		}
	}
}

// Fields only the encoding can get wrong are refused: payload bits no
// payload has, a diverging flag other than 0 and 1, a count of messages
// the bytes cannot hold; none of them allocates for what it claims.
func TestDecodeMessagesCorrupt(t *testing.T) {
	fetchResponse := replica.AppendMessages(nil, []replica.Message{{Type: replica.MsgFetchResponse,
		FetchResponse: &kafka.ReplicaFetchPartitionResponse{Topic: "t", Records: []byte("abc")}}})
	const headerEnd = 1 + 4 + 1 + 4 + 4 + 8 // version, count, type, from, to, seq
	divergingAt := headerEnd + 1 + 2 + 1 + 4 + 2 + 4 + 3*8
	if fetchResponse[divergingAt] != 0 {
		t.Fatalf("diverging flag not at %d: %x", divergingAt, fetchResponse)
	}
	for _, c := range []struct {
		name  string
		patch func(b []byte)
	}{
		{"payload bit 4", func(b []byte) { b[headerEnd] |= 1 << 4 }},
		{"payload bit 7", func(b []byte) { b[headerEnd] |= 1 << 7 }},
		{"diverging flag 2", func(b []byte) { b[divergingAt] = 2 }},
		{"two messages", func(b []byte) { b[4] = 2 }},
		{"2^32-1 messages", func(b []byte) { copy(b[1:], []byte{0xff, 0xff, 0xff, 0xff}) }},
		{"2^32-1 record bytes", func(b []byte) { copy(b[len(b)-7:], []byte{0xff, 0xff, 0xff, 0xff}) }},
		{"topic of 65535 bytes", func(b []byte) { copy(b[headerEnd+1:], []byte{0xff, 0xff}) }},
	} {
		b := bytes.Clone(fetchResponse)
		c.patch(b)
		if _, err := replica.DecodeMessages(b); !errors.Is(err, replica.ErrCorruptMessage) {
			t.Fatalf("%s: %v", c.name, err)
		}
		// Averaged over many decodes, so that what other goroutines
		// allocate meanwhile (TotalAlloc is the process's) does not count.
		const runs = 200
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			replica.DecodeMessages(b)
		}
		runtime.ReadMemStats(&after)
		if n := (after.TotalAlloc - before.TotalAlloc) / runs; n > 4<<10 {
			t.Fatalf("%s: %d bytes allocated decoding %d", c.name, n, len(b))
		}
	}
}

// An error code this build does not know still decodes to an error, with
// the sender's text, and a node passing the message on sends the same
// code.
func TestMessagesUnknownErrorCode(t *testing.T) {
	future := &kafka.Error{Code: 4242, Name: "FUTURE_ERROR", Message: "an error from a later Kafka"}
	msgs := []replica.Message{{Type: replica.MsgFetchResponse, FetchResponse: &kafka.ReplicaFetchPartitionResponse{Topic: "t", Err: future}}}
	b := replica.AppendMessages(nil, msgs)
	got, err := replica.DecodeMessages(b)
	if err != nil {
		t.Fatal(err)
	}
	e := got[0].FetchResponse.Err
	if e == nil || e.Error() != future.Error() {
		t.Fatalf("decoded error %v, want one reading %q", e, future.Error())
	}
	if code := kafka.CodeOf(e); code != kafka.ErrUnknownServerError.Code {
		t.Fatalf("decoded error has code %d here, want %d", code, kafka.ErrUnknownServerError.Code)
	}
	if again := replica.AppendMessages(nil, got); !bytes.Equal(again, b) {
		t.Fatalf("relayed as %x, want %x", again, b)
	}
}

// Decoded records are not copied: they point into the input, and are cut
// to their length so that appending to them leaves the input alone.
func TestDecodeMessagesRecordsAlias(t *testing.T) {
	records := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	msgs := []replica.Message{
		{Type: replica.MsgFetchResponse, FetchResponse: &kafka.ReplicaFetchPartitionResponse{Topic: "a", Records: records}},
		{Type: replica.MsgFetchResponse, FetchResponse: &kafka.ReplicaFetchPartitionResponse{Topic: "b", Records: records[:100]}},
	}
	b := replica.AppendMessages(nil, msgs)
	got, err := replica.DecodeMessages(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range got {
		r := m.FetchResponse.Records
		at := bytes.Index(b, msgs[i].FetchResponse.Records)
		if i == 1 {
			at = bytes.LastIndex(b, msgs[i].FetchResponse.Records)
		}
		if at < 0 || &r[0] != &b[at] || len(r) != len(msgs[i].FetchResponse.Records) {
			t.Fatalf("message %d: records are not b[%d:]", i, at)
		}
		if cap(r) != len(r) {
			t.Fatalf("message %d: records' capacity %d beyond their length %d", i, cap(r), len(r))
		}
	}
	before := bytes.Clone(b)
	_ = append(got[0].FetchResponse.Records, 'x')
	if !bytes.Equal(b, before) {
		t.Fatal("appending to decoded records changed the input")
	}
}

// The messages replicas really exchange — fetches and answers with
// records, diverging epochs and errors, through leader crashes, a
// partition and leader changes under delayed fetches — survive a round
// trip.
func TestMessagesRoundTripClusterTraffic(t *testing.T) {
	c := newCluster(t, 1, 3, testOptions(2))
	seen := map[string]int{}
	c.Net.SetFilter(func(m replica.Message) replicatest.Verdict {
		got, err := replica.DecodeMessages(replica.AppendMessages(nil, []replica.Message{m}))
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		checkRoundTrip(t, got, []replica.Message{m})
		seen[m.Type.String()]++
		if r := m.FetchResponse; r != nil {
			switch {
			case r.Err != nil:
				seen["error"]++
			case r.DivergingEpoch != nil:
				seen["diverging"]++
			case len(r.Records) > 0:
				seen["records"]++
			}
		}
		return replicatest.Pass
	})
	for i := range 3 {
		p := produce(t, c, kafka.AcksAll, vals(fmt.Sprintf("round%d-", i), 5)...)
		c.Stabilize()
		if !p.Acked() {
			c.Fatalf("round %d: produce not acked: %+v", i, p)
		}
		// The leader, cut off, appends a batch nobody fetches, then
		// crashes; back after a new leader took over, its log diverges.
		leader := c.Leader()
		c.Net.Isolate(leader, c.Cfg.Replicas...)
		if _, err := c.Produce(leader, kafka.AcksLeader, "lost"); err != nil {
			t.Fatal(err)
		}
		c.Stabilize()
		c.Crash(leader, true)
		c.Net.HealAll()
		c.Restart(leader)
		c.RunTicks(20)
		c.Stabilize()
	}
	// Delayed fetches reach leaders that moved on: error answers.
	c.Net.AddRule(replicatest.Rule{From: replicatest.Any, To: replicatest.Any, Type: replica.MsgFetch,
		Faults: replicatest.Faults{MinDelay: 1, MaxDelay: 3}})
	for range 4 {
		for _, id := range c.State.ISR {
			if id != c.Leader() && c.ElectPreferring(id) {
				break
			}
		}
		c.RunTicks(3)
	}
	c.Net.ClearRules()
	c.RunTicks(20)
	c.Stabilize()
	c.Check()
	t.Logf("messages through the codec: %v", seen)
	for _, k := range []string{"MsgFetch", "MsgFetchResponse", "records", "diverging", "error"} {
		if seen[k] == 0 {
			t.Errorf("no %s message went through the codec: %v", k, seen)
		}
	}
}

// FuzzDecodeMessages: the decoder never panics, fails only with
// ErrCorruptMessage, and what it accepts encodes back to the same bytes,
// with records pointing into them.
func FuzzDecodeMessages(f *testing.F) {
	samples := codecSamples()
	f.Add(replica.AppendMessages(nil, samples))
	for i := range samples {
		f.Add(replica.AppendMessages(nil, samples[i:i+1]))
	}
	f.Add(replica.AppendMessages(nil, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := replica.DecodeMessages(b)
		if err != nil {
			if !errors.Is(err, replica.ErrCorruptMessage) || msgs != nil {
				t.Fatalf("%v, %v: error is not ErrCorruptMessage", msgs, err)
			}
			return
		}
		if again := replica.AppendMessages(nil, msgs); !bytes.Equal(again, b) {
			t.Fatalf("%x decoded to %v, which encodes to %x", b, msgs, again)
		}
		for _, m := range msgs {
			if r := m.FetchResponse; r != nil && len(r.Records) > 0 && !bytes.Contains(b, r.Records) {
				t.Fatalf("records %x not in the input", r.Records)
			}
		}
	})
}

// BenchmarkMessagesCodec encodes and decodes a batch of 16 fetch answers
// of 64 KiB of records each, reusing the encoding buffer as a transport
// would.
func BenchmarkMessagesCodec(b *testing.B) {
	records := bytes.Repeat([]byte{0xab}, 64<<10)
	msgs := make([]replica.Message, 16)
	for i := range msgs {
		msgs[i] = replica.Message{Type: replica.MsgFetchResponse, From: 1, To: 2, Seq: uint64(i),
			FetchResponse: &kafka.ReplicaFetchPartitionResponse{Topic: "orders", Partition: int32(i),
				LeaderEpoch: 3, HighWatermark: 1 << 20, LogEndOffset: 1 << 21, Records: records}}
	}
	buf := replica.AppendMessages(nil, msgs)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = replica.AppendMessages(buf[:0], msgs)
		got, err := replica.DecodeMessages(buf)
		if err != nil || len(got) != len(msgs) {
			b.Fatalf("%d messages, %v", len(got), err)
		}
	}
}
