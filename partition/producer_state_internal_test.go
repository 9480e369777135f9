package partition

import (
	"errors"
	"math"
	"testing"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
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
