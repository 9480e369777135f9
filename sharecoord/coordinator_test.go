package sharecoord

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// memLog is a Log in memory: the records of each partition, in order.
type memLog struct {
	mu    sync.Mutex
	parts map[int32][]Record
	fail  error // when set, Append fails with it
}

func newMemLog() *memLog { return &memLog{parts: map[int32][]Record{}} }

func (l *memLog) Append(partition int32, recs []Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	l.parts[partition] = append(l.parts[partition], recs...)
	return nil
}

func (l *memLog) records(partition int32) []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Record(nil), l.parts[partition]...)
}

// types returns the record types of a partition, "S", "U" or "T"
// (a tombstone), in order.
func (l *memLog) types(t testing.TB, partition int32) string {
	t.Helper()
	var s string
	for _, r := range l.records(partition) {
		e, err := DecodeRecord(r)
		require.NoError(t, err)
		switch {
		case e.Tombstone():
			s += "T"
		case e.Snapshot != nil:
			s += "S"
		default:
			s += "U"
		}
	}
	return s
}

// iter yields recs, as a log read would.
func iter(recs []Record) func(func(Record) bool) error {
	return func(yield func(Record) bool) error {
		for _, r := range recs {
			if !yield(r) {
				break
			}
		}
		return nil
	}
}

// compact keeps the latest record of each key, where it was, as a log
// compaction does; dropTombstones also drops the tombstones left, as the
// cleaner does after delete.retention.ms.
func compact(recs []Record, dropTombstones bool) []Record {
	last := map[string]int{}
	for i, r := range recs {
		last[string(r.Key)] = i
	}
	var out []Record
	for i, r := range recs {
		if last[string(r.Key)] == i && !(dropTombstones && r.Value == nil) {
			out = append(out, r)
		}
	}
	return out
}

var fixedNow = time.UnixMilli(1700000000000)

func newTest(t interface{ Helper() }, opts Options) (*Coordinator, *memLog) {
	t.Helper()
	l := newMemLog()
	if opts.Now == nil {
		opts.Now = func() time.Time { return fixedNow }
	}
	return New(l, opts), l
}

var spA = SharePartition{Group: "g", TopicID: topicT, Partition: 0}

func TestInitializeWriteRead(t *testing.T) {
	c, l := newTest(t, Options{})
	p := c.PartitionFor(spA)
	require.Equal(t, PartitionFor("g", topicT, 0, 50), p)

	_, err := c.Read(spA, 0)
	require.ErrorIs(t, err, kafka.ErrInvalidRequest, "never initialized")
	require.ErrorIs(t, c.Write(spA, Write{Batches: []StateBatch{b(0, 1, Acknowledged, 1)}}), kafka.ErrInvalidRequest)
	s, err := c.ReadSummary(spA, -1)
	require.NoError(t, err)
	require.Equal(t, Summary{StateEpoch: 0, LeaderEpoch: -1, StartOffset: -1, DeliveryCompleteCount: -1}, s)

	require.NoError(t, c.Initialize(spA, 0, 10))
	require.NoError(t, c.Write(spA, Write{StateEpoch: 0, LeaderEpoch: 1, StartOffset: 10, Batches: []StateBatch{b(10, 19, Acknowledged, 1), b(20, 29, Available, 1)}}))
	require.NoError(t, c.Write(spA, Write{StateEpoch: 0, LeaderEpoch: 1, StartOffset: 15, Batches: []StateBatch{b(20, 24, Archived, 1)}}))
	got, err := c.Read(spA, 1)
	require.NoError(t, err)
	require.Equal(t, State{StateEpoch: 0, LeaderEpoch: 1, StartOffset: 15,
		Batches: []StateBatch{b(15, 19, Acknowledged, 1), b(20, 24, Archived, 1), b(25, 29, Available, 1)}}, got)
	s, err = c.ReadSummary(spA, 1)
	require.NoError(t, err)
	require.Equal(t, Summary{StateEpoch: 0, LeaderEpoch: 1, StartOffset: 15, DeliveryCompleteCount: 10}, s, "15-19 acknowledged, 20-24 archived")
	require.Equal(t, "SUU", l.types(t, p))

	// The first snapshot is Kafka's: epoch 0, no leader yet, both stamps.
	e, err := DecodeRecord(l.records(p)[0])
	require.NoError(t, err)
	require.Equal(t, &SnapshotValue{SnapshotEpoch: 0, StateEpoch: 0, LeaderEpoch: -1, StartOffset: 10,
		CreateTimestamp: fixedNow.UnixMilli(), WriteTimestamp: fixedNow.UnixMilli()}, e.Snapshot)

	// Bad requests.
	require.ErrorIs(t, c.Initialize(SharePartition{Group: "g", Partition: -1}, 0, 0), kafka.ErrInvalidRequest)
	require.ErrorIs(t, c.Write(spA, Write{LeaderEpoch: 1, Batches: []StateBatch{b(5, 4, Available, 1)}}), kafka.ErrInvalidRequest)
	require.Equal(t, "SUU", l.types(t, p))
}

