package txn

import (
	"errors"
	"fmt"
	"math"

	"github.com/partlog/partlog/kafka"
)

// The requests a producer sends its transaction coordinator. Each carries
// an ID the caller chooses; its Answer, in a later Ready (the same call's,
// when it is answered at once), carries the ID back. Version is the
// request's version in Kafka's protocol: versions that do not know
// kafka.ErrProducerFenced get kafka.ErrInvalidProducerEpoch instead, as
// Kafka answers them (InitProducerId below 4; AddPartitionsToTxn,
// AddOffsetsToTxn and EndTxn below 2).

// InitProducerIDRequest is InitProducerId with a transactional id: it
// binds the id to a producer id and a new epoch, which fences every older
// instance of the producer and aborts its open transaction.
type InitProducerIDRequest struct {
	// ID names the request to its Answer.
	ID uint64
	// Version is the request's version in Kafka's protocol.
	Version int16
	// TransactionalID is the producer's transactional.id: not empty (an
	// idempotent producer's InitProducerId is the caller's), and at most
	// 32767 bytes, as Kafka's strings.
	TransactionalID string
	// TransactionTimeoutMs is the producer's transaction.timeout.ms: it
	// must be positive and at most Options.TransactionMaxTimeout.
	TransactionTimeoutMs int32
	// ProducerID and ProducerEpoch are the id and epoch the producer has
	// had so far, to resume after an error (KIP-360, version 3 and up),
	// or -1 and -1 for a producer that is starting.
	ProducerID int64
	// ProducerEpoch is the epoch that goes with ProducerID, or -1.
	ProducerEpoch int16
}

// AddPartitionsRequest is AddPartitionsToTxn: it adds partitions to the
// producer's transaction, starting the transaction if none is open.
type AddPartitionsRequest struct {
	// ID names the request to its Answer.
	ID uint64
	// Version is the request's version in Kafka's protocol.
	Version int16
	// TransactionalID, ProducerID and ProducerEpoch name the producer.
	TransactionalID string
	// ProducerID is the producer's id.
	ProducerID int64
	// ProducerEpoch is the producer's epoch.
	ProducerEpoch int16
	// Partitions are the partitions to add.
	Partitions []kafka.TopicPartition
	// TransactionVersion is what the client speaks: TV2 when a partition
	// leader adds a partition on behalf of a TV2 producer
	// (AddPartitionsToTxn version 5 from a broker), TV0 otherwise.
	TransactionVersion TransactionVersion
}

// AddOffsetsRequest is AddOffsetsToTxn: it adds the partition of
// __consumer_offsets that holds GroupID to the producer's transaction, so
// that offsets committed in it (TxnOffsetCommit) get its marker.
type AddOffsetsRequest struct {
	// ID names the request to its Answer.
	ID uint64
	// Version is the request's version in Kafka's protocol.
	Version int16
	// TransactionalID names the producer, with ProducerID and
	// ProducerEpoch.
	TransactionalID string
	// ProducerID is the producer's id.
	ProducerID int64
	// ProducerEpoch is the producer's epoch.
	ProducerEpoch int16
	// GroupID is the consumer group whose offsets the transaction commits.
	GroupID string
	// TransactionVersion is what the client speaks, as in
	// AddPartitionsRequest.
	TransactionVersion TransactionVersion
}

// EndTxnRequest is EndTxn: it commits or aborts the producer's
// transaction. Its Answer comes once the outcome is durable (the Prepare
// record), before the markers are written; a retry meanwhile gets
// kafka.ErrConcurrentTransactions, and after them the same outcome.
type EndTxnRequest struct {
	// ID names the request to its Answer.
	ID uint64
	// Version is the request's version in Kafka's protocol.
	Version int16
	// TransactionalID names the producer, with ProducerID and
	// ProducerEpoch.
	TransactionalID string
	// ProducerID is the producer's id.
	ProducerID int64
	// ProducerEpoch is the producer's epoch.
	ProducerEpoch int16
	// Result is Commit or Abort.
	Result Result
	// TransactionVersion is what the client speaks: TV2 (the epoch is
	// bumped at the end of every transaction, KIP-890 part 2) when it
	// sends EndTxn version 5 or later, TV0 otherwise — Kafka's rule.
	TransactionVersion TransactionVersion
}

// Answer answers a request.
type Answer struct {
	// Request is the request's ID.
	Request uint64
	// Err is nil, or a Kafka error (errors.Is with kafka's sentinels).
	Err error
	// ProducerID and ProducerEpoch answer InitProducerId, and EndTxn
	// (version 5 answers them: the id and epoch the producer has once the
	// transaction completes); -1 otherwise and on errors.
	ProducerID int64
	// ProducerEpoch is the epoch that goes with ProducerID, or -1.
	ProducerEpoch int16
}

