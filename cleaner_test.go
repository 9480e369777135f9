package partlog_test

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/vfs"
)

// kvRecord is a record of a compacted topic as the test sees it.
type kvRecord struct {
	offset     int64
	key, value string
	tombstone  bool
}

var compactConfigs = map[string]string{
	"cleanup.policy":            "compact",
	"segment.bytes":             "1024",
	"min.cleanable.dirty.ratio": "0",
}

// produceKeyed writes rounds of values for keys k0..k9, deleting k3 and k7
// at the end, and returns what it wrote in offset order.
func produceKeyed(t *testing.T, n *partlog.Node, topic string, rounds int) []kvRecord {
	t.Helper()
	ctx := context.Background()
	p, err := producer.New(n.Client())
	require.NoError(t, err)
	defer p.Close()
	var recs []*producer.Record
	for r := range rounds {
		for k := range 10 {
			recs = append(recs, &producer.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", k), Value: fmt.Appendf(nil, "k%d-v%d", k, r)})
		}
	}
	recs = append(recs, &producer.Record{Topic: topic, Key: []byte("k3")}, &producer.Record{Topic: topic, Key: []byte("k7")})
	for i := 0; i < len(recs); i += 10 { // a batch per round
		require.NoError(t, p.ProduceSync(ctx, recs[i:min(i+10, len(recs))]...).FirstErr())
	}
	var out []kvRecord
	for i, r := range recs {
		require.Equal(t, recs[0].Offset+int64(i), r.Offset)
		out = append(out, kvRecord{offset: r.Offset, key: string(r.Key), value: string(r.Value), tombstone: r.Value == nil})
	}
	return out
}

// consumeAll reads a topic's partition 0 from the beginning to its high
// watermark through a consumer.
func consumeAll(t *testing.T, n *partlog.Node, topic string) []kvRecord {
	t.Helper()
	d, err := n.DescribeTopics(topic)
	require.NoError(t, err)
	hw := d[0].Partitions[0].HighWatermark
	c, err := consumer.New(n.Client(), consumer.Partitions(kafka.TopicPartition{Topic: topic, Partition: 0}), consumer.AutoOffsetReset(consumer.Earliest))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []kvRecord
	for {
		pos, err := c.Position(ctx, kafka.TopicPartition{Topic: topic, Partition: 0})
		require.NoError(t, err)
		if pos >= hw {
			return out
		}
		fs, err := c.Poll(ctx, time.Second)
		require.NoError(t, err)
		for _, r := range fs.Records() {
			out = append(out, kvRecord{offset: r.Offset, key: string(r.Key), value: string(r.Value), tombstone: r.Value == nil})
		}
	}
}

// compactedAt is what a compacted topic holds when cleaning ended at end.
func compactedAt(written []kvRecord, end int64) []kvRecord {
	latest := map[string]int64{}
	for _, w := range written {
		if w.offset < end {
			latest[w.key] = w.offset
		}
	}
	var out []kvRecord
	for _, w := range written {
		if w.offset >= end || latest[w.key] == w.offset {
			out = append(out, w)
		}
	}
	return out
}

// requireCompacted checks that got is the topic compacted up to some
// offset well past the start, and returns that offset.
func requireCompacted(t *testing.T, written, got []kvRecord) int64 {
	t.Helper()
	last := written[len(written)-1].offset
	for end := last + 1; end > 0; end-- {
		if want := compactedAt(written, end); len(want) == len(got) {
			require.Equal(t, want, got)
			require.Greater(t, end, last/2, "most of the topic was compacted")
			return end
		}
	}
	require.Failf(t, "not compacted", "%v", got)
	return 0
}

// TestNodeCompactedTopic produces keyed records to a compact topic through
// the public API, runs the cleaner, and consumes only the latest value of
// each key below where it cleaned (tombstones included, as
// delete.retention.ms has not passed), at the offsets they were written
// at, before and after a restart.
func TestNodeCompactedTopic(t *testing.T) {
	fsys := vfs.NewMem()
	n := openNode(t, fsys, partlog.LogCleanerInterval(0))
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "profiles", Configs: compactConfigs}))
	written := produceKeyed(t, n, "profiles", 30)
	require.Len(t, consumeAll(t, n, "profiles"), len(written), "nothing is cleaned before the cleaner runs")

	require.NoError(t, partlogtest.CleanNow(ctx, n))
	got := consumeAll(t, n, "profiles")
	requireCompacted(t, written, got)
	latest := map[string]kvRecord{}
	for _, r := range got {
		latest[r.key] = r
	}
	require.True(t, latest["k3"].tombstone)
	require.Equal(t, "k5-v29", latest["k5"].value)

	require.NoError(t, n.Close())
	_, err := fsys.Stat("/data/cleaner-offset-checkpoint")
	require.NoError(t, err)
	n = openNode(t, fsys, partlog.LogCleanerInterval(0))
	defer n.Close()
	require.Equal(t, got, consumeAll(t, n, "profiles"))
	require.NoError(t, partlogtest.CleanNow(ctx, n)) // nothing new is dirty
	require.Equal(t, got, consumeAll(t, n, "profiles"))
}