func TestFencing(t *testing.T) {
	c, l := newTest(t, Options{})
	p := c.PartitionFor(spA)
	require.NoError(t, c.Initialize(spA, 3, 0))

	// A new leader reads, which records its epoch.
	_, err := c.Read(spA, 5)
	require.NoError(t, err)
	require.Equal(t, "SU", l.types(t, p))
	_, err = c.Read(spA, 5)
	require.NoError(t, err)
	_, err = c.Read(spA, -1)
	require.NoError(t, err)
	require.Equal(t, "SU", l.types(t, p), "the same or no leader epoch is not written again")

	// The old leader is fenced, in reads and writes.
	_, err = c.Read(spA, 4)
	require.ErrorIs(t, err, kafka.ErrFencedLeaderEpoch)
	err = c.Write(spA, Write{StateEpoch: 3, LeaderEpoch: 4, StartOffset: -1, Batches: []StateBatch{b(0, 0, Acknowledged, 1)}})
	require.ErrorIs(t, err, kafka.ErrFencedLeaderEpoch)
	// An old state epoch is fenced.
	err = c.Write(spA, Write{StateEpoch: 2, LeaderEpoch: 5, StartOffset: -1, Batches: []StateBatch{b(0, 0, Acknowledged, 1)}})
	require.ErrorIs(t, err, kafka.ErrFencedStateEpoch)
	// Both old: the leader epoch is checked first, as Kafka does.
	err = c.Write(spA, Write{StateEpoch: 2, LeaderEpoch: 4, StartOffset: -1})
	require.ErrorIs(t, err, kafka.ErrFencedLeaderEpoch)
	require.Equal(t, "SU", l.types(t, p), "fenced writes write nothing")

	// The current epochs, and newer ones, are accepted.
	require.NoError(t, c.Write(spA, Write{StateEpoch: 3, LeaderEpoch: 5, StartOffset: -1, Batches: []StateBatch{b(0, 0, Acknowledged, 1)}}))
	require.NoError(t, c.Write(spA, Write{StateEpoch: 3, LeaderEpoch: 6, StartOffset: -1}))
	require.ErrorIs(t, c.Write(spA, Write{StateEpoch: 3, LeaderEpoch: 5, StartOffset: -1}), kafka.ErrFencedLeaderEpoch)

	// Initialize with an older state epoch is fenced; the same or newer
	// starts the state over.
	require.ErrorIs(t, c.Initialize(spA, 2, 0), kafka.ErrFencedStateEpoch)
	require.NoError(t, c.Initialize(spA, 3, 100))
	got, err := c.Read(spA, 6)
	require.NoError(t, err)
	require.Equal(t, State{StateEpoch: 3, LeaderEpoch: 6, StartOffset: 100}, got)
	// It keeps fencing the old leader.
	require.ErrorIs(t, c.Write(spA, Write{StateEpoch: 3, LeaderEpoch: 5, StartOffset: -1}), kafka.ErrFencedLeaderEpoch)
}

