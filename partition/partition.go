package partition

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// Options configures a Partition. The zero value works.
type Options struct {
	// MinInsyncReplicas is min.insync.replicas: an acks=all append fails
	// with kafka.ErrNotEnoughReplicas while fewer replicas are in
	// sync. Zero means 1.
	MinInsyncReplicas int
	// DurableHighWatermark keeps the high watermark at or below the log's
	// recovery point, so that consumers read only records on disk. Set it
	// when the log syncs before acknowledging.
	DurableHighWatermark bool
	// LogAppendTime stamps each batch with the time it is appended
	// (message.timestamp.type=LogAppendTime) instead of keeping the
	// producer's timestamps.
	LogAppendTime bool
	// Now is the clock for LogAppendTime and producer expiration. Nil
	// means time.Now.
	Now func() time.Time
	// Compacted rejects records without a key with
	// kafka.ErrInvalidRecord, as Kafka does for a topic whose
	// cleanup.policy includes compact.
	Compacted bool
	// ProducerIDExpiration is producer.id.expiration.ms: how long after
	// its last batch's timestamp an idempotent producer's state is kept
	// (see RemoveExpiredProducers). Zero means 24 hours.
	ProducerIDExpiration time.Duration
	// Replicated says package replica drives the partition (see
	// CheckAppend): the high watermark starts at HighWatermark, capped at
	// the log end offset, and moves only by SetHighWatermark.
	Replicated bool
	// HighWatermark is a replicated partition's high watermark when it
	// last ran (replication-offset-checkpoint).
	HighWatermark int64
	// TxnVerifier, when not nil, is asked before a transactional batch
	// opens a transaction on the partition whether its producer is in a
	// transaction that includes the partition (KIP-890 part 1; see
	// TxnVerifier). Nil accepts the batch unasked, as Kafka without
	// transaction verification.
	TxnVerifier TxnVerifier
}

// Partition is one replica of a partition. It is safe for concurrent use.
type Partition struct {
	topic     string
	partition int32
	nodeID    int32
	log       *log.Log
	opts      atomic.Pointer[Options] // settings; Reconfigure swaps them

	mu          sync.Mutex
	hw          int64
	leaderEpoch int32
	isr         []int32
	waiters     map[chan<- struct{}]struct{}
	closed      bool

	// producers is the idempotent producers' state (producers.go);
	// rollBase the active segment's base offset at its last snapshot.
	producers *producers
	rollBase  atomic.Int64
}

// New returns the partition over l, led by this node (nodeID) in
// leaderEpoch, with this node as its only in-sync replica.
func New(topic string, partition int32, nodeID int32, leaderEpoch int32, l *log.Log, opts Options) *Partition {
	if opts.MinInsyncReplicas <= 0 {
		opts.MinInsyncReplicas = 1
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ProducerIDExpiration <= 0 {
		opts.ProducerIDExpiration = 24 * time.Hour
	}
	p := &Partition{
		topic: topic, partition: partition, nodeID: nodeID, log: l,
		leaderEpoch: leaderEpoch, isr: []int32{nodeID}, waiters: map[chan<- struct{}]struct{}{},
		producers: &producers{log: l, fs: l.FS(), expiration: opts.ProducerIDExpiration, now: opts.Now,
			verify: verification{verifier: opts.TxnVerifier, tp: kafka.TopicPartition{Topic: topic, Partition: partition}}},
	}
	p.opts.Store(&opts)
	p.rollBase.Store(l.ActiveSegmentBaseOffset())
	p.hw = p.committedOffset()
	if opts.Replicated {
		p.hw = min(max(opts.HighWatermark, 0), l.LogEndOffset())
	}
	return p
}

// options returns the partition's settings in force; Reconfigure replaces
// them whole.
func (p *Partition) options() *Options { return p.opts.Load() }

// Reconfigure changes the settings a topic config change reaches while the
// partition is open: MinInsyncReplicas, LogAppendTime and Compacted. The
// rest of o is ignored; DurableHighWatermark in particular stays as the
// partition was opened with, so that the high watermark never goes back.
func (p *Partition) Reconfigure(o Options) {
	next := *p.options()
	next.MinInsyncReplicas = max(o.MinInsyncReplicas, 1)
	next.LogAppendTime, next.Compacted = o.LogAppendTime, o.Compacted
	p.opts.Store(&next)
}

// DeleteRecordsBefore moves the partition's log start offset up to offset
// (Kafka's DeleteRecords), -1 meaning the high watermark, and returns the
// log start offset after it. An offset above the high watermark is
// refused with kafka.ErrOffsetOutOfRange: only committed records may
// be deleted. A lower offset than the log start changes nothing. Errors
// are Kafka's, as Append's are.
func (p *Partition) DeleteRecordsBefore(offset int64) (int64, error) {
	hw := p.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return p.log.LogStartOffset(), fmt.Errorf("%w: %s-%d: cannot delete records before %d: the high watermark is %d",
			kafka.ErrOffsetOutOfRange, p.topic, p.partition, offset, hw)
	}
	if err := p.log.DeleteRecordsBefore(offset); err != nil {
		return p.log.LogStartOffset(), kafkaError(err)
	}
	return p.log.LogStartOffset(), nil
}

