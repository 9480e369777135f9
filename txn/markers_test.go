package txn

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
)

// completes counts the Complete records of id in the log.
func (h *harness) completes(id string) int {
	n := 0
	for _, r := range h.log {
		if k, _ := DecodeKey(r.Key); k == id && r.Value != nil {
			if v, err := DecodeValue(r.Value); err == nil && v.State.completed() {
				n++
			}
		}
	}
	return n
}

// TestMarkersRetriedUntilAllWritten: partitions whose marker failed are
// sent again at the next Tick, and only they; the Complete record comes
// once, after the last marker.
func TestMarkersRetriedUntilAllWritten(t *testing.T) {
	h := newHarness(t, Options{})
	p := h.newProducer("a", TV0)
	require.NoError(t, p.add("t-0", "t-1", "u-0", "gone-0").Err)
	require.NoError(t, p.end(Commit).Err)
	require.Len(t, h.markers, 1)
	first := h.markers[0]
	require.Equal(t, MarkerWrite{ID: first.ID, TransactionalID: "a", ProducerID: p.pid, ProducerEpoch: p.epoch, Result: Commit,
		CoordinatorEpoch: 1, Partitions: parts("gone-0", "t-0", "t-1", "u-0")}, first)

	// t-0 is written, gone-0 no longer exists, t-1 and u-0 fail.
	h.writeMarkers(func(_ MarkerWrite, tp kafka.TopicPartition) error {
		switch tp.Topic {
		case "gone":
			return ErrPartitionDeleted
		case "u":
			return kafka.ErrRequestTimedOut
		}
		if tp.Partition == 1 {
			return kafka.ErrNotLeaderOrFollower
		}
		return nil
	})
	require.Empty(t, h.markers, "retries wait for the next Tick")
	require.Empty(t, h.appends, "no Complete record before every marker")
	require.True(t, h.state("a").Changing)

	h.tick(100)
	require.Len(t, h.markers, 1)
	second := h.markers[0]
	require.Equal(t, parts("t-1", "u-0"), second.Partitions)

	// A late failure of the first write is stale; a late success counts.
	h.c.MarkersDone(first.ID, []MarkerResult{{parts("t-1")[0], kafka.ErrNotLeaderOrFollower}}, h.now)
	h.c.MarkersDone(second.ID, []MarkerResult{{parts("t-1")[0], nil}}, h.now)
	h.tick(100)
	require.Equal(t, []MarkerWrite{second}, h.markers, "u-0 is still in flight in the second write: nothing is sent again")
	h.c.MarkersDone(second.ID, []MarkerResult{{parts("u-0")[0], nil}}, h.now)
	h.c.MarkersDone(second.ID, []MarkerResult{{parts("u-0")[0], nil}}, h.now) // duplicated
	h.drain()
	require.Len(t, h.appends, 1, "the Complete record, once")
	h.c.MarkersDone(first.ID, []MarkerResult{{parts("t-0")[0], nil}}, h.now)
	h.stabilize()
	require.Equal(t, CompleteCommit, h.state("a").State)
	require.False(t, h.state("a").Changing)
	require.Equal(t, 1, h.completes("a"))
}

// TestCompleteRecordRetried: a failed Complete append is appended again at
// the next Tick, and written exactly once.
func TestCompleteRecordRetried(t *testing.T) {
	h := newHarness(t, Options{})
	p := h.newProducer("a", TV0)
	require.NoError(t, p.add("t-0").Err)
	require.NoError(t, p.end(Abort).Err)
	h.writeMarkers(func(MarkerWrite, kafka.TopicPartition) error { return nil })
	h.finishAppend(kafka.ErrNotEnoughReplicas)
	require.Equal(t, PrepareAbort, h.state("a").State)
	require.Empty(t, h.appends)
	require.Empty(t, h.markers, "the markers are written already")
	h.tick(100)
	require.Len(t, h.appends, 1)
	h.tick(100)
	require.Len(t, h.appends, 1, "one at a time")
	h.stabilize()
	require.Equal(t, CompleteAbort, h.state("a").State)
	require.Equal(t, 1, h.completes("a"))
}