// TestSnapshotCadence: with SnapshotUpdateRecords 3, writes are updates
// until the count Kafka keeps reaches 3 — the first update counts 0, so
// the first round has 4 — then a snapshot; a newer state epoch is a
// snapshot at once.
func TestSnapshotCadence(t *testing.T) {
	c, l := newTest(t, Options{SnapshotUpdateRecords: 3})
	p := c.PartitionFor(spA)
	require.NoError(t, c.Initialize(spA, 0, 0))
	for i := range int64(9) {
		require.NoError(t, c.Write(spA, Write{StateEpoch: 0, LeaderEpoch: 0, StartOffset: -1, Batches: []StateBatch{b(i, i, Acknowledged, 1)}}))
	}
	require.Equal(t, "S"+"UUUUS"+"UUUS", l.types(t, p))
	require.NoError(t, c.Write(spA, Write{StateEpoch: 1, LeaderEpoch: 0, StartOffset: -1}))
	require.Equal(t, "SUUUUSUUUSS", l.types(t, p))

	// The snapshots count up, and carry every batch.
	var epochs []int32
	var last *SnapshotValue
	for _, r := range l.records(p) {
		e, err := DecodeRecord(r)
		require.NoError(t, err)
		if e.Snapshot != nil {
			epochs, last = append(epochs, e.Snapshot.SnapshotEpoch), e.Snapshot
		}
	}
	require.Equal(t, []int32{0, 1, 2, 3}, epochs)
	require.Equal(t, int32(1), last.StateEpoch)
	require.Equal(t, []StateBatch{b(0, 8, Acknowledged, 1)}, last.StateBatches)

	// Kafka's 0: every write a snapshot.
	c, l = newTest(t, Options{SnapshotUpdateRecords: -1})
	require.NoError(t, c.Initialize(spA, 0, 0))
	require.NoError(t, c.Write(spA, Write{StateEpoch: 0, LeaderEpoch: 0, StartOffset: -1}))
	require.NoError(t, c.Write(spA, Write{StateEpoch: 0, LeaderEpoch: 0, StartOffset: -1}))
	require.Equal(t, "SSS", l.types(t, p))
}

func TestDelete(t *testing.T) {
	c, l := newTest(t, Options{})
	p := c.PartitionFor(spA)
	require.NoError(t, c.Delete(spA), "nothing to delete")
	require.Equal(t, "", l.types(t, p))
	require.NoError(t, c.Initialize(spA, 0, 0))
	require.NoError(t, c.Write(spA, Write{LeaderEpoch: 0, StartOffset: -1, Batches: []StateBatch{b(0, 3, Archived, 1)}}))
	require.NoError(t, c.Delete(spA))
	require.Equal(t, "SUT", l.types(t, p))
	tomb := l.records(p)[2]
	require.Nil(t, tomb.Value)
	require.Equal(t, Key{Type: SnapshotRecord, SharePartition: spA}.Encode(), tomb.Key)
	_, err := c.Read(spA, 0)
	require.ErrorIs(t, err, kafka.ErrInvalidRequest)

	// After a reload, and after compaction drops the tombstone (the
	// update, whose key Kafka never tombstones, stays): still deleted.
	for _, recs := range [][]Record{l.records(p), compact(l.records(p), false), compact(l.records(p), true)} {
		c2, _ := newTest(t, Options{})
		require.NoError(t, c2.Load(p, iter(recs)))
		_, err := c2.Read(spA, 0)
		require.ErrorIs(t, err, kafka.ErrInvalidRequest)
	}
}

func TestAppendFails(t *testing.T) {
	c, l := newTest(t, Options{})
	require.NoError(t, c.Initialize(spA, 0, 0))
	l.fail = errors.New("not enough replicas")
	err := c.Write(spA, Write{LeaderEpoch: 1, StartOffset: 5, Batches: []StateBatch{b(5, 6, Acknowledged, 1)}})
	require.ErrorIs(t, err, kafka.ErrCoordinatorNotAvailable)
	_, err = c.Read(spA, 2)
	require.ErrorIs(t, err, kafka.ErrCoordinatorNotAvailable, "a new leader epoch that is not durable is not answered")
	l.fail = nil
	got, err := c.Read(spA, -1)
	require.NoError(t, err)
	require.Equal(t, State{LeaderEpoch: -1, StartOffset: 0}, got, "nothing changed")
}

