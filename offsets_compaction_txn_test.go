package partlog_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// TestOffsetsTopicCompactionTransactions is test 26 of the reliability
// plan with transactions: among many plain commits to __consumer_offsets
// (whose segments roll every KiB), a transactional producer aborts
// offsets for group g's study-0, and another leaves offsets for study-1
// in an open transaction. The cleaner rewrites nothing from the open
// transaction's first offset on — the transactional offsets above the
// last stable offset stay as written — and removes the aborted offsets,
// which do not shadow g's plain commit of study-0, through a restart that
// reloads the compacted topic; once the transaction commits, study-1 is
// its offset.
//
// Negative controls, by hand: with the broker's cleaner bounded by the
// high watermark (as before Partition.Clean), the bytes after the open
// transaction's first offset change; with aborted records let into the
// cleaner's key map, study-0 reloads as -1.
func TestOffsetsTopicCompactionTransactions(t *testing.T) {
	mem := vfs.NewMem()
	opts := []partlog.Option{partlog.OffsetsTopicPartitions(1), partlog.LogCleanerInterval(0)}
	n := openNode(t, mem, opts...)
	closed := false
	t.Cleanup(func() {
		if !closed {
			n.Close()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	round := 0
	commitRound := func() {
		round++
		for _, g := range []string{"g0", "g1", "g2"} {
			for p := range int32(3) {
				require.NoError(t, commitOffset(t, n, g, "", -1, "study", p, int64(round*100+int(p))))
			}
		}
	}
	rounds := func(n int) {
		for range n {
			commitRound()
		}
	}
	commitRound() // creates __consumer_offsets
	ac, err := n.Client().AlterConfigs(ctx, &transport.AlterConfigsRequest{Resources: []transport.ConfigAlteration{{
		ConfigResource: transport.ConfigResource{Type: transport.ConfigTopic, Name: "__consumer_offsets"},
		Changes:        []transport.ConfigChange{{Name: "segment.bytes", Value: "1024"}}}}})
	require.NoError(t, err)
	require.NoError(t, ac.Resources[0].Err)
	rounds(10)
	require.NoError(t, commitOffset(t, n, "g", "", -1, "study", 0, 5))

	l, err := partlogtest.Log(n, "__consumer_offsets", 0)
	require.NoError(t, err)
	// stable waits, in a long-poll read_committed fetch, until the last
	// stable offset of __consumer_offsets passes from: the transaction
	// coordinator writes markers after it answers EndTxn.
	stable := func(from int64) {
		t.Helper()
		resp, err := n.Client().Fetch(ctx, &transport.FetchRequest{ReplicaID: -1, MaxWait: 20 * time.Second, MinBytes: 1,
			MaxBytes: 1 << 20, Isolation: kafka.ReadCommitted, Topics: []transport.FetchTopic{{Topic: "__consumer_offsets",
				Partitions: []transport.FetchPartition{{FetchOffset: from, MaxBytes: 1 << 20}}}}})
		require.NoError(t, err)
		pr := resp.Topics[0].Partitions[0]
		require.NoError(t, pr.Err)
		require.Greater(t, pr.LastStableOffset, from, "the markers are written")
	}
	sendOffsets := func(id string, p int32, off int64) *producer.Producer {
		t.Helper()
		pr := newTxnProducer(t, n, id)
		require.NoError(t, pr.BeginTransaction())
		require.NoError(t, pr.SendOffsetsToTransaction(ctx, map[kafka.TopicPartition]int64{{Topic: "study", Partition: p}: off},
			producer.GroupMetadata{Group: "g", GenerationID: -1}))
		return pr
	}
	abortedFrom := l.LogEndOffset()
	aborter := sendOffsets("aborter", 0, 888)
	require.NoError(t, aborter.AbortTransaction(ctx))
	stable(abortedFrom)
	rounds(10)
	openFrom := l.LogEndOffset()
	open := sendOffsets("open", 1, 777)
	rounds(20)

	// raw returns the log's bytes from the batch holding from to its end.
	raw := func(from int64) []byte {
		var out []byte
		for off := from; off < l.LogEndOffset(); {
			data, err := l.Read(nil, off, l.LogEndOffset(), 1<<20)
			require.NoError(t, err)
			out = append(out, data...)
			for len(data) > 0 {
				h, err := record.ParseHeader(data)
				require.NoError(t, err)
				data, off = data[h.Size():], h.NextOffset()
			}
		}
		return out
	}
	before, records := raw(openFrom), offsetsRecords(t, n)
	h, err := record.ParseHeader(before)
	require.NoError(t, err)
	require.True(t, h.BaseOffset == openFrom && h.Attributes.IsTransactional() && !h.Attributes.IsControl(),
		"the open transaction's offsets come first")

	require.NoError(t, partlogtest.CleanNow(ctx, n))
	require.Less(t, offsetsRecords(t, n), records, "the clean removed superseded commits below the last stable offset")
	require.True(t, bytes.Equal(before, raw(openFrom)), "nothing from the open transaction's first offset on changed")
	for data := raw(abortedFrom); len(data) > 0; {
		h, err := record.ParseHeader(data)
		require.NoError(t, err)
		require.False(t, h.BaseOffset < openFrom && h.Attributes.IsTransactional() && !h.Attributes.IsControl() && h.NumRecords > 0,
			"the aborted offsets at %d are gone", h.BaseOffset)
		data = data[h.Size():]
	}
	require.Equal(t, int64(5), committedOffset(t, n, "g", "study", 0), "the aborted offsets do not shadow the commit")

	require.NoError(t, open.CommitTransaction(ctx))
	stable(openFrom)
	rounds(10)
	require.NoError(t, partlogtest.CleanNow(ctx, n))
	require.NoError(t, n.Close())
	closed = true

	// The offsets as the compacted topic holds them.
	n = openNode(t, mem, opts...)
	defer n.Close()
	require.Equal(t, int64(5), committedOffset(t, n, "g", "study", 0))
	require.Equal(t, int64(777), committedOffset(t, n, "g", "study", 1))
	require.Equal(t, int64(round*100+2), committedOffset(t, n, "g2", "study", 2))
}