// api names a request, for its answer.
type api uint8

const (
	apiInitProducerID api = iota
	apiAddPartitions
	apiAddOffsets
	apiEndTxn
)

// reply is what answering a request needs.
type reply struct {
	id      uint64
	api     api
	version int16
}

// knowsProducerFenced reports whether a request's version knows
// PRODUCER_FENCED (KIP-588).
func (r *reply) knowsProducerFenced() bool {
	if r.api == apiInitProducerID {
		return r.version >= 4
	}
	return r.version >= 2
}

// answer queues the answer to r.
func (c *Coordinator) answer(r *reply, err error, producerID int64, epoch int16) {
	if err != nil {
		if errors.Is(err, kafka.ErrProducerFenced) && !r.knowsProducerFenced() {
			err = fmt.Errorf("%w: %v", kafka.ErrInvalidProducerEpoch, err)
		}
		producerID, epoch = noProducerID, noProducerEpoch
	}
	c.ready.Answers = append(c.ready.Answers, Answer{Request: r.id, Err: err, ProducerID: producerID, ProducerEpoch: epoch})
}

// InitProducerID handles InitProducerId for a transactional id (Kafka's
// handleInitProducerId). A new id gets a producer id and epoch 0; a known
// one the next epoch, or a new producer id at epoch 0 when its epoch ran
// out. An open transaction is aborted first, with the epoch bumped to
// fence its producer, and the request answered
// kafka.ErrConcurrentTransactions: the producer retries and then gets the
// epoch after that. nowMs is the caller's clock, in ms.
func (c *Coordinator) InitProducerID(req InitProducerIDRequest, nowMs int64) {
	r := &reply{req.ID, apiInitProducerID, req.Version}
	fail := func(err error) { c.answer(r, err, noProducerID, noProducerEpoch) }
	id, resume := req.TransactionalID, req.ProducerID != noProducerID
	switch {
	case resume != (req.ProducerEpoch != noProducerEpoch):
		fail(fmt.Errorf("%w: producer id %d with epoch %d", kafka.ErrInvalidRequest, req.ProducerID, req.ProducerEpoch))
		return
	case id == "" || len(id) > math.MaxInt16:
		fail(fmt.Errorf("%w: transactional id of %d bytes", kafka.ErrInvalidRequest, len(id)))
		return
	case req.TransactionTimeoutMs <= 0 || int64(req.TransactionTimeoutMs) > c.opts.TransactionMaxTimeout.Milliseconds():
		fail(fmt.Errorf("%w: %d ms, the most is %d", kafka.ErrInvalidTransactionTimeout, req.TransactionTimeoutMs, c.opts.TransactionMaxTimeout.Milliseconds()))
		return
	}
	p, m, err := c.lookup(id)
	if err != nil {
		fail(err)
		return
	}
	if m == nil {
		pid, err := c.ids.NextProducerID()
		if err != nil {
			fail(err)
			return
		}
		m = &txnMeta{id: id, partition: p, cur: txnState{
			producerID: pid, prevProducerID: noProducerID, nextProducerID: noProducerID,
			epoch: noProducerEpoch, lastEpoch: noProducerEpoch, timeoutMs: req.TransactionTimeoutMs,
			state: Empty, startMs: -1, updateMs: nowMs,
		}}
		p.txns[id] = m
	}
	s := &m.cur
	if c.opts.fencePrepared && s.state.prepared() && m.pending == nil {
		m.phase = nil // the broken coordinator forgets the decided outcome
		c.begin(m, kindFence, s.prepared(Abort, s.tv, true, noProducerID, nowMs), r, nowMs)
		return
	}
	switch {
	case m.busy():
		fail(fmt.Errorf("%w: %q is changing state", kafka.ErrConcurrentTransactions, id))
		return
	case resume && s.epoch != noProducerEpoch && req.ProducerID != s.producerID &&
		!(req.ProducerID == s.prevProducerID && exhausted(req.ProducerEpoch)):
		fail(fmt.Errorf("%w: %q has producer id %d, not %d", kafka.ErrProducerFenced, id, s.producerID, req.ProducerID))
		return
	}
	switch s.state {
	case PrepareCommit, PrepareAbort:
		fail(fmt.Errorf("%w: %q is in %s", kafka.ErrConcurrentTransactions, id, s.state))
	case Ongoing:
		c.begin(m, kindFence, s.prepared(Abort, s.tv, true, noProducerID, nowMs), r, nowMs)
	default: // Empty, CompleteCommit, CompleteAbort
		next, err := c.reinitialize(s, resume, req.ProducerEpoch, req.TransactionTimeoutMs, nowMs)
		if err != nil {
			fail(fmt.Errorf("%w (transactional id %q)", err, id))
			return
		}
		c.begin(m, kindInit, next, r, nowMs)
	}
}

