package producer

import (
	"fmt"
	"math"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
)

// Option configures a Producer. Each option is one of Kafka's producer
// configs; its doc gives the default and the Kafka key.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config is the producer's configuration, defaults filled in.
type config struct {
	acks            kafka.Acks
	linger          time.Duration
	batchSize       int
	bufferMemory    int64
	maxBlock        time.Duration
	retries         int
	retryBackoff    time.Duration
	deliveryTimeout time.Duration
	requestTimeout  time.Duration
	maxInFlight     int
	compression     record.Compression
	maxRequestSize  int
	partitioner     Partitioner
	metadataMaxAge  time.Duration
	idempotent      bool
	onRetry         func(Retry)

	transactionalID    string
	transactionTimeout time.Duration

	// deliveryTimeoutSet records that DeliveryTimeout was given, which
	// makes one shorter than linger plus request timeout an error rather
	// than a value to raise (as Kafka does).
	deliveryTimeoutSet bool
	// idempotentSet records that Idempotent was given: a conflicting
	// option is then an error, rather than turning idempotence off.
	idempotentSet bool
}

func defaultConfig() config {
	return config{
		acks:            kafka.AcksAll,
		linger:          5 * time.Millisecond,
		batchSize:       16384,
		bufferMemory:    32 << 20,
		maxBlock:        60 * time.Second,
		retries:         math.MaxInt32,
		retryBackoff:    100 * time.Millisecond,
		deliveryTimeout: 120 * time.Second,
		requestTimeout:  30 * time.Second,
		maxInFlight:     5,
		compression:     record.None,
		maxRequestSize:  1 << 20,
		partitioner:     DefaultPartitioner(),
		metadataMaxAge:  5 * time.Minute,
		idempotent:      true,

		transactionTimeout: 60 * time.Second,
	}
}

// Retry describes a batch that failed with a retriable error and will be
// sent again after the retry backoff: what OnRetry reports.
type Retry struct {
	// Topic is the batch's topic.
	Topic string
	// Partition is the batch's partition in the topic.
	Partition int32
	// Records counts the batch's records.
	Records int
	// Attempt counts the attempts so far, the failed one included.
	Attempt int
	// Err is why the attempt failed.
	Err error
}

// OnRetry calls fn each time a batch failed with a retriable error and
// will be sent again, as Kafka's producer logs "retrying (N attempts
// left)": a program can tell its user why records wait. fn runs on the
// producer's goroutines and must return quickly; it must not call the
// producer. Default: nothing.
func OnRetry(fn func(Retry)) Option { return optionFunc(func(c *config) { c.onRetry = fn }) }

// maxIdempotentInFlight is the most batches per partition an idempotent
// producer may have in flight: the leader remembers five per producer.
const maxIdempotentInFlight = 5

// Acks sets how many replicas must have a batch before the leader answers
// (acks): kafka.AcksAll (-1, the default) waits for every in-sync
// replica, kafka.AcksLeader (1) for the leader's log, and
// kafka.AcksNone (0) for nothing — the producer reports success, with
// offset -1, once the request has been handed over, and never learns what
// became of it.
func Acks(acks kafka.Acks) Option {
	return optionFunc(func(c *config) { c.acks = acks })
}

// Linger sets how long a batch waits for more records before it is sent
// when it is not full (linger.ms). The default is 5ms, as in Kafka 4; zero
// sends a batch as soon as the sender is free to.
func Linger(d time.Duration) Option { return optionFunc(func(c *config) { c.linger = d }) }

// BatchSize sets the size in bytes, uncompressed, at which a partition's
// batch is closed and sent without waiting for Linger (batch.size). The
// default is 16384. A record larger than this gets a batch of its own.
func BatchSize(bytes int) Option { return optionFunc(func(c *config) { c.batchSize = bytes }) }

// BufferMemory sets the bytes that batches waiting to be sent or
// acknowledged may hold (buffer.memory). Each batch holds BatchSize of it,
// or its one record's size when larger, until its records' promises have
// run. When it is used up, Produce blocks for up to MaxBlock. The default
// is 32 MiB; it cannot be below BatchSize.
func BufferMemory(bytes int64) Option { return optionFunc(func(c *config) { c.bufferMemory = bytes }) }

// MaxBlock sets how long Produce may block (max.block.ms): waiting for
// buffer memory, or for the first metadata of a topic. When it passes,
// the record fails with ErrBufferFull, or for a topic that does not exist
// with kafka.ErrUnknownTopicOrPartition. Zero never blocks: a full
// buffer fails the record at once. The default is 60s. The context given
// to Produce can end the wait sooner.
func MaxBlock(d time.Duration) Option { return optionFunc(func(c *config) { c.maxBlock = d }) }

