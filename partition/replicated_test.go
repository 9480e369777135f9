package partition_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// CheckAppend, a replicated leader's check before it gives a batch its
// offsets: keys in a compacted topic, the LogAppendTime stamp, and the
// idempotent producer's sequence, whose retry is a *DuplicateError once
// the original is in the log.
func TestCheckAppend(t *testing.T) {
	t.Run("compacted topic refuses a record without a key", func(t *testing.T) {
		p, _ := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{Compacted: true, Replicated: true})
		b := record.NewBuilder(record.DefaultBatchOptions())
		b.Append(record.Record{Value: []byte("no key")})
		require.ErrorIs(t, p.CheckAppend(b.Build(), 0), kafka.ErrInvalidRecord)
	})
	t.Run("LogAppendTime stamps the batch", func(t *testing.T) {
		now := time.UnixMilli(123456)
		p, _ := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{LogAppendTime: true, Replicated: true,
			Now: func() time.Time { return now }})
		batch := idemBatch(-1, -1, -1, 2, 1)
		require.NoError(t, p.CheckAppend(batch, 0))
		h, err := record.Validate(batch) // the stamp rewrote the CRC
		require.NoError(t, err)
		require.Equal(t, int64(123456), h.MaxTimestamp)
		require.Equal(t, record.LogAppendTime, h.Attributes.TimestampType())
	})
	t.Run("a retry of a batch in the log is a duplicate", func(t *testing.T) {
		p, _ := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{Replicated: true})
		batch := idemBatch(9, 0, 0, 4, 1)
		require.NoError(t, p.CheckAppend(batch, 0))
		record.SetBaseOffset(batch, 0)
		_, err := p.AppendAsFollower(batch)
		require.NoError(t, err)
		err = p.CheckAppend(idemBatch(9, 0, 0, 4, 1), 4)
		var dup *partition.DuplicateError
		require.True(t, errors.As(err, &dup), "got %v", err)
		require.Equal(t, int64(0), dup.Batch.FirstOffset)
		require.Equal(t, int64(3), dup.Batch.LastOffset)
		require.ErrorIs(t, p.CheckAppend(idemBatch(9, 0, 9, 1, 2), 4), kafka.ErrOutOfOrderSequence)
	})
}