func TestLoadCorrupt(t *testing.T) {
	c, l := newTest(t, Options{})
	p := c.PartitionFor(spA)
	require.NoError(t, c.Initialize(spA, 0, 0))
	recs := append(l.records(p), Record{Key: Key{Type: UpdateRecord, SharePartition: spA}.Encode(), Value: []byte{0, 0, 1}})
	c2, _ := newTest(t, Options{})
	err := c2.Load(p, iter(recs))
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = c2.Read(spA, -1)
	require.ErrorIs(t, err, kafka.ErrInvalidRequest, "a failed load holds nothing")
	err = c2.Load(p, func(func(Record) bool) error { return errors.New("read failed") })
	require.ErrorContains(t, err, "read failed")
}

func TestUnload(t *testing.T) {
	c, _ := newTest(t, Options{})
	other := SharePartition{Group: "g", TopicID: topicT, Partition: 1}
	require.NotEqual(t, c.PartitionFor(spA), c.PartitionFor(other))
	require.NoError(t, c.Initialize(spA, 0, 0))
	require.NoError(t, c.Initialize(other, 0, 0))
	c.Unload(c.PartitionFor(spA))
	_, err := c.Read(spA, -1)
	require.ErrorIs(t, err, kafka.ErrInvalidRequest)
	_, err = c.Read(other, -1)
	require.NoError(t, err)
}