// TestMarkersAbandonedWhenFenced: a partition that answers that a newer
// coordinator took over ends the writing of markers, until a reload.
func TestMarkersAbandonedWhenFenced(t *testing.T) {
	h := newHarness(t, Options{})
	p := h.newProducer("a", TV0)
	require.NoError(t, p.add("t-0", "t-1").Err)
	require.NoError(t, p.end(Commit).Err)
	h.writeMarkers(func(_ MarkerWrite, tp kafka.TopicPartition) error {
		if tp.Partition == 0 {
			return kafka.ErrTransactionCoordinatorFenced
		}
		return kafka.ErrNotLeaderOrFollower
	})
	h.tick(100)
	require.Empty(t, h.markers)
	require.Empty(t, h.appends)
	require.ErrorIs(t, p.end(Commit).Err, kafka.ErrConcurrentTransactions)

	h.reload()
	require.Len(t, h.markers, 1)
	require.Equal(t, parts("t-0", "t-1"), h.markers[0].Partitions)
	require.Equal(t, int32(2), h.markers[0].CoordinatorEpoch)
	h.stabilize()
	require.Equal(t, CompleteCommit, h.state("a").State)
}

// TestFailedAppendLeavesStateUnchanged: whatever the change, a failed
// record leaves the transaction as it was, and the producer gets the
// error Kafka maps the append's to.
func TestFailedAppendLeavesStateUnchanged(t *testing.T) {
	for name, c := range map[string]struct {
		setup func(*harness) *producer
		act   func(*harness, *producer) uint64
	}{
		"init": {
			setup: func(h *harness) *producer { return h.newProducer("a", TV0) },
			act:   func(h *harness, p *producer) uint64 { return initReq(h, "a") },
		},
		"add": {
			setup: func(h *harness) *producer { return h.newProducer("a", TV0) },
			act:   func(h *harness, p *producer) uint64 { return p.addReq("t-0") },
		},
		"end": {
			setup: func(h *harness) *producer { p := h.newProducer("a", TV2); p.add("t-0"); return p },
			act:   func(h *harness, p *producer) uint64 { return p.endReq(Commit) },
		},
		"fence": {
			setup: func(h *harness) *producer { p := h.newProducer("a", TV0); p.add("t-0"); return p },
			act:   func(h *harness, p *producer) uint64 { return initReq(h, "a") },
		},
		"timeout": {
			setup: func(h *harness) *producer { p := h.newProducer("a", TV0); p.add("t-0"); return p },
			act:   func(h *harness, p *producer) uint64 { h.tick(61_000); return 0 },
		},
	} {
		for _, fail := range []struct{ err, want error }{
			{kafka.ErrNotEnoughReplicas, kafka.ErrCoordinatorNotAvailable},
			{kafka.ErrRequestTimedOut, kafka.ErrCoordinatorNotAvailable},
			{kafka.ErrNotLeaderOrFollower, kafka.ErrNotCoordinator},
			{kafka.ErrKafkaStorage, kafka.ErrNotCoordinator},
			{kafka.ErrMessageTooLarge, kafka.ErrUnknownServerError},
			{kafka.ErrInvalidRecord, kafka.ErrInvalidRecord},
			{errors.New("disk on fire"), kafka.ErrCoordinatorNotAvailable},
		} {
			t.Run(fmt.Sprintf("%s/%v", name, fail.err), func(t *testing.T) {
				h := newHarness(t, Options{})
				p := c.setup(h)
				before := h.state("a")
				req := c.act(h, p)
				require.Len(t, h.appends, 1)
				h.finishAppend(fail.err)
				require.Equal(t, before, h.state("a"))
				if req != 0 {
					a := h.answer(req)
					require.ErrorIs(t, a.Err, fail.want)
					require.Equal(t, int64(-1), a.ProducerID)
				}
				require.Empty(t, h.markers)
				// The producer carries on as if nothing happened.
				require.NoError(t, p.add("t-1").Err)
			})
		}
	}

	t.Run("first init", func(t *testing.T) {
		h := newHarness(t, Options{})
		req := initReq(h, "a")
		h.finishAppend(kafka.ErrNotEnoughReplicas)
		require.ErrorIs(t, h.answer(req).Err, kafka.ErrCoordinatorNotAvailable)
		_, err := h.c.Describe("a")
		require.ErrorIs(t, err, kafka.ErrTransactionalIDNotFound, "an id never written is forgotten")
		require.Equal(t, int64(1001), h.newProducer("a", TV0).pid)
	})
}

