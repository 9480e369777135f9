package consumer

import (
	"errors"
	"fmt"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
)

// An Option configures a Consumer; pass them to New. Each knob's
// documentation gives its default and the Kafka setting it stands for.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// OffsetReset is the policy for a partition without a valid position:
// Kafka's auto.offset.reset.
type OffsetReset int8

// The reset policies. The zero value is Latest, Kafka's default.
const (
	// Latest starts at the end of the partition: the consumer sees only
	// records produced after it has looked the end up.
	Latest OffsetReset = iota
	// Earliest starts at the log start offset: the oldest record kept.
	Earliest
	// None starts nowhere: Poll reports the partition's *FetchError,
	// matching ErrNoOffset or kafka.ErrOffsetOutOfRange, and the
	// partition waits for a Seek.
	None
)

// String returns the policy as auto.offset.reset spells it.
func (r OffsetReset) String() string {
	switch r {
	case Latest:
		return "latest"
	case Earliest:
		return "earliest"
	case None:
		return "none"
	}
	return fmt.Sprintf("OffsetReset(%d)", int8(r))
}

// IsolationLevel says which records the consumer reads: Kafka's
// isolation.level.
type IsolationLevel = kafka.IsolationLevel

// The isolation levels.
const (
	// ReadUncommitted reads every record below the high watermark.
	ReadUncommitted = kafka.ReadUncommitted
	// ReadCommitted reads below the last stable offset only, and leaves
	// out the records of aborted transactions.
	ReadCommitted = kafka.ReadCommitted
)

// CRCCheck says whether the consumer verifies each batch's CRC-32C.
type CRCCheck = record.CRCCheck

// The CRC checks.
const (
	// VerifyCRC checks every batch's CRC (check.crcs=true).
	VerifyCRC = record.VerifyCRC
	// SkipCRC trusts the CRCs (check.crcs=false); batches are still
	// checked for sizes and structure.
	SkipCRC = record.SkipCRC
)

// config is what the options set.
type config struct {
	// shareOnly says an option of NewShare only was given.
	shareOnly bool

	topics      []string
	assign      []kafka.TopicPartition
	startAt     map[kafka.TopicPartition]int64
	subscribing bool
	assigning   bool

	maxPollRecords         int
	fetchMaxBytes          int32
	maxPartitionFetchBytes int32
	fetchMinBytes          int32
	fetchMaxWait           time.Duration
	reset                  OffsetReset
	isolation              IsolationLevel
	checkCRCs              CRCCheck
	buffers                BufferPolicy
	metadataMaxAge         time.Duration
	retryBackoff           time.Duration
	retryBackoffMax        time.Duration
	retryTimeout           time.Duration

	grp groupConfig
}

func defaultConfig() config {
	return config{
		startAt:                map[kafka.TopicPartition]int64{},
		maxPollRecords:         500,
		fetchMaxBytes:          50 << 20,
		maxPartitionFetchBytes: 1 << 20,
		fetchMinBytes:          1,
		fetchMaxWait:           500 * time.Millisecond,
		reset:                  Latest,
		isolation:              ReadUncommitted,
		checkCRCs:              VerifyCRC,
		metadataMaxAge:         5 * time.Minute,
		retryBackoff:           100 * time.Millisecond,
		retryBackoffMax:        time.Second,
		retryTimeout:           time.Minute,
		grp:                    defaultGroupConfig(),
	}
}

// validate checks the options, naming the one at fault.
func (c *config) validate() error {
	switch {
	case c.subscribing && c.assigning:
		return errors.New("consumer: Topics and Partitions both given: subscribe or assign, not both")
	case !c.subscribing && !c.assigning:
		return errors.New("consumer: neither Topics nor Partitions given: nothing to consume")
	case c.maxPollRecords <= 0:
		return fmt.Errorf("consumer: MaxPollRecords %d is not positive", c.maxPollRecords)
	case c.fetchMaxBytes <= 0:
		return fmt.Errorf("consumer: FetchMaxBytes %d is not positive", c.fetchMaxBytes)
	case c.maxPartitionFetchBytes <= 0:
		return fmt.Errorf("consumer: MaxPartitionFetchBytes %d is not positive", c.maxPartitionFetchBytes)
	case c.fetchMinBytes < 0:
		return fmt.Errorf("consumer: FetchMinBytes %d is negative", c.fetchMinBytes)
	case c.fetchMaxWait < 0:
		return fmt.Errorf("consumer: FetchMaxWait %v is negative", c.fetchMaxWait)
	case c.reset != Latest && c.reset != Earliest && c.reset != None:
		return fmt.Errorf("consumer: AutoOffsetReset %v is not Latest, Earliest or None", c.reset)
	case c.isolation != ReadUncommitted && c.isolation != ReadCommitted:
		return fmt.Errorf("consumer: Isolation %d is not an isolation level", c.isolation)
	case c.metadataMaxAge <= 0:
		return fmt.Errorf("consumer: MetadataMaxAge %v is not positive", c.metadataMaxAge)
	case c.retryBackoff <= 0 || c.retryBackoffMax < c.retryBackoff:
		return fmt.Errorf("consumer: RetryBackoff %v must be positive and at most RetryBackoffMax %v", c.retryBackoff, c.retryBackoffMax)
	case c.retryTimeout <= 0:
		return fmt.Errorf("consumer: RetryTimeout %v is not positive", c.retryTimeout)
	}
	if err := c.validateGroup(); err != nil {
		return err
	}
	for _, t := range c.topics {
		if t == "" {
			return errors.New("consumer: Topics names an empty topic")
		}
	}
	for _, tp := range c.assign {
		if tp.Topic == "" || tp.Partition < 0 {
			return fmt.Errorf("consumer: Partitions names no partition: %v", tp)
		}
		if off, ok := c.startAt[tp]; ok && off < 0 {
			return fmt.Errorf("consumer: PartitionsAt gives %v the negative offset %d", tp, off)
		}
	}
	return nil
}

