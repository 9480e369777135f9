package partition

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// TestSequenceWrap: sequence numbers wrap past math.MaxInt32 to 0, inside
// a batch and between batches, as Kafka's do.
func TestSequenceWrap(t *testing.T) {
	h := func(seq int32, n int32) *record.Header {
		return &record.Header{ProducerID: 1, BaseSequence: seq, LastOffsetDelta: n - 1}
	}
	s := newProducerState(0)
	s.apply(h(math.MaxInt32-5, 2), nil, 0) // as if the producer had sent 2^31-5 records
	for _, c := range []struct {
		seq, n int32
		err    error
	}{
		{math.MaxInt32 - 3, 2, nil},
		{math.MaxInt32 - 1, 4, nil}, // ends at 1
		{2, 1, nil},
		{math.MaxInt32 - 1, 4, errDuplicate},
		{4, 1, kafka.ErrOutOfOrderSequence},
		{3, 1, nil},
	} {
		err := s.check(h(c.seq, c.n), nil, nil)
		var dup *duplicateError
		switch {
		case c.err == errDuplicate && !errors.As(err, &dup):
			t.Fatalf("seq %d: %v, want a duplicate", c.seq, err)
		case c.err != nil && c.err != errDuplicate && !errors.Is(err, c.err):
			t.Fatalf("seq %d: %v, want %v", c.seq, err, c.err)
		case c.err == nil && err != nil:
			t.Fatalf("seq %d: %v", c.seq, err)
		case err == nil:
			s.apply(h(c.seq, c.n), nil, s.nextOffset)
		}
	}
	if got := s.producers[1].lastSequence(); got != 3 {
		t.Fatalf("last sequence %d, want 3", got)
	}
	if got := incrementSequence(math.MaxInt32, 1); got != 0 {
		t.Fatalf("MaxInt32+1 = %d", got)
	}
}

var errDuplicate = errors.New("duplicate")

// TestCompletedTransactionsForgotten: a completed transaction is kept,
// unstable, until the high watermark passes its marker, and then
// forgotten, whether or not a reader asked for the last stable offset.
func TestCompletedTransactionsForgotten(t *testing.T) {
	l, err := log.Open("/data/t-0", log.Options{FS: vfs.NewMem(), MaxIndexBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := New("t", 0, 1, 0, l, Options{Now: func() time.Time { return time.UnixMilli(2000) }})
	defer p.Close()
	for i := range 20 {
		opts := record.DefaultBatchOptions()
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = 1, 0, int32(i), true
		b := record.NewBuilder(opts)
		b.Append(record.Record{Timestamp: 1000, Value: []byte("v")})
		if _, err := p.Append(b.Build(), kafka.AcksAll); err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendMarker(1, 0, 0, record.ControlAbort); err != nil {
			t.Fatal(err)
		}
	}
	p.producers.mu.Lock()
	n := len(p.producers.state.unreplicated)
	p.producers.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d completed transactions kept past the high watermark", n)
	}
}
