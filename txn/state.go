package txn

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"github.com/partlog/partlog/kafka"
)

// State is a transaction's state, as Kafka's TransactionState numbers it in
// __transaction_state. The package documentation draws how one leads to
// another.
type State int8

// The states.
const (
	// Empty: the producer has an id and epoch and no open transaction.
	Empty State = 0
	// Ongoing: partitions have been added; the producer is writing.
	Ongoing State = 1
	// PrepareCommit: the producer asked to commit. The outcome is decided;
	// COMMIT markers are being written.
	PrepareCommit State = 2
	// PrepareAbort: the transaction is to be aborted — at the producer's
	// request, on timeout, or because a new instance of the producer
	// fenced the old one. ABORT markers are being written.
	PrepareAbort State = 3
	// CompleteCommit: every COMMIT marker is written.
	CompleteCommit State = 4
	// CompleteAbort: every ABORT marker is written.
	CompleteAbort State = 5
	// Dead: the transactional id is being removed (expired). It is
	// never written: a tombstone is.
	Dead State = 6
	// PrepareEpochFence: the coordinator is bumping the epoch of an
	// Ongoing transaction to fence its producer and abort it. It is never
	// written either: the PrepareAbort record carries the new epoch.
	PrepareEpochFence State = 7
)

// stateNames are the states' names, as Kafka spells them.
var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String returns the state as Kafka names it ("PrepareCommit").
func (s State) String() string {
	if !s.valid() {
		return "Unknown"
	}
	return stateNames[s]
}

func (s State) valid() bool { return s >= Empty && s <= PrepareEpochFence }

// prepared reports whether s is PrepareCommit or PrepareAbort: the outcome
// is decided and markers are due.
func (s State) prepared() bool { return s == PrepareCommit || s == PrepareAbort }

// completed reports whether s is CompleteCommit or CompleteAbort.
func (s State) completed() bool { return s == CompleteCommit || s == CompleteAbort }

// TransactionVersion is the version of the transaction protocol a client
// speaks: Kafka's transaction.version feature level. The coordinator
// records it with each state change (ClientTransactionVersion).
type TransactionVersion int16

// The transaction versions.
const (
	// TV0 is the original protocol (KIP-98): the epoch changes only when
	// a producer starts (InitProducerId) or is fenced.
	TV0 TransactionVersion = 0
	// TV1 adds flexible transaction-log records; it behaves as TV0.
	TV1 TransactionVersion = 1
	// TV2 is KIP-890 part 2: the coordinator bumps the producer epoch at
	// the end of every transaction, so that a late request of a finished
	// transaction (an EndTxn, a produce) carries an old epoch and is
	// fenced. Kafka's clients speak it with EndTxn version 5 and up.
	TV2 TransactionVersion = 2
)

// String returns "TV0", "TV1" or "TV2", as Kafka names the levels.
func (v TransactionVersion) String() string { return "TV" + strconv.Itoa(int(v)) }

// bumpsEpoch reports whether v bumps the epoch at every transaction's end.
func (v TransactionVersion) bumpsEpoch() bool { return v >= TV2 }

// Result is how a transaction ends: a named bool, as WriteTxnMarkers'
// TransactionResult (true is COMMIT).
type Result bool

// The results.
const (
	// Abort discards the transaction's writes.
	Abort Result = false
	// Commit makes them visible to read_committed consumers.
	Commit Result = true
)

// String returns "COMMIT" or "ABORT", the marker's name.
func (r Result) String() string {
	if r == Commit {
		return "COMMIT"
	}
	return "ABORT"
}

// prepareState returns the state that decides r.
func (r Result) prepareState() State {
	if r == Commit {
		return PrepareCommit
	}
	return PrepareAbort
}

// completeState returns the state that ends a transaction decided r.
func (r Result) completeState() State {
	if r == Commit {
		return CompleteCommit
	}
	return CompleteAbort
}

// resultOf returns the result a Prepare or Complete state decides.
func resultOf(s State) Result { return s == PrepareCommit || s == CompleteCommit }

// Kafka's sentinels for a producer id and epoch that are not set.
const (
	noProducerID    int64 = -1
	noProducerEpoch int16 = -1
)

// exhausted reports whether an epoch is too high to bump for a producer
// (Kafka's isEpochExhausted): the largest epoch is kept back so that the
// coordinator can always fence the producer once more.
func exhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// txnState is what the coordinator knows of a transactional id: what its
// records hold, plus the producer's previous epoch, which Kafka keeps only
// in memory. A state change builds a new txnState from the current one
// (the methods below, after Kafka's TransactionMetadata.prepare*) and
// installs it only once its record is durable.
type txnState struct {
	producerID int64
	// prevProducerID is the producer id before the last change of
	// producer id, or -1.
	prevProducerID int64
	// nextProducerID is the producer id to take once a TV2 transaction
	// whose epoch ran out completes, or -1.
	nextProducerID int64
	epoch          int16
	// lastEpoch is the epoch before the last bump, for recognising a
	// retried InitProducerId or EndTxn; -1 after a fence or a load.
	lastEpoch  int16
	timeoutMs  int32
	state      State
	partitions []kafka.TopicPartition // sorted by topic, then partition; no duplicates
	startMs    int64                  // -1 outside a transaction
	updateMs   int64
	tv         TransactionVersion
}

// reinitialized is InitProducerId's change: the state becomes Empty with
// producerID and epoch, and timeoutMs as the producer's timeout.
func (s txnState) reinitialized(producerID int64, epoch, lastEpoch int16, timeoutMs int32, nowMs int64) txnState {
	n := s
	if producerID != s.producerID {
		n.prevProducerID = s.producerID
	}
	n.producerID, n.epoch, n.lastEpoch, n.timeoutMs = producerID, epoch, lastEpoch, timeoutMs
	n.state, n.partitions, n.startMs, n.updateMs = Empty, nil, -1, nowMs
	n.tv, n.nextProducerID = TV0, noProducerID
	return n
}

