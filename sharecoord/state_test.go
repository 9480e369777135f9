package sharecoord

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// b is a StateBatch in the order Kafka's combiner tests write them.
func b(first, last int64, state DeliveryState, count int16) StateBatch {
	return StateBatch{FirstOffset: first, LastOffset: last, DeliveryState: state, DeliveryCount: count}
}

// TestCombineBatches: the cases of Kafka's PersisterStateBatchCombinerTest
// (older, newer, start offset → combined), and a few more.
func TestCombineBatches(t *testing.T) {
	for _, c := range []struct {
		name         string
		older, newer []StateBatch
		start        int64
		want         []StateBatch
	}{
		{"nothing", nil, nil, -1, nil},
		{"only older", []StateBatch{b(100, 110, 0, 1)}, nil, -1, []StateBatch{b(100, 110, 0, 1)}},
		{"same state overlapping", []StateBatch{b(100, 110, 0, 1)}, []StateBatch{b(105, 120, 0, 1)}, -1, []StateBatch{b(100, 120, 0, 1)}},
		{"same state contiguous", []StateBatch{b(100, 110, 0, 1)}, []StateBatch{b(111, 120, 0, 1)}, -1, []StateBatch{b(100, 120, 0, 1)}},
		{"different state contiguous", []StateBatch{b(100, 110, 0, 1)}, []StateBatch{b(111, 120, 2, 1)}, -1, []StateBatch{b(100, 110, 0, 1), b(111, 120, 2, 1)}},
		{"gap", []StateBatch{b(100, 110, 0, 1)}, []StateBatch{b(115, 120, 0, 1)}, -1, []StateBatch{b(100, 110, 0, 1), b(115, 120, 0, 1)}},
		// Kafka's generatorDifferentStates.
		{"newer higher, aligned", []StateBatch{b(100, 110, 0, 1)}, []StateBatch{b(100, 110, 0, 2)}, -1, []StateBatch{b(100, 110, 0, 2)}},
		{"newer lower, aligned", []StateBatch{b(100, 110, 0, 3)}, []StateBatch{b(100, 110, 0, 1)}, -1, []StateBatch{b(100, 110, 0, 3)}},
		{"newer higher, shorter", []StateBatch{b(100, 110, 0, 1)}, []StateBatch{b(100, 105, 0, 2)}, -1, []StateBatch{b(100, 105, 0, 2), b(106, 110, 0, 1)}},
		{"newer lower, shorter", []StateBatch{b(100, 110, 0, 3)}, []StateBatch{b(100, 105, 0, 1)}, -1, []StateBatch{b(100, 110, 0, 3)}},
		{"newer higher, longer", []StateBatch{b(100, 110, 0, 1)}, []StateBatch{b(100, 115, 0, 2)}, -1, []StateBatch{b(100, 115, 0, 2)}},
		{"newer lower, longer", []StateBatch{b(100, 110, 0, 3)}, []StateBatch{b(100, 115, 0, 1)}, -1, []StateBatch{b(100, 110, 0, 3), b(111, 115, 0, 1)}},
		{"newer higher, inside", []StateBatch{b(100, 115, 0, 1)}, []StateBatch{b(105, 110, 1, 1)}, -1, []StateBatch{b(100, 104, 0, 1), b(105, 110, 1, 1), b(111, 115, 0, 1)}},
		{"newer lower, inside", []StateBatch{b(100, 115, 1, 1)}, []StateBatch{b(105, 110, 0, 1)}, -1, []StateBatch{b(100, 115, 1, 1)}},
		{"newer higher, same end", []StateBatch{b(100, 110, 0, 1)}, []StateBatch{b(105, 110, 0, 2)}, -1, []StateBatch{b(100, 104, 0, 1), b(105, 110, 0, 2)}},
		{"newer lower, same end", []StateBatch{b(100, 110, 0, 2)}, []StateBatch{b(105, 110, 0, 1)}, -1, []StateBatch{b(100, 110, 0, 2)}},
		{"newer higher, straddling", []StateBatch{b(100, 110, 0, 1)}, []StateBatch{b(105, 115, 0, 2)}, -1, []StateBatch{b(100, 104, 0, 1), b(105, 115, 0, 2)}},
		{"newer lower, straddling", []StateBatch{b(100, 110, 0, 2)}, []StateBatch{b(105, 115, 0, 1)}, -1, []StateBatch{b(100, 110, 0, 2), b(111, 115, 0, 1)}},
		// Pruning at the start offset.
		{"below start dropped", []StateBatch{b(100, 110, 0, 1)}, []StateBatch{b(111, 120, 2, 1)}, 111, []StateBatch{b(111, 120, 2, 1)}},
		{"start cuts a batch", []StateBatch{b(100, 110, 0, 1)}, nil, 105, []StateBatch{b(105, 110, 0, 1)}},
		{"start past all", []StateBatch{b(100, 110, 0, 1)}, []StateBatch{b(90, 99, 2, 1)}, 200, nil},
		// Kafka's testNonSequentialBatchUpdates: b2 is not lost.
		{"non-sequential", []StateBatch{b(100, 109, 2, 1), b(110, 119, 1, 2), b(120, 129, 1, 0)}, []StateBatch{b(120, 129, 2, 1)}, 110,
			[]StateBatch{b(110, 119, 1, 2), b(120, 129, 2, 1)}},
		// Three-way overlap, and unsorted input.
		{"three layers", []StateBatch{b(0, 100, 0, 1), b(50, 60, 4, 1)}, []StateBatch{b(40, 70, 0, 2), b(10, 20, 2, 1)}, -1,
			[]StateBatch{b(0, 9, 0, 1), b(10, 20, 2, 1), b(21, 39, 0, 1), b(40, 70, 0, 2), b(71, 100, 0, 1)}},
		{"backwards batch dropped", []StateBatch{b(10, 5, 0, 1)}, nil, -1, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, CombineBatches(c.older, c.newer, c.start))
		})
	}
}

