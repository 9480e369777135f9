package txn

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
)

func TestInitProducerIDFirstTimeAndAgain(t *testing.T) {
	h := newHarness(t, Options{})
	p := h.newProducer("billing", TV0)
	require.Equal(t, int64(1000), p.pid)
	require.Equal(t, int16(0), p.epoch)
	v := h.lastValue("billing")
	require.NotNil(t, v, "the first epoch is durable before it is answered")
	require.Equal(t, Value{Version: 1, ProducerID: 1000, PreviousProducerID: -1, NextProducerID: -1, ProducerEpoch: 0,
		TransactionTimeoutMs: 60_000, State: Empty, LastUpdateTimestampMs: h.now, StartTimestampMs: -1, NextProducerEpoch: -1}, *v)

	// A restart of the producer: the same producer id, the next epoch.
	again := h.newProducer("billing", TV0)
	require.Equal(t, p.pid, again.pid)
	require.Equal(t, int16(1), again.epoch)

	// Another transactional id gets its own producer id and is not fenced.
	other := h.newProducer("shipping", TV0)
	require.Equal(t, int64(1001), other.pid)
	require.Equal(t, int16(0), other.epoch)
}

// TestInitProducerIDResume covers KIP-360: a producer that names its id and
// epoch gets the next epoch; a retry of a call that succeeded gets the same
// epoch again; a producer that was replaced is fenced, with the error its
// version knows.
func TestInitProducerIDResume(t *testing.T) {
	h := newHarness(t, Options{})
	p := h.newProducer("billing", TV0)
	resume := func(version int16, pid int64, epoch int16) Answer {
		id := h.nextReq()
		h.c.InitProducerID(InitProducerIDRequest{ID: id, Version: version, TransactionalID: "billing", TransactionTimeoutMs: 1000,
			ProducerID: pid, ProducerEpoch: epoch}, h.now)
		h.stabilize()
		return h.answer(id)
	}
	a := resume(4, p.pid, 0)
	require.NoError(t, a.Err)
	require.Equal(t, int16(1), a.ProducerEpoch)
	a = resume(4, p.pid, 0) // the answer was lost: a retry
	require.NoError(t, a.Err)
	require.Equal(t, int16(1), a.ProducerEpoch)

	h.newProducer("billing", TV0) // another instance: epoch 2, the previous epoch forgotten
	require.ErrorIs(t, resume(4, p.pid, 1).Err, kafka.ErrProducerFenced)
	a = resume(3, p.pid, 1)
	require.ErrorIs(t, a.Err, kafka.ErrInvalidProducerEpoch, "version 3 does not know PRODUCER_FENCED")
	require.False(t, errors.Is(a.Err, kafka.ErrProducerFenced))
	require.Equal(t, int64(-1), a.ProducerID)
	require.ErrorIs(t, resume(4, 77, 0).Err, kafka.ErrProducerFenced, "another producer id")
}

func TestInitProducerIDErrors(t *testing.T) {
	for name, c := range map[string]struct {
		req  InitProducerIDRequest
		ids  error
		want error
	}{
		"empty id":          {InitProducerIDRequest{TransactionTimeoutMs: 1, ProducerID: -1, ProducerEpoch: -1}, nil, kafka.ErrInvalidRequest},
		"id too long":       {InitProducerIDRequest{TransactionalID: strings.Repeat("x", 1<<15), TransactionTimeoutMs: 1, ProducerID: -1, ProducerEpoch: -1}, nil, kafka.ErrInvalidRequest},
		"id without epoch":  {InitProducerIDRequest{TransactionalID: "a", TransactionTimeoutMs: 1, ProducerID: 5, ProducerEpoch: -1}, nil, kafka.ErrInvalidRequest},
		"epoch without id":  {InitProducerIDRequest{TransactionalID: "a", TransactionTimeoutMs: 1, ProducerID: -1, ProducerEpoch: 0}, nil, kafka.ErrInvalidRequest},
		"zero timeout":      {InitProducerIDRequest{TransactionalID: "a", ProducerID: -1, ProducerEpoch: -1}, nil, kafka.ErrInvalidTransactionTimeout},
		"timeout above max": {InitProducerIDRequest{TransactionalID: "a", TransactionTimeoutMs: 15*60_000 + 1, ProducerID: -1, ProducerEpoch: -1}, nil, kafka.ErrInvalidTransactionTimeout},
		"no producer ids":   {InitProducerIDRequest{TransactionalID: "a", TransactionTimeoutMs: 1, ProducerID: -1, ProducerEpoch: -1}, kafka.ErrCoordinatorLoadInProgress, kafka.ErrCoordinatorLoadInProgress},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, Options{})
			h.ids.err = c.ids
			c.req.ID = h.nextReq()
			h.c.InitProducerID(c.req, h.now)
			a := h.answer(c.req.ID)
			require.ErrorIs(t, a.Err, c.want)
			require.Equal(t, int64(-1), a.ProducerID)
			require.Empty(t, h.appends, "nothing is written")
		})
	}

	t.Run("not loaded", func(t *testing.T) {
		h := newHarness(t, Options{})
		h.c.Unload(0)
		id := h.nextReq()
		h.c.InitProducerID(InitProducerIDRequest{ID: id, TransactionalID: "a", TransactionTimeoutMs: 1, ProducerID: -1, ProducerEpoch: -1}, h.now)
		require.ErrorIs(t, h.answer(id).Err, kafka.ErrNotCoordinator)
	})
	t.Run("concurrent", func(t *testing.T) {
		h := newHarness(t, Options{})
		p := &producer{h: h, id: "a"}
		first := h.nextReq()
		h.c.InitProducerID(InitProducerIDRequest{ID: first, TransactionalID: "a", TransactionTimeoutMs: 1, ProducerID: -1, ProducerEpoch: -1}, h.now)
		require.ErrorIs(t, p.init().Err, kafka.ErrConcurrentTransactions, "the first one's record is not durable yet")
		h.unanswered(first)
	})
}