// initReq sends InitProducerId for id and returns the request id.
func initReq(h *harness, id string) uint64 {
	req := h.nextReq()
	h.c.InitProducerID(InitProducerIDRequest{ID: req, Version: 5, TransactionalID: id, TransactionTimeoutMs: 60_000, ProducerID: -1, ProducerEpoch: -1}, h.now)
	h.drain()
	return req
}

// TestTimeoutAbortsAndFences is reliability test 23: an Ongoing transaction
// older than its timeout is aborted at a Tick, with an epoch bump that
// fences its producer.
func TestTimeoutAbortsAndFences(t *testing.T) {
	for _, tv := range []TransactionVersion{TV0, TV2} {
		t.Run(tv.String(), func(t *testing.T) {
			h := newHarness(t, Options{})
			p := h.newProducer("a", tv) // timeout 60 s
			require.NoError(t, p.add("t-0").Err)
			h.tick(60_000)
			require.Empty(t, h.appends, "not before the timeout has passed")
			h.tick(1)
			require.Len(t, h.appends, 1)
			h.stabilize()
			require.Len(t, h.written, 1)
			require.Equal(t, Abort, h.written[0].Result)
			require.Equal(t, p.epoch+1, h.written[0].ProducerEpoch)
			s := h.state("a")
			require.Equal(t, CompleteAbort, s.State)
			require.Equal(t, p.epoch+1, s.ProducerEpoch)
			require.ErrorIs(t, p.end(Commit).Err, kafka.ErrProducerFenced)
			require.ErrorIs(t, p.end(Abort).Err, kafka.ErrProducerFenced)
			require.ErrorIs(t, p.add("t-1").Err, kafka.ErrProducerFenced)
			require.ErrorIs(t, p.verify("t-0")[0], kafka.ErrProducerFenced)
			q := h.newProducer("a", tv)
			require.Equal(t, p.epoch+2, q.epoch)
		})
	}
}

// TestReloadResumesDecidedTransactions is reliability test 22: a new
// coordinator finishes the transactions it finds decided — whatever
// markers were written before — and lets the others be.
func TestReloadResumesDecidedTransactions(t *testing.T) {
	for _, written := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("%d markers written", written), func(t *testing.T) {
			h := newHarness(t, Options{})
			c := h.newProducer("commits", TV2)
			require.NoError(t, c.add("t-0", "t-1").Err)
			a := h.newProducer("aborts", TV0)
			require.NoError(t, a.add("t-0").Err)
			o := h.newProducer("open", TV0)
			require.NoError(t, o.add("t-2").Err)
			require.NoError(t, c.end(Commit).Err)
			require.NoError(t, a.end(Abort).Err)
			n := 0
			h.writeMarkers(func(MarkerWrite, kafka.TopicPartition) error {
				n++
				if n <= written {
					return nil
				}
				return kafka.ErrRequestTimedOut
			})
			h.reload()
			require.Len(t, h.markers, 2)
			for _, m := range h.markers {
				require.Equal(t, int32(2), m.CoordinatorEpoch, "markers carry the new coordinator epoch")
				if m.TransactionalID == "commits" {
					require.Equal(t, Commit, m.Result)
					require.Equal(t, parts("t-0", "t-1"), m.Partitions)
					require.Equal(t, c.epoch, m.ProducerEpoch, "TV2: the bumped epoch")
				} else {
					require.Equal(t, Abort, m.Result)
				}
			}
			require.True(t, h.state("commits").Changing)
			h.stabilize()
			require.Equal(t, CompleteCommit, h.state("commits").State)
			require.Equal(t, CompleteAbort, h.state("aborts").State)
			require.Equal(t, Ongoing, h.state("open").State)
			require.Equal(t, 1, h.completes("commits"))
			h.tick(60_001)
			h.stabilize()
			require.Equal(t, CompleteAbort, h.state("open").State, "a reloaded Ongoing transaction times out")
		})
	}
}

