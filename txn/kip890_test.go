package txn

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
)

// endedTransaction runs a transaction T1 over t-0 to its end r, and
// returns the producer, and the producer as it was during T1.
func endedTransaction(t *testing.T, tv TransactionVersion, r Result) (*harness, *producer, producer) {
	h := newHarness(t, Options{})
	p := h.newProducer("a", tv)
	require.NoError(t, p.add("t-0").Err)
	t1 := *p
	require.NoError(t, p.end(r).Err)
	h.stabilize()
	return h, p, t1
}

// TestLateEndTxn is reliability test 21 (a) (KAFKA-17754, KIP-890): a
// copy of T1's EndTxn(COMMIT) arrives after T2 began, and T2 was to be
// aborted. Under TV2 the epoch moved when T1 ended, so the late copy is
// fenced. Under TV0 — the bump switched off — it is taken for T2's commit,
// which shows the test would catch a coordinator that did not bump.
func TestLateEndTxn(t *testing.T) {
	for _, tv := range []TransactionVersion{TV2, TV0} {
		h, p, t1 := endedTransaction(t, tv, Commit)
		require.NoError(t, p.add("t-1").Err) // T2
		late := t1.end(Commit)
		if tv == TV0 {
			require.NoError(t, late.Err, "without the bump the late commit is taken for T2's")
			require.Equal(t, PrepareCommit, h.state("a").State)
			continue
		}
		require.ErrorIs(t, late.Err, kafka.ErrProducerFenced)
		require.Equal(t, Ongoing, h.state("a").State)
		require.NoError(t, p.end(Abort).Err)
		h.stabilize()
		require.Equal(t, CompleteAbort, h.state("a").State)
	}
}

// TestLateProduce is reliability test 21 (b) and (c): a produce of the
// aborted T1 reaches t-0 when no transaction is open, and then after T2
// added t-0. The partition asks VerifyPartitions. Under TV2 the epoch moved
// and both are fenced; under TV0 the second joins T2.
func TestLateProduce(t *testing.T) {
	for _, tv := range []TransactionVersion{TV2, TV0} {
		_, p, t1 := endedTransaction(t, tv, Abort)
		errC := t1.verify("t-0")[0]
		require.Error(t, errC, "(c) no transaction includes t-0: the write is refused")
		require.NoError(t, p.add("t-0").Err)
		errB := t1.verify("t-0")[0]
		if tv == TV0 {
			require.ErrorIs(t, errC, kafka.ErrTransactionAbortable)
			require.NoError(t, errB, "without the bump the late write joins T2")
			continue
		}
		require.ErrorIs(t, errC, kafka.ErrProducerFenced)
		require.ErrorIs(t, errB, kafka.ErrProducerFenced)
		require.NoError(t, p.verify("t-0")[0])
	}
}

// TestTV2EpochBump: each TV2 transaction ends in an epoch one higher, which
// its markers carry and EndTxn answers; TV0 keeps the epoch.
func TestTV2EpochBump(t *testing.T) {
	h := newHarness(t, Options{})
	p := h.newProducer("a", TV2)
	for i := range 3 {
		require.NoError(t, p.add("t-0").Err)
		a := p.end(Result(i%2 == 0))
		require.NoError(t, a.Err)
		require.Equal(t, int16(i+1), a.ProducerEpoch)
		h.stabilize()
		require.Equal(t, int16(i+1), h.written[i].ProducerEpoch, "the marker carries the new epoch")
		v := h.lastValue("a")
		require.Equal(t, TV2, v.ClientTransactionVersion)
		require.Equal(t, int16(i+1), v.ProducerEpoch)
	}
	q := h.newProducer("b", TV0)
	require.NoError(t, q.add("t-0").Err)
	require.Equal(t, q.epoch, q.end(Commit).ProducerEpoch)
}

