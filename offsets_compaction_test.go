package partlog_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// TestOffsetsTopicCompaction is test 26 of the reliability plan at the
// node: many commits per group and partition and a group deletion go to
// __consumer_offsets, the cleaner compacts it, and a crash at every
// filesystem operation of the clean (keeping only synced bytes) leaves a
// node that reloads each (group, topic, partition) at its latest commit,
// with the deleted group still deleted.
func TestOffsetsTopicCompaction(t *testing.T) {
	mem := vfs.NewMem()
	var (
		cleaning atomic.Bool
		mu       sync.Mutex
		crashes  []*vfs.MemFS
	)
	fsys := vfs.WithFaults(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if cleaning.Load() {
			mu.Lock()
			crashes = append(crashes, mem.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone}))
			mu.Unlock()
		}
		return nil
	}))
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).UnixMilli())
	clock := partlog.Clock(func() time.Time { return time.UnixMilli(now.Load()) })
	opts := []partlog.Option{partlog.OffsetsTopicPartitions(1), partlog.LogCleanerInterval(0), clock}
	n := openNode(t, fsys, opts...)
	ctx := context.Background()

	type key struct {
		group string
		p     int32
	}
	want := map[key]int64{}
	groups := []string{"g0", "g1", "g2", "g3", "gone"}
	commitRound := func(round int) {
		for gi, g := range groups {
			for p := range int32(3) {
				off := int64(round*100 + gi*10 + int(p))
				require.NoError(t, commitOffset(t, n, g, "", -1, "study", p, off))
				want[key{g, p}] = off
			}
		}
	}
	for round := range 20 {
		commitRound(round)
	}
	// A week and a day on, the next commit rolls the offsets topic's
	// segment (segment.ms), so that the commits so far can be cleaned.
	now.Add((8 * 24 * time.Hour).Milliseconds())
	commitRound(20)
	resp, err := n.Client().DeleteGroups(ctx, &transport.DeleteGroupsRequest{Groups: []string{"gone"}})
	require.NoError(t, err)
	require.NoError(t, resp.Results[0].Err)
	for k := range want {
		if k.group == "gone" {
			delete(want, k)
		}
	}
	groups = groups[:4]
	now.Add((8 * 24 * time.Hour).Milliseconds())
	commitRound(21)
	before := offsetsRecords(t, n)

	cleaning.Store(true)
	require.NoError(t, partlogtest.CleanNow(ctx, n))
	cleaning.Store(false)
	after := offsetsRecords(t, n)
	require.Less(t, after, before/4, "the clean kept %d of %d records", after, before)
	require.NotEmpty(t, crashes)
	t.Logf("the clean kept %d of %d records; checking a crash before each of its %d filesystem operations", after, before, len(crashes))

	check := func(n *partlog.Node, what string) {
		t.Helper()
		for _, g := range append(groups, "gone") {
			for p := range int32(3) {
				off, ok := want[key{g, p}]
				if !ok {
					off = -1
				}
				require.Equal(t, off, committedOffset(t, n, g, "study", p), "%s: group %s partition %d", what, g, p)
			}
		}
	}
	check(n, "after the clean")
	require.NoError(t, n.Close())
	for i, crashed := range crashes {
		n := openNode(t, crashed, opts...)
		check(n, "crash before operation "+itoa(i)+" of the clean")
		require.NoError(t, n.Close())
	}
}

// offsetsRecords counts the records in __consumer_offsets-0.
func offsetsRecords(t *testing.T, n *partlog.Node) int {
	t.Helper()
	count := 0
	for offset := int64(0); ; {
		resp, err := n.Client().Fetch(context.Background(), &transport.FetchRequest{ReplicaID: -1, MaxBytes: 1 << 20,
			Topics: []transport.FetchTopic{{Topic: "__consumer_offsets", Partitions: []transport.FetchPartition{{FetchOffset: offset, MaxBytes: 1 << 20}}}}})
		require.NoError(t, err)
		pr := resp.Topics[0].Partitions[0]
		require.NoError(t, pr.Err)
		if len(pr.Records) == 0 {
			return count
		}
		for data := pr.Records; len(data) > 0; {
			h, err := record.ParseHeader(data)
			require.NoError(t, err)
			b, err := record.Decode(data[:h.Size()])
			require.NoError(t, err)
			for _, r := range b.Records {
				if r.Offset >= offset {
					count++
				}
			}
			offset = h.NextOffset()
			data = data[h.Size():]
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