// reinitialize returns the state InitProducerId moves s to, when no
// transaction is open (Kafka's prepareIncrementProducerEpoch and
// prepareProducerIdRotation). resume says the producer named its epoch,
// expected.
func (c *Coordinator) reinitialize(s *txnState, resume bool, expected int16, timeoutMs int32, nowMs int64) (txnState, error) {
	switch {
	case exhausted(s.epoch) && (!resume || expected == s.epoch):
		lastEpoch := noProducerEpoch
		if resume {
			lastEpoch = s.epoch
		}
		if c.opts.reuseProducerID {
			return s.reinitialized(s.producerID, 0, lastEpoch, timeoutMs, nowMs), nil
		}
		pid, err := c.ids.NextProducerID()
		if err != nil {
			return txnState{}, err
		}
		return s.reinitialized(pid, 0, lastEpoch, timeoutMs, nowMs), nil
	case !resume:
		return s.reinitialized(s.producerID, s.epoch+1, noProducerEpoch, timeoutMs, nowMs), nil
	case s.epoch == noProducerEpoch || expected == s.epoch:
		return s.reinitialized(s.producerID, s.epoch+1, s.epoch, timeoutMs, nowMs), nil
	case expected == s.lastEpoch:
		// A retry of an InitProducerId that succeeded: answer the same
		// epoch again.
		return s.reinitialized(s.producerID, s.epoch, s.lastEpoch, timeoutMs, nowMs), nil
	}
	return txnState{}, fmt.Errorf("%w: epoch %d is neither the current %d nor the previous %d", kafka.ErrProducerFenced, expected, s.epoch, s.lastEpoch)
}

// AddPartitions handles AddPartitionsToTxn (Kafka's
// handleAddPartitionsToTransaction). nowMs is the caller's clock, in ms.
func (c *Coordinator) AddPartitions(req AddPartitionsRequest, nowMs int64) {
	r := &reply{req.ID, apiAddPartitions, req.Version}
	c.addPartitions(r, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Partitions, req.TransactionVersion, nowMs)
}

// AddOffsets handles AddOffsetsToTxn: it adds the partition of
// __consumer_offsets that holds the group, out of
// Options.OffsetsPartitions. nowMs is the caller's clock, in ms.
func (c *Coordinator) AddOffsets(req AddOffsetsRequest, nowMs int64) {
	r := &reply{req.ID, apiAddOffsets, req.Version}
	tp := kafka.TopicPartition{Topic: kafka.OffsetsTopic, Partition: kafka.CoordinatorPartition(req.GroupID, c.opts.OffsetsPartitions)}
	c.addPartitions(r, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []kafka.TopicPartition{tp}, req.TransactionVersion, nowMs)
}

func (c *Coordinator) addPartitions(r *reply, id string, producerID int64, epoch int16, tps []kafka.TopicPartition, tv TransactionVersion, nowMs int64) {
	if id == "" {
		c.answer(r, fmt.Errorf("%w: empty transactional id", kafka.ErrInvalidRequest), noProducerID, noProducerEpoch)
		return
	}
	m, err := c.producer(id, producerID, epoch)
	switch {
	case err != nil:
	case m.busy() || m.cur.state.prepared():
		err = fmt.Errorf("%w: %q is changing state", kafka.ErrConcurrentTransactions, id)
	case m.cur.state == Ongoing && includesAll(&m.cur, tps):
	default:
		c.begin(m, kindAdd, m.cur.withPartitions(tps, tv, nowMs), r, nowMs)
		return
	}
	c.answer(r, err, noProducerID, noProducerEpoch)
}

// includesAll reports whether every partition of tps is in s.
func includesAll(s *txnState, tps []kafka.TopicPartition) bool {
	for _, tp := range tps {
		if !s.includes(tp) {
			return false
		}
	}
	return true
}

