package txn

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/partlog/partlog/kafka"
)

// Coordinator is the transaction coordinator of the partitions of
// __transaction_state that a node leads, written as a deterministic state
// machine: it starts no goroutine, reads no clock and writes nothing. The
// caller passes requests, time and the outcomes of effects in, and carries
// out the effects it hands back in Ready. The package documentation lists
// the caller's duties.
//
// A Coordinator is not safe for concurrent use: one loop drives it.
type Coordinator struct {
	opts Options
	ids  ProducerIDAllocator

	partitions map[int32]*statePartition // the loaded partitions, by index
	lastID     uint64                    // the last effect id handed out
	appends    map[uint64]*appendFlight  // appends handed out and not yet reported
	markers    map[uint64]*markerFlight  // marker writes handed out and not yet reported
	ready      Ready                     // effects for the next Ready
}

// statePartition is a loaded partition of __transaction_state.
type statePartition struct {
	index int32
	// coordinatorEpoch is the partition's leader epoch when it was
	// loaded: every marker carries it.
	coordinatorEpoch int32
	txns             map[string]*txnMeta
}

// txnMeta is a transactional id the coordinator holds.
type txnMeta struct {
	id        string
	partition *statePartition
	cur       txnState // as of the last durable record
	// durable is false for an id InitProducerId just created, until its
	// first record is durable.
	durable bool
	// pending is the state change whose record is being appended (Kafka's
	// pendingState), or nil. One at a time.
	pending *transit
	// phase is the writing of markers, from the moment a Prepare record is
	// durable until the Complete record is, or nil.
	phase *markerPhase
}

// busy reports whether the transaction is changing state: a request for
// it gets kafka.ErrConcurrentTransactions.
func (m *txnMeta) busy() bool { return m.pending != nil || m.phase != nil }

// transitKind says what started a state change, and so what follows once
// its record is durable or has failed.
type transitKind uint8

const (
	kindInit     transitKind = iota // InitProducerId: answer the producer id and epoch
	kindAdd                         // AddPartitionsToTxn or AddOffsetsToTxn: answer
	kindEnd                         // EndTxn: answer, then write markers
	kindFence                       // InitProducerId fencing an Ongoing transaction: abort it, answer CONCURRENT_TRANSACTIONS
	kindTimeout                     // the transaction timed out: abort it
	kindComplete                    // every marker is written
	kindExpire                      // the transactional id expired: a tombstone
)

// transit is a state change waiting for its record to be durable (Kafka's
// TxnTransitMetadata).
type transit struct {
	kind     transitKind
	next     txnState
	appendID uint64
	reply    *reply // the request to answer, or nil
}

// appendFlight is an Append handed out and not yet reported.
type appendFlight struct {
	partition *statePartition
	txns      []*txnMeta // the ids whose records it holds
}

// New returns a coordinator that has loaded no partition (see Load). ids
// hands out the producer ids of new transactional ids and of producers
// whose epoch ran out.
func New(ids ProducerIDAllocator, opts Options) (*Coordinator, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Coordinator{
		opts:       opts,
		ids:        ids,
		partitions: map[int32]*statePartition{},
		appends:    map[uint64]*appendFlight{},
		markers:    map[uint64]*markerFlight{},
	}, nil
}

// Ready is what the coordinator needs done: records to append to
// __transaction_state, markers to write, requests to answer. The caller
// does all of it (in any order: none depends on another) and reports the
// outcome of each Append and MarkerWrite by its ID.
type Ready struct {
	// Appends are records to append to partitions of __transaction_state.
	Appends []Append
	// Markers are transaction markers to write (WriteTxnMarkers).
	Markers []MarkerWrite
	// Answers answer requests.
	Answers []Answer
}

// IsEmpty reports whether rd asks for nothing.
func (rd Ready) IsEmpty() bool {
	return len(rd.Appends) == 0 && len(rd.Markers) == 0 && len(rd.Answers) == 0
}

// Append is records to append to one partition of __transaction_state, as
// one batch (uncompressed, acks=all, as Kafka writes them). A state change
// takes effect only once its record is durable: the caller reports the
// outcome with AppendDone.
type Append struct {
	// ID names the append to AppendDone.
	ID uint64
	// Partition is the partition of __transaction_state to append to.
	Partition int32
	// CoordinatorEpoch is the partition's leader epoch the records were
	// made in: append them only while this node still leads the partition
	// in that epoch, and otherwise fail them with
	// kafka.ErrNotLeaderOrFollower.
	CoordinatorEpoch int32
	// TimestampMs is the records' timestamp.
	TimestampMs int64
	// Records are the records, in order. The caller owns them.
	Records []Record
}