// TestInitProducerIDFencesOngoing is reliability test 19: a new instance
// of a producer aborts the old one's open transaction, with an epoch bump
// that fences it; every later request of the old instance fails.
func TestInitProducerIDFencesOngoing(t *testing.T) {
	h := newHarness(t, Options{})
	p1 := h.newProducer("billing", TV0)
	require.NoError(t, p1.add("t-0", "t-1").Err)
	other := h.newProducer("shipping", TV0)
	require.NoError(t, other.add("t-0").Err)

	p2 := &producer{h: h, id: "billing", version: 5}
	id := h.nextReq()
	h.c.InitProducerID(InitProducerIDRequest{ID: id, Version: 5, TransactionalID: "billing", TransactionTimeoutMs: 1000, ProducerID: -1, ProducerEpoch: -1}, h.now)
	a := h.finishAppend(nil)
	v, err := DecodeValue(a.Records[0].Value)
	require.NoError(t, err)
	require.Equal(t, PrepareAbort, v.State, "the abort is written first")
	require.Equal(t, p1.epoch+1, v.ProducerEpoch, "with the fencing epoch (PrepareEpochFence)")
	require.ErrorIs(t, h.answer(id).Err, kafka.ErrConcurrentTransactions, "the new instance retries")

	// The old instance is fenced from the moment the abort is durable.
	require.ErrorIs(t, p1.add("t-2").Err, kafka.ErrProducerFenced)
	require.ErrorIs(t, p1.end(Commit).Err, kafka.ErrProducerFenced)
	require.ErrorIs(t, p1.verify("t-0")[0], kafka.ErrProducerFenced)

	h.stabilize()
	require.Len(t, h.written, 2) // t-0 and t-1 of billing, ABORT at the fencing epoch; shipping's is still open
	for _, w := range h.written {
		require.Equal(t, Abort, w.Result)
		require.Equal(t, p1.epoch+1, w.ProducerEpoch)
	}
	require.Equal(t, CompleteAbort, h.state("billing").State)
	require.NoError(t, p2.init().Err)
	require.Equal(t, p1.epoch+2, p2.epoch)
	require.Equal(t, p1.pid, p2.pid)

	p1.version = 1
	require.ErrorIs(t, p1.end(Commit).Err, kafka.ErrInvalidProducerEpoch, "version 1 does not know PRODUCER_FENCED")
	require.NoError(t, other.end(Commit).Err, "a producer with another transactional id is never fenced")
}