// producer returns id's state when the request's producer id and epoch
// are its current ones, or the error Kafka answers.
func (c *Coordinator) producer(id string, producerID int64, epoch int16) (*txnMeta, error) {
	_, m, err := c.lookup(id)
	switch {
	case err != nil:
		return nil, err
	case m == nil || !m.durable:
		return nil, fmt.Errorf("%w: %q has no producer id", kafka.ErrInvalidProducerIDMapping, id)
	case producerID != m.cur.producerID:
		return nil, c.wrongProducerID(m, producerID, epoch)
	case epoch != m.cur.epoch:
		return nil, fmt.Errorf("%w: %q has epoch %d, not %d", kafka.ErrProducerFenced, id, m.cur.epoch, epoch)
	}
	return m, nil
}

// wrongProducerID returns the error for a request whose producer id is
// not id's: kafka.ErrInvalidProducerIDMapping, or, for the producer id a
// TV2 transaction moves to once it completes (EndTxn answered it),
// kafka.ErrConcurrentTransactions until it does.
func (c *Coordinator) wrongProducerID(m *txnMeta, producerID int64, epoch int16) error {
	if producerID == m.cur.nextProducerID && epoch == 0 {
		return fmt.Errorf("%w: %q moves to producer id %d once its transaction completes", kafka.ErrConcurrentTransactions, m.id, producerID)
	}
	return fmt.Errorf("%w: %q has producer id %d, not %d", kafka.ErrInvalidProducerIDMapping, m.id, m.cur.producerID, producerID)
}

// EndTxn handles EndTxn (Kafka's handleEndTransaction). nowMs is the
// caller's clock, in ms.
//
// Under TV2 a transaction that is not Ongoing answers as Kafka's table
// has it, where a retry is the EndTxn of the transaction that ended (its
// epoch one less than the current, or the exhausted epoch of the previous
// producer id) and a current request carries the current epoch:
//
//	                 Abort            Commit
//	                 retry  current   retry  current
//	Empty            PF     EB        PF     ITS
//	CompleteAbort    NONE   EB        ITS    ITS
//	CompleteCommit   ITS    EB        NONE   ITS
//
// PF is PRODUCER_FENCED, ITS INVALID_TXN_STATE, NONE success, and EB an
// empty abort: the producer's produce requests all failed before one added
// a partition, so the coordinator has no transaction open, and the abort
// succeeds with the next epoch, through PrepareAbort and CompleteAbort with
// no markers to write. A transaction being prepared (PrepareCommit,
// PrepareAbort) answers both kinds CONCURRENT_TRANSACTIONS, so that the
// next transaction's EndTxn, at the epoch this one moved to, waits for it
// to complete. Under TV0 a transaction that is Complete answers a
// repeat of its own outcome with success and anything else with ITS, and
// Empty answers ITS.
func (c *Coordinator) EndTxn(req EndTxnRequest, nowMs int64) {
	r := &reply{req.ID, apiEndTxn, req.Version}
	id := req.TransactionalID
	fail := func(err error) { c.answer(r, err, noProducerID, noProducerEpoch) }
	if id == "" {
		fail(fmt.Errorf("%w: empty transactional id", kafka.ErrInvalidRequest))
		return
	}
	_, m, err := c.lookup(id)
	if err == nil && (m == nil || !m.durable) {
		err = fmt.Errorf("%w: %q has no producer id", kafka.ErrInvalidProducerIDMapping, id)
	}
	var retry bool
	if err == nil {
		retry, err = c.checkEnd(m, &req)
	}
	if err != nil {
		fail(err)
		return
	}
	s := &m.cur
	tv2 := endsInTV2(s, &req)
	switch {
	case s.state == Ongoing, tv2 && !retry && req.Result == Abort && (s.state.completed() || s.state == Empty):
		next := noProducerID
		if s.needsNextProducerID(req.TransactionVersion) {
			if next, err = c.ids.NextProducerID(); err != nil {
				fail(err)
				return
			}
		}
		c.begin(m, kindEnd, s.prepared(req.Result, req.TransactionVersion, false, next, nowMs), r, nowMs)
	case s.state.completed() && retry && resultOf(s.state) == req.Result:
		c.answer(r, nil, s.producerID, s.epoch) // a retry: the outcome stands
	case s.state.completed():
		fail(fmt.Errorf("%w: %q is %s; it cannot %s", kafka.ErrInvalidTxnState, id, s.state, req.Result))
	case s.state.prepared():
		fail(fmt.Errorf("%w: %q is in %s", kafka.ErrConcurrentTransactions, id, s.state))
	default: // Empty
		fail(fmt.Errorf("%w: %q has no open transaction to %s", kafka.ErrInvalidTxnState, id, req.Result))
	}
}