// TestNodeCompactedTopicRejectsRecordsWithoutKey checks Kafka's rule: a
// compacted topic refuses a batch with a record without a key, whole.
func TestNodeCompactedTopicRejectsRecordsWithoutKey(t *testing.T) {
	n := openNode(t, vfs.NewMem(), partlog.LogCleanerInterval(0))
	defer n.Close()
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "profiles", Configs: compactConfigs}))
	pr := produce(t, n, "profiles", 0, "no key")
	require.ErrorIs(t, pr.Err, kafka.ErrInvalidRecord)
	require.ErrorContains(t, pr.Err, "compacted topic cannot accept message without key")
	d, err := n.DescribeTopics("profiles")
	require.NoError(t, err)
	require.Zero(t, d[0].Partitions[0].LogEndOffset)

	// A delete topic takes them.
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "plain"}))
	require.NoError(t, produce(t, n, "plain", 0, "no key").Err)
}

// cleanedSignal is a slog handler that reports each "cleaned log" message,
// so that a test can await the background cleaner without sleeping.
type cleanedSignal struct {
	slog.Handler
	cleaned chan string
}

func (h cleanedSignal) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "cleaned log" {
		select {
		case h.cleaned <- r.Message:
		default:
		}
	}
	return nil
}
func (h cleanedSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h cleanedSignal) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h cleanedSignal) WithGroup(string) slog.Handler            { return h }

// TestNodeBackgroundCleaner checks that the node's own cleaner compacts a
// topic every LogCleanerInterval, and that Close stops it.
func TestNodeBackgroundCleaner(t *testing.T) {
	signal := cleanedSignal{cleaned: make(chan string, 1)}
	fsys := vfs.NewMem()
	n := openNode(t, fsys, partlog.LogCleanerInterval(time.Millisecond), partlog.Logger(slog.New(signal)))
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "profiles", Configs: compactConfigs}))
	written := produceKeyed(t, n, "profiles", 30)
	select {
	case <-signal.cleaned:
	case <-time.After(10 * time.Second):
		t.Fatal("the background cleaner never cleaned")
	}
	require.NoError(t, n.Close())
	// Every pass is done once Close returns: what a new node reads is
	// compacted and stays so.
	n = openNode(t, fsys, partlog.LogCleanerInterval(0))
	defer n.Close()
	got := consumeAll(t, n, "profiles")
	requireCompacted(t, written, got)
}

