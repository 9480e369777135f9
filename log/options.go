package log

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

// Options configures a Log. The zero value works: Kafka's defaults, the OS
// filesystem, no forced flushing, and a full recovery scan on open (a Dir
// supplies what makes a clean restart scan nothing).
type Options struct {
	// FS is the filesystem. Nil means vfs.Default, the OS.
	FS vfs.FS
	// Logger receives recovery and failure reports. Nil discards them.
	Logger *slog.Logger
	// Now is the clock for segment.ms, retention.ms and flush.ms. Nil
	// means time.Now.
	Now func() time.Time

	// SegmentBytes is segment.bytes: a segment rolls before it would pass
	// this size. Zero means 1 GiB; at most 2 GiB - 1.
	SegmentBytes int64
	// SegmentMs is segment.ms: a segment rolls once the newest timestamp
	// is this far past its first. Zero means 7 days.
	SegmentMs time.Duration
	// IndexIntervalBytes is index.interval.bytes. Zero means 4096.
	IndexIntervalBytes int
	// MaxIndexBytes is segment.index.bytes. Zero means 10 MiB.
	MaxIndexBytes int
	// MaxMessageBytes is max.message.bytes: the largest batch Append
	// takes. Zero means 1048588.
	MaxMessageBytes int

	// RetentionBytes is retention.bytes: DeleteRetained removes the oldest
	// segments while the log is larger. Zero or negative means no limit.
	RetentionBytes int64
	// RetentionMs is retention.ms: DeleteRetained removes segments whose
	// newest timestamp is older. Zero means 7 days; negative means forever.
	RetentionMs time.Duration

	// FlushMessages is flush.messages: after this many records appended
	// since the last flush, Append flushes before it returns. Zero means
	// never by count.
	FlushMessages int64
	// FlushInterval is flush.ms: a background flusher makes appended
	// batches durable at least this often. Zero means never by time.
	FlushInterval time.Duration
	// SyncBeforeAck makes every Append return only after its batch is
	// durable. Appends waiting at once share one fdatasync (group commit).
	SyncBeforeAck bool
	// OnFlush, when set, is told how long each flush of the log to disk
	// took that succeeded (the segments' syncs up to the log end; Kafka's
	// LogFlushRateAndTimeMs). It must not block. Nil: nobody is told.
	OnFlush func(took time.Duration)

	// RecoveryPoint is the offset below which the log was known durable
	// when it was last open; segments below it are not scanned on an
	// unclean open. Zero scans every segment.
	RecoveryPoint int64
	// CleanShutdown says the log was closed cleanly: no segment is
	// scanned on open. Set it only when that is known (a Dir knows it).
	CleanShutdown bool
	// LogStartOffset is the log start offset recorded when the log was last
	// open (it can be above the first segment's base after
	// DeleteRecordsBefore). It is also the first offset of a new log.
	LogStartOffset int64

	// CleanupPolicy is cleanup.policy: whether DeleteRetained applies
	// retention.ms and retention.bytes, and whether Clean compacts. The
	// zero value is CleanupDelete, Kafka's default.
	CleanupPolicy CleanupPolicy
	// DeleteRetentionMs is delete.retention.ms: how long a tombstone (a
	// record with a null value) stays after the clean that first kept it
	// as the latest value of its key, and how long a transaction marker
	// stays after the clean that first found its transaction's records
	// all cleaned away. Zero means 1 day; negative means none, so the next
	// clean removes it.
	DeleteRetentionMs time.Duration
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio: Clean compacts
	// only once the dirty bytes are at least this share of the cleanable
	// bytes. Zero means 0.5; negative means 0 (any dirty byte).
	MinCleanableDirtyRatio float64
	// MinCompactionLagMs is min.compaction.lag.ms: a segment whose newest
	// record is younger than this stays dirty. Zero means 0.
	MinCompactionLagMs time.Duration
	// FirstDirtyOffset is the log's entry in the cleaner checkpoint when
	// it was last open: the offset below which Clean had compacted it. A
	// Dir supplies it. Zero means the whole log is dirty.
	FirstDirtyOffset int64
}

const (
	defaultSegmentBytes    = 1 << 30
	defaultSegmentMs       = 7 * 24 * time.Hour
	defaultRetentionMs     = 7 * 24 * time.Hour
	defaultMaxMessageBytes = 1048588
	defaultDeleteRetention = 24 * time.Hour
	defaultDirtyRatio      = 0.5
	minSegmentBytes        = 1024
)

func (o Options) withDefaults() (Options, error) {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = defaultSegmentBytes
	}
	if o.SegmentBytes < minSegmentBytes || o.SegmentBytes > segment.MaxSize {
		return o, fmt.Errorf("log: SegmentBytes %d is outside [%d, %d]", o.SegmentBytes, minSegmentBytes, int64(segment.MaxSize))
	}
	if o.SegmentMs == 0 {
		o.SegmentMs = defaultSegmentMs
	}
	if o.SegmentMs < 0 {
		return o, fmt.Errorf("log: SegmentMs %v is negative", o.SegmentMs)
	}
	if o.RetentionMs == 0 {
		o.RetentionMs = defaultRetentionMs
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = defaultMaxMessageBytes
	}
	if o.MaxMessageBytes < 0 {
		return o, fmt.Errorf("log: MaxMessageBytes %d is negative", o.MaxMessageBytes)
	}
	if o.IndexIntervalBytes < 0 || o.MaxIndexBytes < 0 || o.FlushMessages < 0 || o.FlushInterval < 0 {
		return o, fmt.Errorf("log: IndexIntervalBytes, MaxIndexBytes, FlushMessages and FlushInterval must not be negative")
	}
	if o.MaxIndexBytes != 0 && o.MaxIndexBytes < 4*12 {
		return o, fmt.Errorf("log: MaxIndexBytes %d is below the minimum %d", o.MaxIndexBytes, 4*12)
	}
	if err := o.cleanerDefaults(); err != nil {
		return o, err
	}
	if o.RecoveryPoint < 0 || o.LogStartOffset < 0 {
		return o, fmt.Errorf("log: RecoveryPoint %d and LogStartOffset %d must not be negative", o.RecoveryPoint, o.LogStartOffset)
	}
	return o, nil
}

func (o Options) segmentOptions() segment.Options {
	return segment.Options{IndexIntervalBytes: o.IndexIntervalBytes, MaxIndexBytes: o.MaxIndexBytes}
}