// Topics subscribes to every partition of the named topics, as Kafka's
// subscribe without a group: the partitions come from the cluster's
// metadata, which is read again every MetadataMaxAge so that partitions
// added later are consumed too. A topic that does not exist yet is looked
// for again with RetryBackoff until it does. Each partition starts as
// AutoOffsetReset says.
//
// A consumer either subscribes (Topics) or is assigned partitions
// (Partitions, PartitionsAt). With Group, the subscription is shared
// between the group's members, and the partitions come from the group's
// assignment rather than from metadata.
func Topics(names ...string) Option {
	return optionFunc(func(c *config) {
		c.subscribing = true
		c.topics = append(c.topics, names...)
	})
}

// Partitions assigns the consumer exactly these partitions, as Kafka's
// assign. Each starts as AutoOffsetReset says, unless Seek moves it before
// the first Poll.
func Partitions(tps ...kafka.TopicPartition) Option {
	return optionFunc(func(c *config) {
		c.assigning = true
		c.assign = append(c.assign, tps...)
	})
}

// PartitionsAt assigns the consumer the partitions in offsets, each
// starting at its offset, as Kafka's assign followed by seek. An offset
// outside the partition is reset as AutoOffsetReset says.
func PartitionsAt(offsets map[kafka.TopicPartition]int64) Option {
	return optionFunc(func(c *config) {
		c.assigning = true
		for tp, off := range offsets {
			c.assign = append(c.assign, tp)
			c.startAt[tp] = off
		}
	})
}

// MaxPollRecords bounds the records one Poll returns: max.poll.records,
// default 500.
func MaxPollRecords(n int) Option {
	return optionFunc(func(c *config) { c.maxPollRecords = n })
}

// FetchMaxBytes bounds the bytes of one fetch's answer, and the bytes the
// consumer buffers ahead of Poll: fetch.max.bytes, default 50 MiB. The
// first batch of a fetch is returned even when it is larger.
func FetchMaxBytes(n int32) Option {
	return optionFunc(func(c *config) { c.fetchMaxBytes = n })
}

// MaxPartitionFetchBytes bounds the bytes one fetch returns for one
// partition: max.partition.fetch.bytes, default 1 MiB. The first batch is
// returned even when it is larger.
func MaxPartitionFetchBytes(n int32) Option {
	return optionFunc(func(c *config) { c.maxPartitionFetchBytes = n })
}

// FetchMinBytes is how many bytes a fetch waits for, up to FetchMaxWait,
// before the node answers: fetch.min.bytes, default 1 (answer as soon as
// there is a record).
func FetchMinBytes(n int32) Option {
	return optionFunc(func(c *config) { c.fetchMinBytes = n })
}

// FetchMaxWait is how long the node holds a fetch that has less than
// FetchMinBytes to answer: fetch.max.wait.ms, default 500ms.
func FetchMaxWait(d time.Duration) Option {
	return optionFunc(func(c *config) { c.fetchMaxWait = d })
}

// AutoOffsetReset sets the policy for a partition without a position, or
// whose position is out of range: auto.offset.reset, default Latest.
func AutoOffsetReset(r OffsetReset) Option {
	return optionFunc(func(c *config) { c.reset = r })
}

// Isolation sets which records the consumer reads: isolation.level,
// default ReadUncommitted. ReadCommitted fetches read only up to the last
// stable offset — below it every transaction has committed or aborted —
// and leave out the records of the transactions that aborted; ListOffsets
// for the latest offset answers the last stable offset too, so Latest
// starts there.
func Isolation(l IsolationLevel) Option {
	return optionFunc(func(c *config) { c.isolation = l })
}

// CheckCRCs sets whether every batch's CRC is verified: check.crcs,
// default VerifyCRC. A batch that fails is reported as a *FetchError
// matching record.ErrCorrupt.
func CheckCRCs(check CRCCheck) Option {
	return optionFunc(func(c *config) { c.checkCRCs = check })
}

// MetadataMaxAge is how often a subscribing consumer reads the cluster's
// metadata to find new partitions: metadata.max.age.ms, default 5 minutes.
func MetadataMaxAge(d time.Duration) Option {
	return optionFunc(func(c *config) { c.metadataMaxAge = d })
}

// RetryBackoff is how long the consumer waits before retrying a partition
// after a retriable error, doubling on each failure in a row up to
// RetryBackoffMax: retry.backoff.ms, default 100ms.
func RetryBackoff(d time.Duration) Option {
	return optionFunc(func(c *config) { c.retryBackoff = d })
}

// RetryBackoffMax bounds the backoff between retries: retry.backoff.max.ms,
// default 1s.
func RetryBackoffMax(d time.Duration) Option {
	return optionFunc(func(c *config) { c.retryBackoffMax = d })
}

// RetryTimeout is how long a retriable error may last before Poll reports
// it, as Kafka's default.api.timeout.ms bounds its blocking calls; default
// one minute. The consumer keeps retrying after reporting it.
func RetryTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.retryTimeout = d })
}