// Record is a record of __transaction_state: a key (EncodeKey) and a value
// (Value.Encode), or a nil Value for a tombstone.
type Record struct {
	Key, Value []byte
}

// HasReady reports whether Ready has anything to hand out.
func (c *Coordinator) HasReady() bool { return !c.ready.IsEmpty() }

// Ready hands out the effects produced since the last call; the
// coordinator keeps no reference to them. There is no Advance: the caller
// reports each effect's outcome by its ID.
func (c *Coordinator) Ready() Ready {
	rd := c.ready
	c.ready = Ready{}
	return rd
}

// AppendDone reports the outcome of the Append named id: nil once its
// records are durable, or the error that failed it. Report an error only
// if the records will never become durable; when unsure (a timeout),
// Unload the partition and Load it again from its log instead. An append
// failed with a Kafka error is answered to the producer as Kafka's
// coordinator answers it: kafka.ErrCoordinatorNotAvailable for
// kafka.ErrNotEnoughReplicas, ErrNotEnoughReplicasAfter,
// ErrUnknownTopicOrPartition and ErrRequestTimedOut (and for an error that
// is not a Kafka error), kafka.ErrNotCoordinator for
// ErrNotLeaderOrFollower and ErrKafkaStorage, ErrUnknownServerError for
// ErrMessageTooLarge and ErrRecordListTooLarge. The coordinator then
// forgets the change, except the Complete record of a transaction, which it
// appends again at the next Tick. Reports for unknown ids (an unloaded
// partition's) are ignored. nowMs is the caller's clock, in ms.
func (c *Coordinator) AppendDone(id uint64, err error, nowMs int64) {
	f, ok := c.appends[id]
	if !ok {
		return
	}
	delete(c.appends, id)
	for _, m := range f.txns {
		t := m.pending
		if t == nil || t.appendID != id {
			continue
		}
		m.pending = nil
		if err != nil {
			c.appendFailed(m, t, err)
		} else {
			c.applied(m, t, nowMs)
		}
	}
}

// applied installs a state change whose record is durable and does what
// follows it.
func (c *Coordinator) applied(m *txnMeta, t *transit, nowMs int64) {
	if t.kind == kindExpire {
		delete(m.partition.txns, m.id)
		return
	}
	m.cur, m.durable = t.next, true
	switch t.kind {
	case kindInit:
		c.answer(t.reply, nil, m.cur.producerID, m.cur.epoch)
	case kindAdd:
		c.answer(t.reply, nil, noProducerID, noProducerEpoch)
	case kindEnd:
		// The producer id and epoch the producer has once the transaction
		// completes (EndTxn version 5 answers them).
		if m.cur.nextProducerID != noProducerID {
			c.answer(t.reply, nil, m.cur.nextProducerID, 0)
		} else {
			c.answer(t.reply, nil, m.cur.producerID, m.cur.epoch)
		}
		c.startMarkers(m, nowMs)
	case kindFence:
		c.answer(t.reply, fmt.Errorf("%w: aborting the ongoing transaction of %q", kafka.ErrConcurrentTransactions, m.id), noProducerID, noProducerEpoch)
		c.startMarkers(m, nowMs)
	case kindTimeout:
		c.startMarkers(m, nowMs)
	case kindComplete:
		m.phase = nil
	}
}

// appendFailed forgets a state change whose record failed.
func (c *Coordinator) appendFailed(m *txnMeta, t *transit, err error) {
	switch t.kind {
	case kindInit:
		if !m.durable { // nothing of it was ever written: forget it
			delete(m.partition.txns, m.id)
		}
	case kindComplete:
		m.phase.completing = false // appended again at the next Tick
		return
	}
	if t.reply != nil {
		c.answer(t.reply, appendError(err), noProducerID, noProducerEpoch)
	}
}

// appendError returns the error a producer gets for a failed append, as
// Kafka's TransactionStateManager maps it.
func appendError(err error) error {
	var to *kafka.Error
	switch {
	case errors.Is(err, kafka.ErrUnknownTopicOrPartition), errors.Is(err, kafka.ErrNotEnoughReplicas),
		errors.Is(err, kafka.ErrNotEnoughReplicasAfter), errors.Is(err, kafka.ErrRequestTimedOut):
		to = kafka.ErrCoordinatorNotAvailable
	case errors.Is(err, kafka.ErrNotLeaderOrFollower), errors.Is(err, kafka.ErrKafkaStorage):
		to = kafka.ErrNotCoordinator
	case errors.Is(err, kafka.ErrMessageTooLarge), errors.Is(err, kafka.ErrRecordListTooLarge):
		to = kafka.ErrUnknownServerError
	case errors.As(err, &to):
		return err
	default:
		to = kafka.ErrCoordinatorNotAvailable
	}
	return fmt.Errorf("%w: appending to %s: %v", to, StateTopic, err)
}