// Topic returns the partition's topic.
func (p *Partition) Topic() string { return p.topic }

// ID returns the partition's number.
func (p *Partition) ID() int32 { return p.partition }

// Log returns the partition's log.
func (p *Partition) Log() *log.Log { return p.log }

// LeaderEpoch returns the epoch of the current leadership.
func (p *Partition) LeaderEpoch() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leaderEpoch
}

// ISR returns the in-sync replicas' node ids.
func (p *Partition) ISR() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int32(nil), p.isr...)
}

// HighWatermark returns the offset below which records are committed:
// what consumers may read.
func (p *Partition) HighWatermark() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hw
}

// LogEndOffset returns the offset the next record will get.
func (p *Partition) LogEndOffset() int64 { return p.log.LogEndOffset() }

// LogStartOffset returns the first offset a reader may ask for.
func (p *Partition) LogStartOffset() int64 { return p.log.LogStartOffset() }

// committedOffset is where the high watermark may be with this node as the
// only in-sync replica.
func (p *Partition) committedOffset() int64 {
	if p.options().DurableHighWatermark {
		return p.log.RecoveryPoint()
	}
	return p.log.LogEndOffset()
}

// AppendResult says where an appended batch landed.
type AppendResult struct {
	log.AppendInfo
	// LogAppendTime is the timestamp the partition gave the batch, or -1
	// when the batch keeps its producer's timestamps.
	LogAppendTime int64
	// Duplicate says the batch was a retry of one of its idempotent
	// producer's last batches, already in the log: it was not appended
	// again, and the offsets are the original's.
	Duplicate bool
}