// TestPrepareEpochFence: while the fencing abort's record is appended the
// transaction is changing state for everyone; a failed append leaves the
// epoch where it was, so the next attempt bumps it by one only.
func TestPrepareEpochFence(t *testing.T) {
	h := newHarness(t, Options{})
	p1 := h.newProducer("a", TV0)
	require.NoError(t, p1.add("t-0").Err)
	first := initReq(h, "a")
	h.unanswered(first)
	require.True(t, h.state("a").Changing)
	require.Equal(t, Ongoing, h.state("a").State, "nothing changed yet")
	require.ErrorIs(t, h.answer(p1.addReq("t-1")).Err, kafka.ErrConcurrentTransactions)
	require.ErrorIs(t, h.answer(initReq(h, "a")).Err, kafka.ErrConcurrentTransactions)
	h.finishAppend(kafka.ErrNotEnoughReplicas)
	require.ErrorIs(t, h.answer(first).Err, kafka.ErrCoordinatorNotAvailable)
	require.Equal(t, p1.epoch, h.state("a").ProducerEpoch)
	require.NoError(t, p1.add("t-1").Err, "the failed fence fenced nothing")

	again := initReq(h, "a")
	a := h.finishAppend(nil)
	v, err := DecodeValue(a.Records[0].Value)
	require.NoError(t, err)
	require.Equal(t, p1.epoch+1, v.ProducerEpoch, "one bump, not two")
	require.Equal(t, parts("t-0", "t-1"), h.state("a").Partitions)
	require.ErrorIs(t, h.answer(again).Err, kafka.ErrConcurrentTransactions)
}

// TestInitProducerIDEpochExhaustion: once the epoch is exhausted the
// producer moves to a new producer id at epoch 0; a retry of that call,
// naming the old id and epoch, gets the new id again.
func TestInitProducerIDEpochExhaustion(t *testing.T) {
	h := newHarness(t, Options{})
	exhaustedAt := func(state State) {
		v := Value{Version: 1, ProducerID: 7, PreviousProducerID: -1, NextProducerID: -1, ProducerEpoch: math.MaxInt16 - 2,
			TransactionTimeoutMs: 1000, State: state, StartTimestampMs: -1, NextProducerEpoch: -1, LastUpdateTimestampMs: h.now}
		if state != Empty {
			v.Partitions = []TopicPartitions{}
		}
		h.log = []Record{{Key: EncodeKey("old"), Value: v.Encode()}}
		h.reload()
	}
	exhaustedAt(CompleteCommit)
	p := h.newProducer("old", TV0)
	require.Equal(t, int64(7), p.pid)
	require.Equal(t, int16(math.MaxInt16-1), p.epoch, "the last epoch a producer may have")

	id := h.nextReq()
	h.c.InitProducerID(InitProducerIDRequest{ID: id, Version: 4, TransactionalID: "old", TransactionTimeoutMs: 1000, ProducerID: 7, ProducerEpoch: p.epoch}, h.now)
	h.stabilize()
	a := h.answer(id)
	require.NoError(t, a.Err)
	require.Equal(t, int64(1000), a.ProducerID, "a new producer id")
	require.Equal(t, int16(0), a.ProducerEpoch)
	require.Equal(t, int64(7), h.lastValue("old").PreviousProducerID)

	retry := h.nextReq()
	h.c.InitProducerID(InitProducerIDRequest{ID: retry, Version: 4, TransactionalID: "old", TransactionTimeoutMs: 1000, ProducerID: 7, ProducerEpoch: p.epoch}, h.now)
	h.stabilize()
	require.Equal(t, Answer{Request: retry, ProducerID: 1000, ProducerEpoch: 0}, h.answer(retry))

	exhaustedAt(Empty) // an epoch below the exhausted one is still bumped
	p = h.newProducer("old", TV0)
	require.Equal(t, int64(7), p.pid)
	require.Equal(t, int16(math.MaxInt16-1), p.epoch)
	p = h.newProducer("old", TV0)
	require.Equal(t, int64(1001), p.pid)
	require.Equal(t, int16(0), p.epoch)
}

// TestAddPartitionsInEachState: adding starts a transaction from Empty or a
// Complete state, adds to an Ongoing one (answered at once when nothing is
// new), and waits while the outcome is being written.
func TestAddPartitionsInEachState(t *testing.T) {
	for _, from := range []State{Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort} {
		t.Run(from.String(), func(t *testing.T) {
			h := newHarness(t, Options{})
			p := h.newProducer("a", TV0)
			start := h.now
			switch from {
			case Ongoing:
				require.NoError(t, p.add("t-0").Err)
			case PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort:
				require.NoError(t, p.add("t-0").Err)
				require.NoError(t, p.end(resultOf(from)).Err)
				if from.completed() {
					h.stabilize()
				}
			}
			require.Equal(t, from, h.state("a").State)
			h.now += 10
			if from == Ongoing {
				id := p.addReq("t-0")
				require.NoError(t, h.answer(id).Err, "nothing new: answered at once")
				require.Empty(t, h.appends)
			}
			a := p.add("t-1", "u-0")
			if from.prepared() {
				require.ErrorIs(t, a.Err, kafka.ErrConcurrentTransactions)
				return
			}
			require.NoError(t, a.Err)
			s := h.state("a")
			require.Equal(t, Ongoing, s.State)
			want := parts("t-1", "u-0")
			wantStart := h.now
			if from == Ongoing {
				want, wantStart = parts("t-0", "t-1", "u-0"), start
			}
			require.Equal(t, want, s.Partitions)
			require.Equal(t, wantStart, s.StartTimestampMs)
		})
	}
}