// delivery is one offset's state in the naive model.
type delivery struct {
	state DeliveryState
	count int16
}

// naive applies batches to a per-offset map as Kafka's combiner means
// them: each offset keeps its furthest-along delivery, offsets below the
// start offset go.
type naive struct {
	start   int64
	offsets map[int64]delivery
}

func (n *naive) apply(start int64, bs []StateBatch) {
	for _, bt := range bs {
		for o := bt.FirstOffset; o <= bt.LastOffset; o++ {
			d := delivery{bt.DeliveryState, bt.DeliveryCount}
			if old, ok := n.offsets[o]; !ok || further(bt, StateBatch{DeliveryState: old.state, DeliveryCount: old.count}) > 0 {
				n.offsets[o] = d
			}
		}
	}
	if start != -1 {
		n.start = start
		for o := range n.offsets {
			if o < start {
				delete(n.offsets, o)
			}
		}
	}
}

// expand returns the per-offset map that batches describe, checking they
// are sorted, disjoint and maximally joined.
func expand(t *rapid.T, bs []StateBatch) map[int64]delivery {
	out := map[int64]delivery{}
	for i, bt := range bs {
		if bt.FirstOffset > bt.LastOffset {
			t.Fatalf("batch %d backwards: %+v", i, bt)
		}
		if i > 0 {
			prev := bs[i-1]
			if prev.LastOffset >= bt.FirstOffset {
				t.Fatalf("batches %d and %d overlap or are out of order: %+v %+v", i-1, i, prev, bt)
			}
			if prev.LastOffset+1 == bt.FirstOffset && prev.DeliveryState == bt.DeliveryState && prev.DeliveryCount == bt.DeliveryCount {
				t.Fatalf("batches %d and %d should have been joined: %+v %+v", i-1, i, prev, bt)
			}
		}
		for o := bt.FirstOffset; o <= bt.LastOffset; o++ {
			out[o] = delivery{bt.DeliveryState, bt.DeliveryCount}
		}
	}
	return out
}

func genBatches(t *rapid.T, label string) []StateBatch {
	return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) StateBatch {
		first := rapid.Int64Range(0, 60).Draw(t, "first")
		return StateBatch{
			FirstOffset:   first,
			LastOffset:    first + rapid.Int64Range(0, 15).Draw(t, "len"),
			DeliveryState: DeliveryState(rapid.SampledFrom([]int8{0, 2, 4}).Draw(t, "state")),
			DeliveryCount: int16(rapid.IntRange(0, 3).Draw(t, "count")),
		}
	}), 0, 6).Draw(t, label)
}

// TestCombineBatchesModel: applying writes in order to a naive per-offset
// map gives the offsets that combining their batches write by write
// describes, and the combined form is sorted, disjoint and joined.
func TestCombineBatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		model := naive{start: -1, offsets: map[int64]delivery{}}
		var combined []StateBatch
		for i := range rapid.IntRange(1, 6).Draw(t, "writes") {
			start := int64(-1)
			if rapid.Bool().Draw(t, "moves start") {
				start = rapid.Int64Range(0, 40).Draw(t, "start")
			}
			bs := genBatches(t, "batches")
			model.apply(start, bs)
			combined = CombineBatches(combined, bs, start)
			require.Equal(t, model.offsets, expand(t, combined), "after write %d", i)
		}
		// Idempotent: combining the result into itself changes nothing.
		require.Equal(t, combined, CombineBatches(combined, combined, -1))
	})
}