// TestLoadAfterCompaction is the negative control's home: Kafka's
// ShareUpdate carries only its own write, so a compaction that keeps
// only the latest update loses the earlier ones; ours carries everything
// since the snapshot.
func TestLoadAfterCompaction(t *testing.T) {
	c, l := newTest(t, Options{})
	p := c.PartitionFor(spA)
	require.NoError(t, c.Initialize(spA, 0, 0))
	require.NoError(t, c.Write(spA, Write{LeaderEpoch: 0, StartOffset: -1, Batches: []StateBatch{b(0, 9, Acknowledged, 1)}}))
	require.NoError(t, c.Write(spA, Write{LeaderEpoch: 0, StartOffset: -1, Batches: []StateBatch{b(10, 19, Archived, 1)}}))
	want, err := c.Read(spA, -1)
	require.NoError(t, err)
	require.Len(t, compact(l.records(p), false), 2)
	c2, _ := newTest(t, Options{})
	require.NoError(t, c2.Load(p, iter(compact(l.records(p), false))))
	got, err := c2.Read(spA, -1)
	require.NoError(t, err)
	require.Equal(t, want, got)

	// A start offset moved back is a snapshot: the batches the forward
	// move pruned must not come back from the older snapshot.
	c, l = newTest(t, Options{})
	require.NoError(t, c.Initialize(spA, 0, 0))
	// A newer state epoch makes this write a snapshot holding [5, 10].
	require.NoError(t, c.Write(spA, Write{StateEpoch: 1, LeaderEpoch: 0, StartOffset: -1, Batches: []StateBatch{b(5, 10, Acknowledged, 1)}}))
	require.NoError(t, c.Write(spA, Write{StateEpoch: 1, LeaderEpoch: 0, StartOffset: 20}))
	require.NoError(t, c.Write(spA, Write{StateEpoch: 1, LeaderEpoch: 0, StartOffset: 3}))
	require.Equal(t, "SSUS", l.types(t, p))
	want, err = c.Read(spA, -1)
	require.NoError(t, err)
	require.Equal(t, State{StateEpoch: 1, LeaderEpoch: 0, StartOffset: 3}, want)
	c2, _ = newTest(t, Options{})
	require.NoError(t, c2.Load(p, iter(compact(l.records(p), false))))
	got, err = c2.Read(spA, -1)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// TestLoadModel: after any run of calls, Load of the log — as written,
// and compacted to the latest record of each key — gives every share
// partition the state the coordinator answered, and fences alike.
func TestLoadModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(-1, 4).Draw(t, "snapshot update records")
		if n == 0 {
			n = 1
		}
		opts := Options{SnapshotUpdateRecords: n, Partitions: 3}
		c, l := newTest(t, opts)
		sps := []SharePartition{spA, {Group: "h", TopicID: topicU, Partition: 2}, {Group: "g", TopicID: topicT, Partition: 7}}
		leader := map[SharePartition]int32{}
		for range rapid.IntRange(1, 40).Draw(t, "calls") {
			sp := rapid.SampledFrom(sps).Draw(t, "share partition")
			switch rapid.IntRange(0, 9).Draw(t, "call") {
			case 0:
				_ = c.Initialize(sp, rapid.Int32Range(0, 2).Draw(t, "state epoch"), rapid.Int64Range(-1, 20).Draw(t, "start"))
			case 1:
				leader[sp] += rapid.Int32Range(0, 1).Draw(t, "new leader")
				_, _ = c.Read(sp, leader[sp])
			case 2:
				_ = c.Delete(sp)
			default:
				start := int64(-1)
				if rapid.Bool().Draw(t, "moves start") {
					start = rapid.Int64Range(0, 40).Draw(t, "start")
				}
				_ = c.Write(sp, Write{StateEpoch: rapid.Int32Range(0, 2).Draw(t, "state epoch"), LeaderEpoch: leader[sp],
					StartOffset: start, Batches: genBatches(t, "batches")})
			}
		}
		type answer struct {
			State   State
			Summary Summary
			Err     string
			Fenced  bool
		}
		answers := func(c *Coordinator) map[SharePartition]answer {
			out := map[SharePartition]answer{}
			for _, sp := range sps {
				var a answer
				var err error
				a.State, err = c.Read(sp, -1)
				if err != nil {
					a.Err = err.Error()
				}
				a.Summary, _ = c.ReadSummary(sp, -1)
				_, err = c.ReadSummary(sp, leader[sp]-1)
				a.Fenced = errors.Is(err, kafka.ErrFencedLeaderEpoch)
				out[sp] = a
			}
			return out
		}
		want := answers(c)
		for name, compacted := range map[string]func([]Record) []Record{
			"as written":                    func(r []Record) []Record { return r },
			"compacted":                     func(r []Record) []Record { return compact(r, false) },
			"compacted, tombstones dropped": func(r []Record) []Record { return compact(r, true) },
		} {
			c2, _ := newTest(t, opts)
			for p := range opts.Partitions {
				require.NoError(t, c2.Load(p, iter(compacted(l.records(p)))))
			}
			require.Equal(t, want, answers(c2), name)
		}
	})
}

// TestConcurrent: calls from many goroutines on share partitions of
// several partitions keep each share partition's state whole (run with
// -race).
func TestConcurrent(t *testing.T) {
	c, _ := newTest(t, Options{SnapshotUpdateRecords: 5})
	var wg sync.WaitGroup
	for g := range 8 {
		sp := SharePartition{Group: fmt.Sprintf("g%d", g), TopicID: topicT, Partition: int32(g)}
		require.NoError(t, c.Initialize(sp, 0, 0))
		wg.Go(func() {
			for i := range int64(50) {
				if err := c.Write(sp, Write{LeaderEpoch: 0, StartOffset: -1, Batches: []StateBatch{b(i, i, Acknowledged, 1)}}); err != nil {
					t.Error(err)
					return
				}
				if _, err := c.Read(sp, 0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for g := range 8 {
		got, err := c.Read(SharePartition{Group: fmt.Sprintf("g%d", g), TopicID: topicT, Partition: int32(g)}, -1)
		require.NoError(t, err)
		require.Equal(t, []StateBatch{b(0, 49, Acknowledged, 1)}, got.Batches)
	}
}