// producerCase is a request from a producer that may not be the current
// one, in some version, and the error it must get.
type producerCase struct {
	id      string
	pid     int64
	epoch   int16
	version int16
	want    error
}

func (c producerCase) producer(h *harness) *producer {
	return &producer{h: h, id: c.id, pid: c.pid, epoch: c.epoch, version: c.version}
}

func TestAddPartitionsErrors(t *testing.T) {
	h := newHarness(t, Options{})
	p := h.newProducer("a", TV0)
	for name, c := range map[string]producerCase{
		"empty id":            {"", p.pid, 0, 3, kafka.ErrInvalidRequest},
		"unknown id":          {"nobody", p.pid, 0, 3, kafka.ErrInvalidProducerIDMapping},
		"other producer id":   {"a", p.pid + 1, 0, 3, kafka.ErrInvalidProducerIDMapping},
		"older epoch":         {"a", p.pid, -1, 3, kafka.ErrProducerFenced},
		"newer epoch":         {"a", p.pid, 1, 3, kafka.ErrProducerFenced},
		"older epoch, v1":     {"a", p.pid, 1, 1, kafka.ErrInvalidProducerEpoch},
		"older epoch, v2":     {"a", p.pid, 1, 2, kafka.ErrProducerFenced},
		"unknown id, version": {"nobody", p.pid, 0, 0, kafka.ErrInvalidProducerIDMapping},
	} {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, h.answer(c.producer(h).addReq("t-0")).Err, c.want)
		})
	}
	require.Equal(t, Empty, h.state("a").State, "nothing changed")

	// AddOffsetsToTxn adds the group's partition of __consumer_offsets,
	// and has the same errors.
	id := h.nextReq()
	h.c.AddOffsets(AddOffsetsRequest{ID: id, Version: 3, TransactionalID: "a", ProducerID: p.pid, ProducerEpoch: p.epoch, GroupID: "lzl"}, h.now)
	h.finishAppend(nil)
	require.NoError(t, h.answer(id).Err)
	require.Equal(t, []kafka.TopicPartition{{Topic: kafka.OffsetsTopic, Partition: 107678 % 50}}, h.state("a").Partitions)
	id = h.nextReq()
	h.c.AddOffsets(AddOffsetsRequest{ID: id, Version: 1, TransactionalID: "a", ProducerID: p.pid, ProducerEpoch: 3, GroupID: "lzl"}, h.now)
	require.ErrorIs(t, h.answer(id).Err, kafka.ErrInvalidProducerEpoch)
}

// TestEndTxnInEachState: EndTxn decides an Ongoing transaction, is
// answered the same outcome once it completed, waits while it is being
// completed, and is refused otherwise.
func TestEndTxnInEachState(t *testing.T) {
	for _, from := range []State{Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort} {
		for _, r := range []Result{Commit, Abort} {
			t.Run(from.String()+"/"+r.String(), func(t *testing.T) {
				h := newHarness(t, Options{})
				p := h.newProducer("a", TV0)
				if from != Empty {
					require.NoError(t, p.add("t-0").Err)
				}
				if from != Empty && from != Ongoing {
					require.NoError(t, p.end(resultOf(from)).Err)
					if from.completed() {
						h.stabilize()
					}
				}
				a := p.end(r)
				switch {
				case from == Ongoing:
					require.NoError(t, a.Err)
					require.Equal(t, Answer{Request: a.Request, ProducerID: p.pid, ProducerEpoch: p.epoch}, a)
					require.Equal(t, r.prepareState(), h.lastValue("a").State, "answered once the outcome is durable")
					require.Len(t, h.markers, 1)
					h.stabilize()
					require.Equal(t, r.completeState(), h.state("a").State)
				case from.prepared():
					require.ErrorIs(t, a.Err, kafka.ErrConcurrentTransactions)
				case from.completed() && resultOf(from) == r:
					require.NoError(t, a.Err, "a retry gets the outcome")
					require.Equal(t, p.epoch, a.ProducerEpoch)
				default:
					require.ErrorIs(t, a.Err, kafka.ErrInvalidTxnState)
				}
			})
		}
	}
}