// TestTV2EpochOverflow: a TV2 transaction ending at an exhausted epoch
// moves the producer to a new producer id once it completes; EndTxn
// answers that id and epoch 0, requests with them wait until then, and a
// retry of the EndTxn with the old id is answered the new one.
func TestTV2EpochOverflow(t *testing.T) {
	h := newHarness(t, Options{})
	v := Value{Version: 1, ProducerID: 7, PreviousProducerID: -1, NextProducerID: -1, ProducerEpoch: math.MaxInt16 - 1,
		TransactionTimeoutMs: 60_000, State: Ongoing, Partitions: []TopicPartitions{{Topic: "t", Partitions: []int32{0}}},
		LastUpdateTimestampMs: h.now, StartTimestampMs: h.now, ClientTransactionVersion: TV2, NextProducerEpoch: -1}
	h.log = []Record{{Key: EncodeKey("a"), Value: v.Encode()}}
	h.reload()
	p := &producer{h: h, id: "a", pid: 7, epoch: math.MaxInt16 - 1, tv: TV2, version: 5}
	old := *p
	a := p.end(Commit)
	require.NoError(t, a.Err)
	require.Equal(t, Answer{Request: a.Request, ProducerID: 1000, ProducerEpoch: 0}, a)
	prepared := h.lastValue("a")
	require.Equal(t, int64(1000), prepared.NextProducerID)
	require.Equal(t, int16(math.MaxInt16), prepared.ProducerEpoch)
	require.Equal(t, int16(math.MaxInt16), h.markers[0].ProducerEpoch)
	require.Equal(t, int64(7), h.markers[0].ProducerID)

	require.ErrorIs(t, p.add("t-1").Err, kafka.ErrConcurrentTransactions, "the new id is not in use yet")
	h.stabilize()
	s := h.state("a")
	require.Equal(t, int64(1000), s.ProducerID)
	require.Equal(t, int16(0), s.ProducerEpoch)
	require.Equal(t, int64(7), h.lastValue("a").PreviousProducerID)
	retry := h.answer(old.endReq(Commit))
	require.Equal(t, Answer{Request: retry.Request, ProducerID: 1000, ProducerEpoch: 0}, retry)
	require.NoError(t, p.add("t-1").Err)
	require.ErrorIs(t, h.answer(old.addReq("t-2")).Err, kafka.ErrInvalidProducerIDMapping)
}

// TestVerifyPartitions is KIP-890 part 1's question, in each case.
func TestVerifyPartitions(t *testing.T) {
	h := newHarness(t, Options{})
	p := h.newProducer("a", TV0)
	require.Equal(t, []error{kafka.ErrTransactionAbortable}, unwrapAll(p.verify("t-0")), "no open transaction")
	require.NoError(t, p.add("t-0").Err)
	require.Equal(t, []error{nil, kafka.ErrTransactionAbortable}, unwrapAll(p.verify("t-0", "t-1")))
	for name, c := range map[string]struct {
		id    string
		pid   int64
		epoch int16
		want  error
	}{
		"empty id":   {"", p.pid, p.epoch, kafka.ErrInvalidRequest},
		"unknown id": {"b", p.pid, p.epoch, kafka.ErrInvalidProducerIDMapping},
		"other id":   {"a", p.pid + 1, p.epoch, kafka.ErrInvalidProducerIDMapping},
		"old epoch":  {"a", p.pid, p.epoch - 1, kafka.ErrProducerFenced},
	} {
		rs := h.c.VerifyPartitions(c.id, c.pid, c.epoch, parts("t-0", "t-1"))
		require.Len(t, rs, 2, name)
		for _, r := range rs {
			require.ErrorIs(t, r.Err, c.want, name)
		}
	}
	require.NoError(t, p.end(Commit).Err)
	require.ErrorIs(t, p.verify("t-0")[0], kafka.ErrConcurrentTransactions, "the outcome is being written")
	require.False(t, h.c.HasReady(), "a question queues nothing")
}

// unwrapAll returns the Kafka sentinel each error wraps.
func unwrapAll(errs []error) []error {
	out := make([]error, len(errs))
	for i, err := range errs {
		if err != nil {
			out[i] = kafka.ErrorForCode(kafka.CodeOf(err))
		}
	}
	return out
}