// Retries sets how many times a batch that failed with a retriable error
// (see IsRetriable) is sent again (retries). The default is math.MaxInt32:
// in effect DeliveryTimeout bounds the retries. Zero never retries.
func Retries(n int) Option { return optionFunc(func(c *config) { c.retries = n }) }

// RetryBackoff sets how long a batch waits before it is sent again after
// a retriable error (retry.backoff.ms). The default is 100ms.
func RetryBackoff(d time.Duration) Option { return optionFunc(func(c *config) { c.retryBackoff = d }) }

// DeliveryTimeout bounds the time from a batch's first record to the
// answer that settles it, lingering and retries included
// (delivery.timeout.ms). A batch still unacknowledged when it passes fails
// with ErrDeliveryTimeout. The default is 120s. It must be at least
// Linger plus RequestTimeout; when it is not given and those two add up
// to more, it is raised to their sum, as in Kafka.
func DeliveryTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.deliveryTimeout, c.deliveryTimeoutSet = d, true })
}

// RequestTimeout bounds how long the producer waits for the answer to one
// produce or metadata request (request.timeout.ms); it is also the timeout
// the request asks the leader to keep for acks=all. A request that times
// out fails with kafka.ErrRequestTimedOut, which is retriable. The
// default is 30s.
func RequestTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.requestTimeout = d })
}

// MaxInFlight sets how many produce requests may await their answers at
// once (max.in.flight.requests.per.connection). The default is 5. Without
// idempotence a partition never has more than one batch in flight,
// whatever this is (see the package doc on ordering); an idempotent
// producer has up to this many per partition, and it may be at most 5.
func MaxInFlight(n int) Option {
	return optionFunc(func(c *config) { c.maxInFlight = n })
}

// Idempotent turns idempotence on or off (enable.idempotence). It is on by
// default, as in Kafka 3+: the producer gets a producer id and numbers its
// batches per partition, and the leader drops a retried batch it already
// has, so a retry never writes a record twice and never reorders records.
// It needs acks=all, Retries above 0 and MaxInFlight at most 5, and a
// client that implements transport.ProducerIDClient (a *partlog.Node does).
// Asked for with Idempotent(true), a conflicting option is an error, as in
// Kafka; left at its default, conflicting options or a client without
// producer ids turn it off.
func Idempotent(on bool) Option {
	return optionFunc(func(c *config) { c.idempotent, c.idempotentSet = on, true })
}

// Compression sets the codec for the records of each batch
// (compression.type): record.None (the default), record.Gzip,
// record.Snappy, record.LZ4 or record.Zstd.
func Compression(codec record.Compression) Option {
	return optionFunc(func(c *config) { c.compression = codec })
}

// MaxRequestSize sets the largest produce request, in bytes
// (max.request.size). A record that alone, in a batch of its own, would be
// larger fails with ErrRecordTooLarge without being sent. The default is
// 1 MiB.
func MaxRequestSize(bytes int) Option {
	return optionFunc(func(c *config) { c.maxRequestSize = bytes })
}

// RecordPartitioner sets how records without an explicit partition are
// spread over a topic's partitions (partitioner.class). The default is
// DefaultPartitioner: the key's hash for keyed records, round-robin for
// the others. (The name is franz-go's; Partitioner is the interface.)
func RecordPartitioner(p Partitioner) Option {
	return optionFunc(func(c *config) { c.partitioner = p })
}

// MetadataMaxAge sets how often the producer refreshes the metadata of the
// topics it writes to even when nothing failed (metadata.max.age.ms), so
// that it sees partitions added to them. The default is 5 minutes.
func MetadataMaxAge(d time.Duration) Option {
	return optionFunc(func(c *config) { c.metadataMaxAge = d })
}

// TransactionalID makes the producer transactional (transactional.id):
// its records are written in transactions (BeginTransaction,
// CommitTransaction, AbortTransaction), and a new producer with the same
// id fences this one, aborting what it left open. A transactional
// producer is idempotent — Idempotent(false) conflicts with it, as do
// the options Idempotent needs otherwise — and needs a client that
// implements transport.TxnClient (a node's Client does). New finds the
// id's coordinator and gets a producer id from it, waiting up to MaxBlock.
// Default: none, no transactions.
func TransactionalID(id string) Option {
	return optionFunc(func(c *config) { c.transactionalID = id })
}