func TestEndTxnErrors(t *testing.T) {
	h := newHarness(t, Options{})
	p := h.newProducer("a", TV0)
	require.NoError(t, p.add("t-0").Err)
	for name, c := range map[string]producerCase{
		"empty id":          {"", p.pid, 0, 3, kafka.ErrInvalidRequest},
		"unknown id":        {"nobody", p.pid, 0, 3, kafka.ErrInvalidProducerIDMapping},
		"other producer id": {"a", 5, 0, 3, kafka.ErrInvalidProducerIDMapping},
		"stale epoch v2":    {"a", p.pid, -1, 2, kafka.ErrProducerFenced},
		"stale epoch v1":    {"a", p.pid, -1, 1, kafka.ErrInvalidProducerEpoch},
		"stale epoch v0":    {"a", p.pid, -1, 0, kafka.ErrInvalidProducerEpoch},
		"newer epoch":       {"a", p.pid, 1, 3, kafka.ErrProducerFenced},
	} {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, h.answer(c.producer(h).endReq(Commit)).Err, c.want)
		})
	}
	require.Equal(t, Ongoing, h.state("a").State, "nothing changed")

	// EndTxn while the record of an AddPartitions is in flight.
	add := p.addReq("t-9")
	require.ErrorIs(t, h.answer(p.endReq(Commit)).Err, kafka.ErrConcurrentTransactions)
	h.finishAppend(nil)
	require.NoError(t, h.answer(add).Err)
}

// TestRetriedEndTxnGetsTheSameOutcome is part of reliability test 22 and
// 21(d): a duplicated EndTxn waits while the markers are written and then
// gets the outcome that was decided, never another.
func TestRetriedEndTxnGetsTheSameOutcome(t *testing.T) {
	for _, tv := range []TransactionVersion{TV0, TV2} {
		t.Run(tv.String(), func(t *testing.T) {
			h := newHarness(t, Options{})
			p := h.newProducer("a", tv)
			require.NoError(t, p.add("t-0", "t-1").Err)
			old := *p // the producer before the answer, which is lost
			retry := func(r Result) Answer { return h.answer(old.endReq(r)) }
			first := p.end(Commit)
			require.NoError(t, first.Err)
			require.ErrorIs(t, retry(Commit).Err, kafka.ErrConcurrentTransactions, "markers are being written")
			require.ErrorIs(t, retry(Abort).Err, kafka.ErrConcurrentTransactions)
			h.stabilize()
			again := retry(Commit)
			require.NoError(t, again.Err)
			require.Equal(t, first.ProducerID, again.ProducerID)
			require.Equal(t, first.ProducerEpoch, again.ProducerEpoch)
			require.ErrorIs(t, retry(Abort).Err, kafka.ErrInvalidTxnState)
			h.reload() // a new coordinator answers the same
			require.Equal(t, again.ProducerEpoch, retry(Commit).ProducerEpoch)
		})
	}
}

func TestOptions(t *testing.T) {
	for name, o := range map[string]Options{
		"StatePartitions":           {StatePartitions: -1},
		"OffsetsPartitions":         {OffsetsPartitions: -2},
		"TransactionMaxTimeout":     {TransactionMaxTimeout: time.Microsecond},
		"TransactionalIDExpiration": {TransactionalIDExpiration: -time.Second},
	} {
		_, err := New(&ids{}, o)
		require.ErrorContains(t, err, name)
	}
	c, err := New(&ids{}, Options{})
	require.NoError(t, err)
	require.Equal(t, int32(50), c.opts.StatePartitions)
	require.Equal(t, 15*time.Minute, c.opts.TransactionMaxTimeout)
	require.Equal(t, 7*24*time.Hour, c.opts.TransactionalIDExpiration)
	require.Error(t, c.Load(50, 0, nil, 0))
	_, err = c.Describe("a")
	require.ErrorIs(t, err, kafka.ErrNotCoordinator)
}

// TestList lists every id of the loaded partitions, sorted, as Describe
// describes each; an id whose first record is not yet durable is not
// listed.
func TestList(t *testing.T) {
	h := newHarness(t, Options{})
	b := h.newProducer("b", TV2)
	a := h.newProducer("a", TV2)
	require.NoError(t, b.add("t-0").Err)
	h.c.InitProducerID(InitProducerIDRequest{ID: h.nextReq(), Version: 5, TransactionalID: "c", TransactionTimeoutMs: 60_000,
		ProducerID: -1, ProducerEpoch: -1}, h.now)
	h.drain()
	list := h.c.List()
	require.Len(t, list, 2, "c's record is not durable yet")
	require.Equal(t, []string{"a", "b"}, []string{list[0].TransactionalID, list[1].TransactionalID})
	require.Equal(t, a.pid, list[0].ProducerID)
	require.Equal(t, Ongoing, list[1].State)
	require.Equal(t, h.state("b"), list[1])
}
