package sharecoord

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
)

// CombineBatches merges newer state batches into older ones and returns
// the result: sorted by offset, not overlapping, adjacent ranges of the
// same state and count joined into one, and nothing below startOffset —
// a batch it cuts keeps its part from startOffset on — unless startOffset
// is -1, which prunes nothing. It is what Kafka's
// PersisterStateBatchCombiner computes, as a sweep rather than its
// pairwise merging.
//
// Where batches overlap, the one that is further along wins, whichever
// came first: the higher DeliveryCount, and for the same count the higher
// DeliveryState (Available < Acquired < Acknowledged < Archiving <
// Archived). A record's delivery count only grows and, within a delivery,
// its state only advances, so the furthest-along batch is the latest word
// on each offset even when writes arrive out of order — and combining is
// idempotent, which replaying an update twice relies on.
//
// Batches whose FirstOffset is above their LastOffset are dropped. The
// result is a new slice; older and newer are not modified.
func CombineBatches(older, newer []StateBatch, startOffset int64) []StateBatch {
	all := make([]StateBatch, 0, len(older)+len(newer))
	for _, b := range slices.Concat(older, newer) {
		if b.FirstOffset > b.LastOffset {
			continue
		}
		if startOffset != -1 {
			if b.LastOffset < startOffset {
				continue
			}
			b.FirstOffset = max(b.FirstOffset, startOffset)
		}
		all = append(all, b)
	}
	if len(all) == 0 {
		return nil
	}
	slices.SortFunc(all, func(a, b StateBatch) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })

	// The points where coverage may change: every first offset, and every
	// offset after a last one.
	points := make([]int64, 0, 2*len(all))
	for _, b := range all {
		points = append(points, b.FirstOffset)
		if b.LastOffset < math.MaxInt64 {
			points = append(points, b.LastOffset+1)
		}
	}
	slices.Sort(points)
	points = slices.Compact(points)

	var out []StateBatch
	var active batchHeap
	next := 0 // the next batch of all to become active
	for i, p := range points {
		for next < len(all) && all[next].FirstOffset <= p {
			heap.Push(&active, all[next])
			next++
		}
		for len(active) > 0 && active[0].LastOffset < p {
			heap.Pop(&active)
		}
		if len(active) == 0 {
			continue
		}
		// [p, end] is covered by the same batches throughout.
		end := int64(math.MaxInt64)
		if i+1 < len(points) {
			end = points[i+1] - 1
		}
		top := active[0]
		if n := len(out); n > 0 && out[n-1].LastOffset+1 == p &&
			out[n-1].DeliveryState == top.DeliveryState && out[n-1].DeliveryCount == top.DeliveryCount {
			out[n-1].LastOffset = end
			continue
		}
		out = append(out, StateBatch{FirstOffset: p, LastOffset: end, DeliveryState: top.DeliveryState, DeliveryCount: top.DeliveryCount})
	}
	return out
}

// further compares the delivery of two batches as Kafka's combiner does:
// by delivery count, then by delivery state.
func further(a, b StateBatch) int {
	if c := cmp.Compare(a.DeliveryCount, b.DeliveryCount); c != 0 {
		return c
	}
	return cmp.Compare(a.DeliveryState, b.DeliveryState)
}

// batchHeap holds the batches that cover the sweep's point, the furthest
// along on top. Batches that ended are dropped when they reach the top.
type batchHeap []StateBatch

func (h batchHeap) Len() int           { return len(h) }
func (h batchHeap) Less(i, j int) bool { return further(h[i], h[j]) > 0 }
func (h batchHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *batchHeap) Push(x any)        { *h = append(*h, x.(StateBatch)) }
func (h *batchHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