// TestNodeCompactedTopicTombstonesAndRetention checks the topic configs
// end to end: with delete.retention.ms=0 a tombstone survives the clean
// that first keeps it and goes at the next; compact,delete applies
// retention.bytes while compact alone does not.
func TestNodeCompactedTopicTombstonesAndRetention(t *testing.T) {
	n := openNode(t, vfs.NewMem(), partlog.LogCleanerInterval(0))
	defer n.Close()
	ctx := context.Background()
	configs := map[string]string{"delete.retention.ms": "0"}
	for k, v := range compactConfigs {
		configs[k] = v
	}
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "profiles", Configs: configs}))
	written := produceKeyed(t, n, "profiles", 10)
	require.NoError(t, partlogtest.CleanNow(ctx, n))
	got := consumeAll(t, n, "profiles")
	requireCompacted(t, written, got)
	tombstones := func(recs []kvRecord) (keys []string) {
		for _, r := range recs {
			if r.tombstone {
				keys = append(keys, r.key)
			}
		}
		return keys
	}
	require.Equal(t, []string{"k3", "k7"}, tombstones(got))
	// Other keys' records seal the tombstones' segment; a clean stamps
	// their delete horizon (now, with delete.retention.ms=0) and keeps
	// them; the next clean of their segment removes them.
	filler := func() {
		p, err := producer.New(n.Client())
		require.NoError(t, err)
		defer p.Close()
		for i := range 20 {
			r := &producer.Record{Topic: "profiles", Key: fmt.Appendf(nil, "f%d", i%3), Value: []byte("filler-filler-filler")}
			require.NoError(t, p.ProduceSync(ctx, r).FirstErr())
		}
	}
	filler()
	require.NoError(t, partlogtest.CleanNow(ctx, n))
	require.Equal(t, []string{"k3", "k7"}, tombstones(consumeAll(t, n, "profiles")), "kept by the clean that stamps their horizon")
	filler()
	require.NoError(t, partlogtest.CleanNow(ctx, n))
	for _, r := range consumeAll(t, n, "profiles") {
		require.NotContains(t, []string{"k3", "k7"}, r.key, "%v outlived delete.retention.ms=0", r)
	}

	for _, tc := range []struct {
		policy  string
		retains bool
	}{{"compact", false}, {"compact,delete", true}} {
		name := "t-" + tc.policy[:7] + fmt.Sprint(tc.retains)
		require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: name, Configs: map[string]string{
			"cleanup.policy": tc.policy, "segment.bytes": "1024", "retention.bytes": "1024"}}))
		produceKeyed(t, n, name, 20)
		require.NoError(t, partlogtest.EnforceRetention(n))
		d, err := n.DescribeTopics(name)
		require.NoError(t, err)
		require.Equal(t, tc.retains, d[0].Partitions[0].LogStartOffset > 0, tc.policy)
	}
}

// TestNodeCrashDuringClean cuts the power while the node's cleaner commits
// its first cleaned segment (and, in a second run, just after): the node
// that opens the disk finishes or rolls back the swap, and every key's
// latest value is there at its offset.
func TestNodeCrashDuringClean(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprint("after-commit=", after), func(t *testing.T) {
			mem := vfs.NewMem()
			var crashed atomic.Pointer[vfs.MemFS]
			eio := &fs.PathError{Op: "crash", Path: "-", Err: syscall.EIO}
			faulty := vfs.WithFaults(mem, vfs.InjectorFunc(func(op vfs.Op) error {
				if crashed.Load() != nil {
					return eio
				}
				if op.Kind == vfs.OpRename && strings.HasSuffix(op.Path, ".log.cleaned") && !after ||
					op.Kind == vfs.OpRename && strings.HasSuffix(op.Path, ".log") && after {
					crashed.Store(mem.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone}))
					return eio
				}
				return nil
			}))
			n := openNode(t, faulty, partlog.LogCleanerInterval(0))
			ctx := context.Background()
			require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "profiles", Configs: compactConfigs}))
			written := produceKeyed(t, n, "profiles", 30)
			require.Error(t, partlogtest.CleanNow(ctx, n))
			n.Close()
			require.NotNil(t, crashed.Load())

			n = openNode(t, crashed.Load(), partlog.LogCleanerInterval(0))
			defer n.Close()
			got := consumeAll(t, n, "profiles")
			latest := map[string]kvRecord{}
			for _, r := range got {
				latest[r.key] = r
			}
			want := map[string]kvRecord{}
			for _, r := range written {
				want[r.key] = r
			}
			require.Equal(t, want, latest)
			require.NoError(t, partlogtest.CleanNow(ctx, n))
			requireCompacted(t, written, consumeAll(t, n, "profiles"))
		})
	}
}