// withPartitions is AddPartitionsToTxn's change: the transaction is
// Ongoing with add among its partitions. A transaction that was not
// Ongoing starts now.
func (s txnState) withPartitions(add []kafka.TopicPartition, tv TransactionVersion, nowMs int64) txnState {
	n := s
	if s.state != Ongoing {
		n.startMs = nowMs
	}
	n.state, n.partitions, n.updateMs, n.tv, n.nextProducerID = Ongoing, union(s.partitions, add), nowMs, tv, noProducerID
	return n
}

// needsNextProducerID reports whether the producer's EndTxn in tv needs a
// new producer id: a TV2 end bumps the epoch, and an exhausted one moves
// to a new producer id once the transaction completes.
func (s txnState) needsNextProducerID(tv TransactionVersion) bool {
	return tv.bumpsEpoch() && exhausted(s.epoch)
}

// prepared is EndTxn's change from Ongoing: the outcome r is decided.
//
// A fence (InitProducerId from a new instance, or the timeout) bumps the
// epoch once, which fences the producer, and is written as TV0 whatever
// the client spoke: that epoch is never handed to a client, so a second
// bump would fence nothing more. (Kafka writes its own aborts at the
// cluster's transaction version, bumping twice under TV2.) Otherwise TV2
// bumps the epoch, so that requests of this transaction are fenced from
// now on, and nextProducerID (when not -1) is the producer id to move to
// at completion.
func (s txnState) prepared(r Result, tv TransactionVersion, fence bool, nextProducerID int64, nowMs int64) txnState {
	n := s
	n.state, n.updateMs, n.tv, n.nextProducerID = r.prepareState(), nowMs, tv, nextProducerID
	switch {
	case fence:
		n.tv, n.lastEpoch = TV0, noProducerEpoch
		if s.epoch < math.MaxInt16 {
			n.epoch = s.epoch + 1
		}
	case tv.bumpsEpoch():
		n.lastEpoch = s.epoch
		if s.epoch < math.MaxInt16 {
			n.epoch = s.epoch + 1
		}
	}
	return n
}

// completed is the change once every marker is written: the transaction
// is CompleteCommit or CompleteAbort, with no partitions. Under TV2 a
// transaction whose epoch ran out moves to its next producer id, epoch 0.
func (s txnState) completed(nowMs int64) txnState {
	n := s
	n.state, n.partitions, n.updateMs, n.nextProducerID = resultOf(s.state).completeState(), []kafka.TopicPartition{}, nowMs, noProducerID
	if s.tv.bumpsEpoch() {
		n.lastEpoch = s.epoch
		if s.nextProducerID != noProducerID {
			n.prevProducerID, n.producerID, n.epoch = s.producerID, s.nextProducerID, 0
		}
	}
	return n
}

// includes reports whether tp is one of the transaction's partitions.
func (s *txnState) includes(tp kafka.TopicPartition) bool {
	_, ok := slices.BinarySearchFunc(s.partitions, tp, comparePartitions)
	return ok
}

// value returns the record of s.
func (s *txnState) value() Value {
	v := Value{
		Version:                  valueVersion,
		ProducerID:               s.producerID,
		PreviousProducerID:       s.prevProducerID,
		NextProducerID:           s.nextProducerID,
		ProducerEpoch:            s.epoch,
		TransactionTimeoutMs:     s.timeoutMs,
		State:                    s.state,
		LastUpdateTimestampMs:    s.updateMs,
		StartTimestampMs:         s.startMs,
		ClientTransactionVersion: s.tv,
		NextProducerEpoch:        noProducerEpoch,
	}
	if s.state == Empty {
		return v // null partitions, as Kafka writes them
	}
	v.Partitions = []TopicPartitions{}
	for _, tp := range s.partitions {
		if i := len(v.Partitions) - 1; i >= 0 && v.Partitions[i].Topic == tp.Topic {
			v.Partitions[i].Partitions = append(v.Partitions[i].Partitions, tp.Partition)
		} else {
			v.Partitions = append(v.Partitions, TopicPartitions{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
		}
	}
	return v
}

// stateOf returns the state a record holds. The previous epoch is not in
// the record: it is -1, as Kafka loads it.
func stateOf(v *Value) txnState {
	s := txnState{
		producerID:     v.ProducerID,
		prevProducerID: v.PreviousProducerID,
		nextProducerID: v.NextProducerID,
		epoch:          v.ProducerEpoch,
		lastEpoch:      noProducerEpoch,
		timeoutMs:      v.TransactionTimeoutMs,
		state:          v.State,
		startMs:        v.StartTimestampMs,
		updateMs:       v.LastUpdateTimestampMs,
		tv:             v.ClientTransactionVersion,
	}
	if v.State != Empty {
		var tps []kafka.TopicPartition
		for _, t := range v.Partitions {
			for _, p := range t.Partitions {
				tps = append(tps, kafka.TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
		s.partitions = union(nil, tps)
	}
	return s
}

// comparePartitions orders partitions by topic, then index.
func comparePartitions(a, b kafka.TopicPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// union returns a new sorted set of the partitions in set (sorted) and
// add (any order, duplicates allowed).
func union(set, add []kafka.TopicPartition) []kafka.TopicPartition {
	out := make([]kafka.TopicPartition, 0, len(set)+len(add))
	out = append(append(out, set...), add...)
	slices.SortFunc(out, comparePartitions)
	return slices.Compact(out)
}
