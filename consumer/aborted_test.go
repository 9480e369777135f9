package consumer

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/record"
)

// batchAt builds a batch at offset base: transactional from producer pid
// (pid -1: a plain batch) with n records.
func batchAt(t *testing.T, base int64, pid int64, n int) []byte {
	t.Helper()
	opts := record.DefaultBatchOptions()
	if pid >= 0 {
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = pid, 0, 0, true
	}
	b := record.NewBuilder(opts)
	for range n {
		b.Append(record.Record{Value: []byte("v")})
	}
	data := b.Build()
	record.SetBaseOffset(data, base)
	return data
}

// markerAt builds producer pid's marker at offset base.
func markerAt(t *testing.T, base int64, pid int64, typ record.ControlType) []byte {
	t.Helper()
	data := record.ControlBatch(typ, pid, 0, 0, 0)
	record.SetBaseOffset(data, base)
	return data
}

// TestAbortedFilter: two producers interleave; producer 1's first
// transaction aborts and its second commits, producer 2's commits. The
// consumer keeps every plain batch and every committed transaction's, and
// no marker.
func TestAbortedFilter(t *testing.T) {
	batches := [][]byte{
		batchAt(t, 0, -1, 1),                    // 0: plain
		batchAt(t, 1, 1, 2),                     // 1-2: p1, aborted
		batchAt(t, 3, 2, 1),                     // 3: p2, committed
		markerAt(t, 4, 1, record.ControlAbort),  // 4: p1 aborts
		batchAt(t, 5, 1, 1),                     // 5: p1, committed
		markerAt(t, 6, 2, record.ControlCommit), // 6: p2 commits
		markerAt(t, 7, 1, record.ControlCommit), // 7: p1 commits
		batchAt(t, 8, -1, 1),                    // 8: plain
	}
	run := func(txns []abortedTxn) []int64 {
		f := newAbortedFilter(txns)
		var kept []int64
		for _, data := range batches {
			h, err := record.ParseHeader(data)
			require.NoError(t, err)
			b, err := record.Decode(data)
			require.NoError(t, err)
			if !f.skip(&h, b.Records[0]) {
				kept = append(kept, h.BaseOffset)
			}
		}
		return kept
	}
	require.Equal(t, []int64{0, 3, 5, 8}, run([]abortedTxn{{producerID: 1, firstOffset: 1}}))
	// Negative control: an answer that names no aborted transaction keeps
	// the aborted records — the list is what the filter acts on.
	require.Equal(t, []int64{0, 1, 3, 5, 8}, run(nil))
}