// TestTV2EndTxnOutsideATransaction walks Kafka's table of TV2 EndTxn
// answers when no transaction is Ongoing (see EndTxn): a retry of the
// ending EndTxn (the epoch before) gets its outcome or
// INVALID_TXN_STATE; a current COMMIT gets INVALID_TXN_STATE; a current
// ABORT is an empty abort — it succeeds with the next epoch, writes no
// marker, and leaves the transaction CompleteAbort. Under TV0, the
// negative control, a current ABORT is refused, since nothing is open.
func TestTV2EndTxnOutsideATransaction(t *testing.T) {
	type row struct {
		state  string // how the last transaction ended: "empty" (none), "commit", "abort"
		retry  bool   // the EndTxn carries the epoch before the current one
		result Result
		want   error // nil: success; errEmptyAbort: success with the next epoch
	}
	errEmptyAbort := errors.New("empty abort")
	rows := []row{
		{"empty", true, Abort, kafka.ErrProducerFenced}, {"empty", false, Abort, errEmptyAbort},
		{"empty", true, Commit, kafka.ErrProducerFenced}, {"empty", false, Commit, kafka.ErrInvalidTxnState},
		{"abort", true, Abort, nil}, {"abort", false, Abort, errEmptyAbort},
		{"abort", true, Commit, kafka.ErrInvalidTxnState}, {"abort", false, Commit, kafka.ErrInvalidTxnState},
		{"commit", true, Abort, kafka.ErrInvalidTxnState}, {"commit", false, Abort, errEmptyAbort},
		{"commit", true, Commit, nil}, {"commit", false, Commit, kafka.ErrInvalidTxnState},
	}
	for _, r := range rows {
		t.Run(fmt.Sprintf("%s/retry=%v/%v", r.state, r.retry, r.result), func(t *testing.T) {
			h := newHarness(t, Options{})
			p := h.newProducer("a", TV2)
			if r.state != "empty" {
				require.NoError(t, p.add("t-0").Err)
				require.NoError(t, p.end(r.state == "commit").Err)
				h.stabilize()
			}
			q := *p
			if r.retry {
				q.epoch--
			}
			before := h.state("a")
			markers := len(h.written)
			a := q.end(r.result)
			h.stabilize()
			switch r.want {
			case nil:
				require.NoError(t, a.Err)
				require.Equal(t, before.ProducerEpoch, a.ProducerEpoch, "a retry is answered the epoch it moved to")
			case errEmptyAbort:
				require.NoError(t, a.Err)
				require.Equal(t, before.ProducerEpoch+1, a.ProducerEpoch, "the next epoch")
				require.Equal(t, CompleteAbort, h.state("a").State)
				require.Equal(t, before.ProducerEpoch+1, h.state("a").ProducerEpoch)
				require.Len(t, h.written, markers, "no partition, no marker")
			default:
				require.ErrorIs(t, a.Err, r.want)
				require.Equal(t, before, h.state("a"), "a refusal changes nothing")
			}
		})
	}
	// While the last transaction's markers are being written, the next
	// transaction's EndTxn waits (CONCURRENT_TRANSACTIONS) rather than
	// being fenced by the epoch it was answered (KAFKA-18464), and the
	// empty abort goes through once the last one completed.
	h0 := newHarness(t, Options{})
	p0 := h0.newProducer("a", TV2)
	require.NoError(t, p0.add("t-0").Err)
	require.NoError(t, p0.end(Commit).Err) // PrepareCommit; its marker not yet written
	require.Equal(t, PrepareCommit, h0.state("a").State)
	require.ErrorIs(t, p0.end(Abort).Err, kafka.ErrConcurrentTransactions)
	retry := *p0
	retry.epoch--
	require.ErrorIs(t, retry.end(Commit).Err, kafka.ErrConcurrentTransactions, "a retry of the commit waits too")
	h0.stabilize()
	a := p0.end(Abort)
	require.NoError(t, a.Err)
	h0.stabilize()
	require.Equal(t, CompleteAbort, h0.state("a").State)

	// TV0: a current ABORT with nothing open is refused.
	h := newHarness(t, Options{})
	p := h.newProducer("a", TV0)
	p.version = 4
	require.ErrorIs(t, p.end(Abort).Err, kafka.ErrInvalidTxnState)
}