// endsInTV2 reports whether req is answered under TV2: the client speaks
// it, or the transaction was last changed in it.
func endsInTV2(s *txnState, req *EndTxnRequest) bool {
	return s.tv.bumpsEpoch() || req.TransactionVersion.bumpsEpoch()
}

// checkEnd returns the error Kafka answers an EndTxn with before looking at
// the state, or nil, and whether the request may be a retry of the EndTxn
// that ended the transaction. Under TV2 the epoch moved when the
// transaction ended (unless a fence ended it), so a retry of its EndTxn
// carries the epoch before:
// one less than the current, or, after an epoch overflow, the exhausted
// epoch of the previous producer id. Under TV0 the epoch did not move, and
// any EndTxn of the current epoch may be a retry. Under TV2 a transaction
// being prepared or changing state answers CONCURRENT_TRANSACTIONS before
// the epoch is checked, as Kafka does since KAFKA-18464.
func (c *Coordinator) checkEnd(m *txnMeta, req *EndTxnRequest) (retry bool, err error) {
	s := &m.cur
	tv2 := endsInTV2(s, req)
	// Only an end in TV2 moved the epoch; a fence's single bump, written
	// as TV0, must not pass for one (see prepared).
	bumped := s.tv.bumpsEpoch()
	retryOnOverflow := bumped && req.ProducerID == s.prevProducerID && req.ProducerEpoch == math.MaxInt16-1 && s.epoch == 0
	retryOnBump := bumped && int32(s.epoch) == int32(req.ProducerEpoch)+1
	current := req.ProducerEpoch == s.epoch
	valid := current
	retry = !tv2
	if tv2 && s.state.completed() {
		retry = retryOnBump || retryOnOverflow
		valid = current || retry
	}
	switch {
	case req.ProducerID != s.producerID && !retryOnOverflow:
		return false, c.wrongProducerID(m, req.ProducerID, req.ProducerEpoch)
	case tv2 && (m.busy() || s.state.prepared()):
		// Before the epoch: the EndTxn of the producer's next transaction
		// (an empty abort, or a commit) carries the epoch this one moved
		// to, and must wait for it to complete rather than be fenced
		// (KAFKA-18464). A retry of this one's EndTxn waits the same.
		return false, fmt.Errorf("%w: %q is in %s", kafka.ErrConcurrentTransactions, m.id, s.state)
	case !valid:
		return false, fmt.Errorf("%w: %q has epoch %d; EndTxn came with %d", kafka.ErrProducerFenced, m.id, s.epoch, req.ProducerEpoch)
	case m.busy():
		return false, fmt.Errorf("%w: %q is changing state", kafka.ErrConcurrentTransactions, m.id)
	}
	return retry, nil
}

// PartitionResult is the answer for one partition.
type PartitionResult struct {
	// Partition is the partition asked about.
	Partition kafka.TopicPartition
	// Err is nil, or a Kafka error.
	Err error
}

// VerifyPartitions answers a partition leader that is about to accept a
// transactional write (KIP-890 part 1; Kafka's AddPartitionsToTxn version 4
// with VerifyOnly): is producerID, at epoch, the producer of
// transactionalID, in a transaction that includes each partition? A
// partition that is included gets nil, one that is not
// kafka.ErrTransactionAbortable; and all get kafka.ErrProducerFenced when
// the epoch is not the current one, kafka.ErrInvalidProducerIDMapping when
// the producer id is not the id's, kafka.ErrConcurrentTransactions while the
// transaction's outcome is being written, kafka.ErrNotCoordinator when the
// id's partition is not loaded here. It changes nothing and queues nothing.
func (c *Coordinator) VerifyPartitions(transactionalID string, producerID int64, epoch int16, partitions []kafka.TopicPartition) []PartitionResult {
	var m *txnMeta
	var err error
	if transactionalID == "" {
		err = fmt.Errorf("%w: empty transactional id", kafka.ErrInvalidRequest)
	} else if m, err = c.producer(transactionalID, producerID, epoch); err == nil && m.cur.state.prepared() {
		err = fmt.Errorf("%w: %q is in %s", kafka.ErrConcurrentTransactions, transactionalID, m.cur.state)
	}
	out := make([]PartitionResult, len(partitions))
	for i, tp := range partitions {
		out[i] = PartitionResult{Partition: tp, Err: err}
		if err == nil && !m.cur.includes(tp) {
			out[i].Err = fmt.Errorf("%w: %s is not in the transaction of %q", kafka.ErrTransactionAbortable, tp, transactionalID)
		}
	}
	return out
}
