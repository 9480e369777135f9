package partition_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

func newLog(t *testing.T, opts log.Options) *log.Log {
	t.Helper()
	opts.FS = vfs.NewMem()
	l, err := log.Open("/data/t-0", opts)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

func batch(ts int64, values ...string) []byte {
	b := record.NewBuilder(record.DefaultBatchOptions())
	for _, v := range values {
		b.Append(record.Record{Timestamp: ts, Value: []byte(v)})
	}
	return b.Build()
}

func TestAppendStampsEpochAndMovesHighWatermark(t *testing.T) {
	l := newLog(t, log.Options{})
	p := partition.New("t", 0, 1, 7, l, partition.Options{})
	wake := make(chan struct{}, 1)
	p.Notify(wake)
	res, err := p.Append(batch(1000, "a", "b"), kafka.AcksAll)
	require.NoError(t, err)
	require.EqualValues(t, 0, res.FirstOffset)
	require.EqualValues(t, -1, res.LogAppendTime)
	require.EqualValues(t, 2, p.HighWatermark())
	select {
	case <-wake:
	default:
		t.Fatal("the append did not notify")
	}
	require.Equal(t, []log.EpochEntry{{Epoch: 7, StartOffset: 0}}, l.EpochEntries(), "batches carry the leader epoch")

	got, err := p.Fetch(nil, 0, 1<<20)
	require.NoError(t, err)
	h, err := record.ParseHeader(got.Records)
	require.NoError(t, err)
	require.EqualValues(t, 7, h.PartitionLeaderEpoch)
	require.EqualValues(t, 2, got.HighWatermark)

	p.Stop(wake)
	_, err = p.Append(batch(1000, "c"), kafka.AcksLeader)
	require.NoError(t, err)
	select {
	case <-wake:
		t.Fatal("stopped watchers are not notified")
	default:
	}
}

// TestDurableHighWatermark: with a log that does not sync before acking,
// a durable high watermark stays at the recovery point until a flush.
func TestDurableHighWatermark(t *testing.T) {
	l := newLog(t, log.Options{})
	p := partition.New("t", 0, 1, 0, l, partition.Options{DurableHighWatermark: true})
	_, err := p.Append(batch(1000, "a"), kafka.AcksLeader)
	require.NoError(t, err)
	require.EqualValues(t, 0, p.HighWatermark(), "nothing is on disk yet")
	got, err := p.Fetch(nil, 0, 1<<20)
	require.NoError(t, err)
	require.Empty(t, got.Records, "consumers see nothing above the high watermark")
	require.NoError(t, l.Flush())
	_, err = p.Append(batch(1000, "b"), kafka.AcksLeader)
	require.NoError(t, err)
	require.EqualValues(t, 1, p.HighWatermark(), "the flushed record is committed, the new one not yet")

	synced := newLog(t, log.Options{SyncBeforeAck: true})
	q := partition.New("t", 0, 1, 0, synced, partition.Options{DurableHighWatermark: true})
	_, err = q.Append(batch(1000, "a"), kafka.AcksLeader)
	require.NoError(t, err)
	require.EqualValues(t, 1, q.HighWatermark(), "sync before ack: the high watermark follows the appends")
}

func TestListOffset(t *testing.T) {
	l := newLog(t, log.Options{})
	p := partition.New("t", 0, 1, 0, l, partition.Options{})
	for i := range 5 {
		_, err := p.Append(batch(int64(1000+i*10), "x", "y"), kafka.AcksLeader)
		require.NoError(t, err)
	}
	off, _, err := p.ListOffset(kafka.EarliestTimestamp)
	require.NoError(t, err)
	require.EqualValues(t, 0, off)
	off, _, err = p.ListOffset(kafka.LatestTimestamp)
	require.NoError(t, err)
	require.EqualValues(t, 10, off)
	off, ts, err := p.ListOffset(1015)
	require.NoError(t, err)
	require.EqualValues(t, 4, off)
	require.EqualValues(t, 1020, ts)
	off, _, err = p.ListOffset(5000)
	require.NoError(t, err)
	require.EqualValues(t, -1, off, "no record that late")
	_, _, err = p.ListOffset(-7)
	require.ErrorIs(t, err, kafka.ErrInvalidRequest)
}

func TestLogAppendTime(t *testing.T) {
	l := newLog(t, log.Options{})
	now := time.UnixMilli(1_800_000_000_000)
	p := partition.New("t", 0, 1, 0, l, partition.Options{LogAppendTime: true, Now: func() time.Time { return now }})
	res, err := p.Append(batch(1000, "a"), kafka.AcksLeader)
	require.NoError(t, err)
	require.EqualValues(t, now.UnixMilli(), res.LogAppendTime)
	got, err := p.Fetch(nil, 0, 1<<20)
	require.NoError(t, err)
	b, err := record.Decode(got.Records)
	require.NoError(t, err)
	require.Equal(t, record.LogAppendTime, b.Attributes.TimestampType())
	require.EqualValues(t, now.UnixMilli(), b.Records[0].Timestamp)

	bad := batch(1000, "a")
	bad[len(bad)-1] ^= 1
	_, err = p.Append(bad, kafka.AcksLeader)
	require.ErrorIs(t, err, kafka.ErrCorruptMessage, "a damaged batch is refused, not re-stamped with a good CRC")
	require.ErrorIs(t, err, record.ErrCorrupt)
}

func TestClosedPartition(t *testing.T) {
	l := newLog(t, log.Options{})
	p := partition.New("t", 0, 1, 0, l, partition.Options{})
	wake := make(chan struct{}, 1)
	p.Notify(wake)
	p.Close()
	<-wake // Close wakes watchers
	_, err := p.Append(batch(0, "a"), kafka.AcksLeader)
	require.ErrorIs(t, err, kafka.ErrClosed)
	_, err = p.Fetch(nil, 0, 100)
	require.ErrorIs(t, err, kafka.ErrClosed)
}