// Append appends one record batch as the leader: it stamps the leader epoch
// on the batch — and with LogAppendTime the time — in place, as the log
// rewrites its base offset, appends it, then moves the high watermark. With
// acks=all it first checks that enough replicas are in sync. Append
// borrows batch until it returns, changing it in place; the caller may
// reuse it after.
//
// A transactional batch opens its producer's transaction when none is
// open; a control batch's COMMIT or ABORT marker closes it (AppendMarker
// writes one).
//
// Errors are Kafka's: kafka.ErrMessageTooLarge, ErrCorruptMessage,
// ErrInvalidRecord (a record without a key in a compacted topic),
// ErrNotEnoughReplicas, ErrKafkaStorage (which also matches the log's
// ErrStorage or ErrDiskFull), ErrInvalidRequiredAcks; the producer
// state's ErrOutOfOrderSequence, ErrInvalidProducerEpoch,
// ErrUnknownProducerID, ErrInvalidTxnState (a write outside the
// producer's open transaction), ErrTransactionCoordinatorFenced (a
// marker from an older coordinator), and whatever the TxnVerifier
// answers.
func (p *Partition) Append(batch []byte, acks kafka.Acks) (AppendResult, error) {
	res := AppendResult{LogAppendTime: -1}
	o := p.options() // one set of settings for the whole append, whatever Reconfigure does meanwhile
	if err := acks.Check(); err != nil {
		return res, err
	}
	p.mu.Lock()
	epoch, isr, closed := p.leaderEpoch, p.isr, p.closed // SetLeadership replaces p.isr, never changes it
	p.mu.Unlock()
	if closed {
		return res, kafka.ErrClosed
	}
	if err := kafka.CheckInSync(kafka.TopicPartition{Topic: p.topic, Partition: p.partition}, acks, isr, o.MinInsyncReplicas); err != nil {
		return res, err
	}
	var h record.Header
	var err error
	switch {
	case o.Compacted:
		// checkKeys decodes the batch, which verifies its CRC too: no
		// separate Validate is needed for LogAppendTime's stamping.
		if h, err = p.checkKeys(batch, record.VerifyCRC); err != nil {
			return res, err
		}
	case o.LogAppendTime:
		// Stamping recomputes the CRC: check the producer's first, or a
		// damaged batch would come out looking sound.
		if h, err = record.Validate(batch); err != nil {
			return res, kafkaError(err)
		}
	default:
		if h, err = record.ParseHeader(batch); err != nil {
			return res, kafkaError(err) // too short to stamp; the log says why
		}
	}
	check, err := p.producers.checkFor(&h, batch)
	if err != nil {
		return res, kafkaError(err)
	}
	record.SetPartitionLeaderEpoch(batch, epoch)
	if o.LogAppendTime {
		res.LogAppendTime = o.Now().UnixMilli()
		record.SetMaxTimestamp(batch, record.LogAppendTime, res.LogAppendTime)
	}
	info, err := p.log.AppendChecked(batch, check)
	var dup *duplicateError
	if errors.As(err, &dup) {
		// A retry of a batch the log holds: answer its offsets, once the
		// original is as safe as an acknowledged append.
		if err := p.confirmDuplicate(&h, dup.batch); err != nil {
			return res, err
		}
		res.FirstOffset, res.LastOffset = dup.batch.FirstOffset, dup.batch.LastOffset
		res.MaxTimestamp, res.LogStartOffset = dup.batch.Timestamp, p.log.LogStartOffset()
		res.Records = int(res.LastOffset - res.FirstOffset + 1)
		res.LogAppendTime, res.Duplicate = -1, true
		return res, nil
	}
	if err != nil {
		return res, kafkaError(err)
	}
	res.AppendInfo = info
	p.advanceHighWatermark()
	p.maybeSnapshotOnRoll()
	if h.Attributes.IsControl() {
		p.notifyWaiters() // the last stable offset may have moved
	}
	return res, nil
}

// advanceHighWatermark moves the high watermark up to what is committed and
// wakes the readers waiting for it.
func (p *Partition) advanceHighWatermark() {
	committed := p.committedOffset()
	p.mu.Lock()
	if committed <= p.hw {
		p.mu.Unlock()
		return
	}
	p.hw = committed
	p.notifyLocked()
	p.mu.Unlock()
	p.producers.highWatermark(committed)
}

// notifyWaiters wakes the readers waiting for the high watermark or the
// last stable offset to move.
func (p *Partition) notifyWaiters() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notifyLocked()
}

// notifyLocked is notifyWaiters for a caller holding mu.
func (p *Partition) notifyLocked() {
	for ch := range p.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Notify registers ch to receive a value, without blocking, whenever the
// high watermark or the last stable offset advances (or the partition
// closes), until Stop(ch). Give ch a buffer of one; a value may come when
// neither moved. Register before reading them, so that no advance goes
// unnoticed.
func (p *Partition) Notify(ch chan<- struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		select {
		case ch <- struct{}{}:
		default:
		}
		return
	}
	p.waiters[ch] = struct{}{}
}

