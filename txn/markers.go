package txn

import (
	"errors"
	"slices"

	"github.com/partlog/partlog/kafka"
)

// MarkerWrite asks for a transaction's COMMIT or ABORT marker to be written
// to each of Partitions: WriteTxnMarkers, sent to each partition's leader
// (the caller groups the partitions by leader, and may send the markers of
// several MarkerWrites in one request). The caller reports each partition's
// outcome with MarkersDone, and must report every partition in the end — a
// request that got no answer as kafka.ErrRequestTimedOut.
type MarkerWrite struct {
	// ID names the write to MarkersDone.
	ID uint64
	// TransactionalID is the transaction's id, for logs.
	TransactionalID string
	// ProducerID and ProducerEpoch are the producer's; a partition fences
	// the producer's writes at older epochs from the marker on.
	ProducerID int64
	// ProducerEpoch is the epoch of the transaction's outcome: under TV2
	// one more than the epoch of its data.
	ProducerEpoch int16
	// Result is the marker: COMMIT or ABORT.
	Result Result
	// CoordinatorEpoch is the leader epoch of the coordinator's partition
	// of __transaction_state: a partition refuses a marker with a
	// coordinator epoch older than one it has seen for the producer
	// (kafka.ErrTransactionCoordinatorFenced), so a deposed coordinator
	// cannot write.
	CoordinatorEpoch int32
	// Partitions are the partitions to write the marker to, sorted. The
	// caller owns the slice.
	Partitions []kafka.TopicPartition
}

// MarkerResult is a partition's outcome of a MarkerWrite.
type MarkerResult struct {
	// Partition is the partition.
	Partition kafka.TopicPartition
	// Err is nil once the marker is written (and replicated as acks=all),
	// or the error: ErrPartitionDeleted for a partition that no longer
	// exists, the partition's or the request's error otherwise.
	Err error
}

// markerPhase is the writing of a transaction's markers: from the moment
// its Prepare record is durable until its Complete record is (Kafka's
// pending Complete state, when it keeps the transaction in its marker
// channel).
type markerPhase struct {
	// remaining are the partitions whose marker is not yet written, each
	// with the MarkerWrite it is in flight in, or 0 while it waits to be
	// sent again at the next Tick.
	remaining map[kafka.TopicPartition]uint64
	// completing says the Complete record is being appended.
	completing bool
	// abandoned says a partition answered that a newer coordinator or
	// producer epoch took over: the coordinator writes nothing more for the
	// transaction until its partition is loaded again, as Kafka.
	abandoned bool
}

// markerFlight is a MarkerWrite handed out and not yet fully reported.
type markerFlight struct {
	m     *txnMeta
	phase *markerPhase
}

// startMarkers begins writing the markers of m, whose Prepare record is
// durable.
func (c *Coordinator) startMarkers(m *txnMeta, nowMs int64) {
	ph := &markerPhase{remaining: make(map[kafka.TopicPartition]uint64, len(m.cur.partitions))}
	m.phase = ph
	if !c.opts.completeBeforeMarkers {
		for _, tp := range m.cur.partitions {
			ph.remaining[tp] = 0
		}
	}
	c.sendMarkers(m)
	c.maybeComplete(m, nowMs)
}

// sendMarkers hands out a MarkerWrite for the partitions of m that wait to
// be sent.
func (c *Coordinator) sendMarkers(m *txnMeta) {
	ph := m.phase
	var tps []kafka.TopicPartition
	for _, tp := range m.cur.partitions {
		if f, ok := ph.remaining[tp]; ok && f == 0 {
			tps = append(tps, tp)
		}
	}
	if len(tps) == 0 || ph.abandoned {
		return
	}
	id := c.nextID()
	for _, tp := range tps {
		ph.remaining[tp] = id
	}
	c.markers[id] = &markerFlight{m: m, phase: ph}
	c.ready.Markers = append(c.ready.Markers, c.markerWrite(id, m, &m.cur, tps))
}

// markerWrite returns the MarkerWrite of s's outcome to tps.
func (c *Coordinator) markerWrite(id uint64, m *txnMeta, s *txnState, tps []kafka.TopicPartition) MarkerWrite {
	return MarkerWrite{
		ID:               id,
		TransactionalID:  m.id,
		ProducerID:       s.producerID,
		ProducerEpoch:    s.epoch,
		Result:           resultOf(s.state),
		CoordinatorEpoch: m.partition.coordinatorEpoch,
		Partitions:       slices.Clone(tps),
	}
}

// maybeComplete appends the Complete record of m once every marker is
// written.
func (c *Coordinator) maybeComplete(m *txnMeta, nowMs int64) {
	ph := m.phase
	if ph.abandoned || ph.completing || len(ph.remaining) > 0 {
		return
	}
	ph.completing = true
	c.begin(m, kindComplete, m.cur.completed(nowMs), nil, nowMs)
}

// MarkersDone reports the outcome of the MarkerWrite named id for some of
// its partitions; it may be called again for the others as their leaders
// answer. A partition that got its marker (nil), or needs none
// (ErrPartitionDeleted, kafka.ErrUnsupportedVersion), is done;
// kafka.ErrInvalidProducerEpoch or ErrTransactionCoordinatorFenced mean a
// newer producer or coordinator took over, and the coordinator gives up
// writing the transaction's markers (a reload resumes them); any other
// error is retried at the next Tick. Once every partition is done the
// coordinator appends the transaction's Complete record. Reports for
// unknown ids, or for partitions already done, are ignored. nowMs is the
// caller's clock, in ms.
func (c *Coordinator) MarkersDone(id uint64, results []MarkerResult, nowMs int64) {
	f, ok := c.markers[id]
	if !ok {
		return
	}
	m, ph := f.m, f.phase
	for _, res := range results {
		flight, ok := ph.remaining[res.Partition]
		if !ok {
			continue
		}
		switch {
		case res.Err == nil, errors.Is(res.Err, ErrPartitionDeleted), errors.Is(res.Err, kafka.ErrUnsupportedVersion):
			delete(ph.remaining, res.Partition) // whichever write it came from, it is written
		case errors.Is(res.Err, kafka.ErrInvalidProducerEpoch), errors.Is(res.Err, kafka.ErrTransactionCoordinatorFenced):
			if !ph.abandoned {
				c.opts.Logger.Warn("giving up writing transaction markers", "transactional.id", m.id,
					"partition", res.Partition.String(), "err", res.Err)
			}
			ph.abandoned = true
		case flight == id: // a failure of an older write is stale
			ph.remaining[res.Partition] = 0
		}
	}
	if !ph.inFlight(id) {
		delete(c.markers, id)
	}
	if m.phase == ph {
		c.maybeComplete(m, nowMs)
	}
}

// inFlight reports whether a partition waits for the MarkerWrite named id.
func (ph *markerPhase) inFlight(id uint64) bool {
	for _, f := range ph.remaining {
		if f == id {
			return true
		}
	}
	return false
}

// retryMarkers, at a Tick, sends again the markers of m that failed, or
// appends again its Complete record.
func (c *Coordinator) retryMarkers(m *txnMeta, nowMs int64) {
	c.sendMarkers(m)
	c.maybeComplete(m, nowMs)
}