// TransactionTimeout sets how long a transaction may stay open before its
// coordinator aborts it (transaction.timeout.ms). The default is 60s; the
// node refuses one above its transaction.max.timeout.ms.
func TransactionTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.transactionTimeout = d })
}

// validate checks the configuration and fills in what depends on other
// values. Errors name the option and its Kafka key.
func (c *config) validate() error {
	switch {
	case c.acks != kafka.AcksAll && c.acks != kafka.AcksLeader && c.acks != kafka.AcksNone:
		return fmt.Errorf("producer: Acks (acks) %d is not AcksAll (-1), AcksNone (0) or AcksLeader (1)", c.acks)
	case c.linger < 0:
		return fmt.Errorf("producer: Linger (linger.ms) %v is negative", c.linger)
	case c.batchSize < 0 || c.batchSize > math.MaxInt32:
		return fmt.Errorf("producer: BatchSize (batch.size) %d is outside [0, %d]", c.batchSize, math.MaxInt32)
	case c.bufferMemory <= 0:
		return fmt.Errorf("producer: BufferMemory (buffer.memory) %d is not positive", c.bufferMemory)
	case c.bufferMemory < int64(c.batchSize):
		return fmt.Errorf("producer: BufferMemory (buffer.memory) %d is below BatchSize (batch.size) %d", c.bufferMemory, c.batchSize)
	case c.maxBlock < 0:
		return fmt.Errorf("producer: MaxBlock (max.block.ms) %v is negative", c.maxBlock)
	case c.retries < 0:
		return fmt.Errorf("producer: Retries (retries) %d is negative", c.retries)
	case c.retryBackoff < 0:
		return fmt.Errorf("producer: RetryBackoff (retry.backoff.ms) %v is negative", c.retryBackoff)
	case c.requestTimeout <= 0:
		return fmt.Errorf("producer: RequestTimeout (request.timeout.ms) %v is not positive", c.requestTimeout)
	case c.deliveryTimeout <= 0:
		return fmt.Errorf("producer: DeliveryTimeout (delivery.timeout.ms) %v is not positive", c.deliveryTimeout)
	case c.maxInFlight < 1:
		return fmt.Errorf("producer: MaxInFlight (max.in.flight.requests.per.connection) %d is below 1", c.maxInFlight)
	case c.compression < record.None || c.compression > record.Zstd:
		return fmt.Errorf("producer: Compression (compression.type) %d is not a known codec", c.compression)
	case c.maxRequestSize <= record.HeaderSize:
		return fmt.Errorf("producer: MaxRequestSize (max.request.size) %d does not exceed a batch header (%d bytes)", c.maxRequestSize, record.HeaderSize)
	case c.partitioner == nil:
		return fmt.Errorf("producer: RecordPartitioner (partitioner.class) is nil")
	case c.metadataMaxAge <= 0:
		return fmt.Errorf("producer: MetadataMaxAge (metadata.max.age.ms) %v is not positive", c.metadataMaxAge)
	}
	if c.transactionalID != "" {
		switch {
		case c.transactionTimeout <= 0:
			return fmt.Errorf("producer: TransactionTimeout (transaction.timeout.ms) %v is not positive", c.transactionTimeout)
		case c.idempotentSet && !c.idempotent:
			return fmt.Errorf("producer: TransactionalID (transactional.id) needs Idempotent (enable.idempotence); Idempotent(false) was given")
		}
		c.idempotent, c.idempotentSet = true, true // conflicts are errors below
	}
	if c.idempotent {
		var conflict string
		switch {
		case c.acks != kafka.AcksAll:
			conflict = fmt.Sprintf("Acks (acks) %d; it needs AcksAll (-1)", c.acks)
		case c.retries == 0:
			conflict = "Retries (retries) 0; it needs at least 1"
		case c.maxInFlight > maxIdempotentInFlight:
			conflict = fmt.Sprintf("MaxInFlight (max.in.flight.requests.per.connection) %d; it needs at most %d", c.maxInFlight, maxIdempotentInFlight)
		}
		switch {
		case conflict != "" && c.idempotentSet:
			return fmt.Errorf("producer: Idempotent (enable.idempotence) conflicts with %s", conflict)
		case conflict != "":
			c.idempotent = false // only the default: the explicit options win, as in Kafka 3.2+
		}
	}
	if least := c.linger + c.requestTimeout; c.deliveryTimeout < least {
		if c.deliveryTimeoutSet {
			return fmt.Errorf("producer: DeliveryTimeout (delivery.timeout.ms) %v is below Linger plus RequestTimeout (%v)", c.deliveryTimeout, least)
		}
		c.deliveryTimeout = least
	}
	return nil
}