// Stop undoes Notify.
func (p *Partition) Stop(ch chan<- struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.waiters, ch)
}

// FetchResult is what Fetch read.
type FetchResult struct {
	// Records are whole batches; the first may begin before the offset
	// asked for.
	Records []byte
	// HighWatermark and LogStartOffset are the partition's when it was
	// read.
	HighWatermark  int64
	LogStartOffset int64
	// LastStableOffset is the partition's last stable offset when it was
	// read: at most HighWatermark, and below it while a transaction that
	// began below it is undecided (see LastStableOffset).
	LastStableOffset int64
	// AbortedTransactions, for a read_committed fetch, are the aborted
	// transactions whose records Records may hold, in the order of their
	// ABORT markers, for the consumer to skip: empty, not nil, when there
	// are none. A read_uncommitted fetch's is nil, as Kafka's is null.
	AbortedTransactions []AbortedTransaction
}

// Fetch appends to dst the batches from offset on that lie below the high
// watermark, at most maxBytes of them but at least one: FetchIsolated at
// kafka.ReadUncommitted.
func (p *Partition) Fetch(dst []byte, offset int64, maxBytes int) (FetchResult, error) {
	return p.FetchIsolated(dst, offset, maxBytes, kafka.ReadUncommitted)
}

// FetchRange is Fetch for a network server: rather than reading the
// batches, it returns where they lie in a segment file, as a vfs.FileRange
// whose descriptor the caller sends with sendfile and closes. A zero range
// means no records. On a filesystem without file descriptors it returns
// log.ErrNoDescriptor, unwrapped, and the caller uses Fetch. It is
// FetchRangeIsolated at kafka.ReadUncommitted.
func (p *Partition) FetchRange(offset int64, maxBytes int) (FetchResult, vfs.FileRange, error) {
	return p.FetchRangeIsolated(offset, maxBytes, kafka.ReadUncommitted)
}

// ListOffset answers ListOffsets for a read_uncommitted consumer:
// ListOffsetIsolated at kafka.ReadUncommitted.
func (p *Partition) ListOffset(timestamp int64) (offset, recordTimestamp int64, err error) {
	return p.ListOffsetIsolated(timestamp, kafka.ReadUncommitted)
}

// Close wakes every waiting reader; later calls fail with
// kafka.ErrClosed. It snapshots the producer state, so that the next
// open scans nothing, but does not close the log, which its owner does.
func (p *Partition) Close() {
	_, _ = p.producers.snapshot() // without it, recovery scans more of the log
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.notifyLocked()
	clear(p.waiters)
}

// kafkaError wraps a log error in the Kafka error a client sees, keeping
// the original in the chain.
func kafkaError(err error) error {
	var kerr *kafka.Error
	switch {
	case errors.As(err, &kerr):
		return err
	case errors.Is(err, log.ErrOffsetOutOfRange):
		return fmt.Errorf("%w: %w", kafka.ErrOffsetOutOfRange, err)
	case errors.Is(err, log.ErrRecordTooLarge):
		return fmt.Errorf("%w: %w", kafka.ErrMessageTooLarge, err)
	case errors.Is(err, record.ErrCorrupt), errors.Is(err, record.ErrTruncated),
		errors.Is(err, record.ErrUnsupportedMagic), errors.Is(err, record.ErrUnsupportedCompression):
		return fmt.Errorf("%w: %w", kafka.ErrCorruptMessage, err)
	case errors.Is(err, log.ErrStorage), errors.Is(err, log.ErrDiskFull):
		return fmt.Errorf("%w: %w", kafka.ErrKafkaStorage, err)
	case errors.Is(err, log.ErrClosed):
		return fmt.Errorf("%w: %w", kafka.ErrClosed, err)
	}
	return fmt.Errorf("%w: %w", kafka.ErrUnknownServerError, err)
}