// begin starts a state change of m to next: it hands out the record and
// waits for it to be durable. r, when not nil, is answered then.
func (c *Coordinator) begin(m *txnMeta, kind transitKind, next txnState, r *reply, nowMs int64) {
	id := c.nextID()
	m.pending = &transit{kind: kind, next: next, appendID: id, reply: r}
	c.appends[id] = &appendFlight{partition: m.partition, txns: []*txnMeta{m}}
	v := next.value()
	c.ready.Appends = append(c.ready.Appends, Append{
		ID:               id,
		Partition:        m.partition.index,
		CoordinatorEpoch: m.partition.coordinatorEpoch,
		TimestampMs:      nowMs,
		Records:          []Record{{Key: EncodeKey(m.id), Value: v.Encode()}},
	})
	if c.opts.markersBeforeDurable && next.state.prepared() {
		c.ready.Markers = append(c.ready.Markers, c.markerWrite(c.nextID(), m, &next, next.partitions))
	}
}

// nextID returns a new effect id.
func (c *Coordinator) nextID() uint64 {
	c.lastID++
	return c.lastID
}

// lookup returns the loaded partition that holds id and id's state there
// (nil when it has none), or kafka.ErrNotCoordinator.
func (c *Coordinator) lookup(id string) (*statePartition, *txnMeta, error) {
	i := PartitionFor(id, c.opts.StatePartitions)
	p := c.partitions[i]
	if p == nil {
		return nil, nil, fmt.Errorf("%w: %s-%d, which holds %q, is not loaded here", kafka.ErrNotCoordinator, StateTopic, i, id)
	}
	return p, p.txns[id], nil
}

// Status is what the coordinator knows of a transactional id (Kafka's
// DescribeTransactions).
type Status struct {
	// TransactionalID is the transactional id.
	TransactionalID string
	// ProducerID is the producer id.
	ProducerID int64
	// ProducerEpoch is the producer's epoch.
	ProducerEpoch int16
	// State is the transaction's state as last written.
	State State
	// Changing says a state change or the writing of markers is under
	// way: requests for the id get kafka.ErrConcurrentTransactions.
	Changing bool
	// TransactionTimeoutMs is the producer's transaction.timeout.ms.
	TransactionTimeoutMs int32
	// StartTimestampMs is when the transaction began, or -1.
	StartTimestampMs int64
	// LastUpdateTimestampMs is when the state last changed.
	LastUpdateTimestampMs int64
	// Partitions are the transaction's partitions, sorted.
	Partitions []kafka.TopicPartition
	// TransactionVersion is what the client spoke at the last change.
	TransactionVersion TransactionVersion
	// CoordinatorEpoch is the epoch of the partition of
	// __transaction_state that holds the id.
	CoordinatorEpoch int32
}

// Describe returns what the coordinator knows of transactionalID, or
// kafka.ErrNotCoordinator when its partition is not loaded here, or
// kafka.ErrTransactionalIDNotFound.
func (c *Coordinator) Describe(transactionalID string) (Status, error) {
	p, m, err := c.lookup(transactionalID)
	if err != nil {
		return Status{}, err
	}
	if m == nil || !m.durable {
		return Status{}, fmt.Errorf("%w: %q", kafka.ErrTransactionalIDNotFound, transactionalID)
	}
	return c.status(p, m), nil
}

// List returns what the coordinator knows of every transactional id of
// the partitions loaded here, sorted by id (Kafka's ListTransactions).
func (c *Coordinator) List() []Status {
	var out []Status
	for _, p := range c.partitions {
		for _, m := range p.txns {
			if m.durable {
				out = append(out, c.status(p, m))
			}
		}
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.TransactionalID, b.TransactionalID) })
	return out
}

// status is the Status of m, in partition p.
func (c *Coordinator) status(p *statePartition, m *txnMeta) Status {
	s := &m.cur
	return Status{
		TransactionalID:       m.id,
		ProducerID:            s.producerID,
		ProducerEpoch:         s.epoch,
		State:                 s.state,
		Changing:              m.busy(),
		TransactionTimeoutMs:  s.timeoutMs,
		StartTimestampMs:      s.startMs,
		LastUpdateTimestampMs: s.updateMs,
		Partitions:            slices.Clone(s.partitions),
		TransactionVersion:    s.tv,
		CoordinatorEpoch:      p.coordinatorEpoch,
	}
}