func TestLoad(t *testing.T) {
	h := newHarness(t, Options{})
	p := h.newProducer("a", TV0)
	require.NoError(t, p.add("t-0").Err)
	h.newProducer("b", TV0)
	h.log = append(h.log,
		Record{Key: []byte{0, 1, 0, 1, 'x'}, Value: []byte{9}}, // a key from a newer release: skipped
		Record{Key: EncodeKey("b")})                            // a tombstone
	h.reload()
	require.Equal(t, Ongoing, h.state("a").State)
	require.Equal(t, parts("t-0"), h.state("a").Partitions)
	_, err := h.c.Describe("b")
	require.ErrorIs(t, err, kafka.ErrTransactionalIDNotFound)

	for name, rec := range map[string]Record{
		"corrupt key":   {Key: []byte{0, 0, 0, 9}},
		"corrupt value": {Key: EncodeKey("a"), Value: []byte{0, 1, 2}},
		"newer value":   {Key: EncodeKey("a"), Value: []byte{0, 2}},
		"dead":          {Key: EncodeKey("a"), Value: (&Value{Version: 1, State: Dead, PreviousProducerID: -1, NextProducerID: -1, NextProducerEpoch: -1}).Encode()},
	} {
		c, err := New(&ids{}, Options{StatePartitions: 1})
		require.NoError(t, err)
		err = c.Load(0, 3, append(h.log, rec), h.now)
		require.True(t, errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnknownVersion), "%s: %v", name, err)
		_, err = c.Describe("a")
		require.ErrorIs(t, err, kafka.ErrNotCoordinator, "%s: the partition stays unloaded", name)
	}
}

// TestUnload: requests in flight are answered kafka.ErrNotCoordinator, and
// the outcomes of their effects are ignored.
func TestUnload(t *testing.T) {
	h := newHarness(t, Options{})
	p := h.newProducer("a", TV0)
	q := h.newProducer("b", TV0)
	require.NoError(t, q.add("t-1").Err)
	require.NoError(t, q.end(Commit).Err) // its markers are in flight
	add := p.addReq("t-0")
	h.c.Unload(0)
	require.ErrorIs(t, h.answer(add).Err, kafka.ErrNotCoordinator)
	h.stabilize() // reports for unknown ids do nothing
	require.ErrorIs(t, p.add("t-0").Err, kafka.ErrNotCoordinator)
	require.ErrorIs(t, p.end(Commit).Err, kafka.ErrNotCoordinator)
	require.ErrorIs(t, p.verify("t-0")[0], kafka.ErrNotCoordinator)
	h.c.Unload(0) // again: nothing
	require.False(t, h.c.HasReady())
}

// TestExpiration: an id with no open transaction and no change for
// transactional.id.expiration.ms is removed with a tombstone.
func TestExpiration(t *testing.T) {
	h := newHarness(t, Options{TransactionalIDExpiration: time.Hour})
	idle := h.newProducer("idle", TV0)
	done := h.newProducer("done", TV0)
	require.NoError(t, done.add("t-0").Err)
	require.NoError(t, done.end(Commit).Err)
	h.stabilize()
	open := h.newProducer("open", TV0)
	require.NoError(t, open.add("t-0").Err)
	// Nothing expires before the hour is out; the open transaction times
	// out meanwhile and is aborted.
	h.tick(time.Hour.Milliseconds() - 1)
	require.Len(t, h.appends, 1)
	h.stabilize()
	require.Equal(t, CompleteAbort, h.state("open").State)
	h.tick(1)
	require.Len(t, h.appends, 1)
	tombs := h.appends[0]
	require.Equal(t, []Record{{Key: EncodeKey("done")}, {Key: EncodeKey("idle")}}, tombs.Records)
	require.ErrorIs(t, idle.init().Err, kafka.ErrConcurrentTransactions, "being removed")

	h.finishAppend(kafka.ErrNotEnoughReplicas) // the id stays when the tombstone fails
	require.Equal(t, Empty, h.state("idle").State)
	h.tick(1)
	h.finishAppend(nil)
	_, err := h.c.Describe("idle")
	require.ErrorIs(t, err, kafka.ErrTransactionalIDNotFound)
	require.Nil(t, h.lastValue("done"))
	require.Equal(t, CompleteAbort, h.state("open").State)
	fresh := h.newProducer("idle", TV0)
	require.NotEqual(t, idle.pid, fresh.pid, "a removed id starts over")
	require.Equal(t, int16(0), fresh.epoch)
	h.reload()
	_, err = h.c.Describe("done")
	require.ErrorIs(t, err, kafka.ErrTransactionalIDNotFound, "the tombstone removes it on load too")
}
