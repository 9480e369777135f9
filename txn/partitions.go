package txn

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/partlog/partlog/kafka"
)

// The loaded partitions of __transaction_state: Load and Unload as
// leadership comes and goes, and Tick, which walks them as time passes.

// Load makes the coordinator coordinate the transactional ids of partition
// of __transaction_state, which this node now leads in leader epoch
// coordinatorEpoch: it replays records, the partition's records from its
// log start to its end in offset order (the latest record of an id wins; a
// tombstone removes the id), then resumes every transaction whose outcome
// was decided and not completed (PrepareCommit, PrepareAbort): their
// markers, then their Complete records, come in the next Readys. Every
// marker it asks for carries coordinatorEpoch. Ongoing transactions go on
// and time out from when they began.
//
// A partition loaded already is unloaded first (see Unload). Records with
// a key version this package does not know are skipped, as Kafka skips
// them. A record that cannot be parsed fails the load with an error that
// matches ErrCorrupt or ErrUnknownVersion, and the partition stays
// unloaded: resuming from part of the log could undo a decided outcome.
// Load keeps no reference to records. nowMs is the caller's clock, in ms.
func (c *Coordinator) Load(partition, coordinatorEpoch int32, records []Record, nowMs int64) error {
	if partition < 0 || partition >= c.opts.StatePartitions {
		return fmt.Errorf("txn: load %s-%d: %s has %d partitions", StateTopic, partition, StateTopic, c.opts.StatePartitions)
	}
	p := &statePartition{index: partition, coordinatorEpoch: coordinatorEpoch, txns: map[string]*txnMeta{}}
	for i, rec := range records {
		m, err := replay(p, rec)
		if err != nil {
			return fmt.Errorf("txn: load %s-%d: record %d: %w", StateTopic, partition, i, err)
		}
		if m != nil {
			p.txns[m.id] = m
		}
	}
	c.Unload(partition)
	c.partitions[partition] = p
	resumed := 0
	for _, id := range slices.Sorted(maps.Keys(p.txns)) {
		if m := p.txns[id]; m.cur.state.prepared() {
			c.startMarkers(m, nowMs)
			resumed++
		}
	}
	c.opts.Logger.Info("loaded transactions", "partition", partition, "coordinator.epoch", coordinatorEpoch,
		"records", len(records), "transactional.ids", len(p.txns), "resumed", resumed)
	return nil
}

// replay applies one record to p: it returns the id's new state, or nil
// after removing the id (a tombstone) or skipping the record.
func replay(p *statePartition, rec Record) (*txnMeta, error) {
	id, err := DecodeKey(rec.Key)
	switch {
	case errors.Is(err, ErrUnknownVersion):
		return nil, nil
	case err != nil:
		return nil, err
	case rec.Value == nil:
		delete(p.txns, id)
		return nil, nil
	}
	v, err := DecodeValue(rec.Value)
	switch {
	case err != nil:
		return nil, fmt.Errorf("transactional id %q: %w", id, err)
	case v.State == Dead || v.State == PrepareEpochFence:
		return nil, fmt.Errorf("%w: transactional id %q: state %s is never written", ErrCorrupt, id, v.State)
	}
	return &txnMeta{id: id, partition: p, cur: stateOf(&v), durable: true}, nil
}

// Unload makes the coordinator forget partition of __transaction_state,
// which this node no longer leads: requests for its ids get
// kafka.ErrNotCoordinator from now on, as do requests whose records were
// being appended (answered now), and reports for its appends and marker
// writes are ignored. Unloading a partition that is not loaded does
// nothing.
func (c *Coordinator) Unload(partition int32) {
	p := c.partitions[partition]
	if p == nil {
		return
	}
	delete(c.partitions, partition)
	for _, id := range slices.Sorted(maps.Keys(c.appends)) {
		f := c.appends[id]
		if f.partition != p {
			continue
		}
		delete(c.appends, id)
		for _, m := range f.txns {
			if t := m.pending; t != nil && t.appendID == id && t.reply != nil {
				c.answer(t.reply, fmt.Errorf("%w: %s-%d moved away", kafka.ErrNotCoordinator, StateTopic, partition), noProducerID, noProducerEpoch)
			}
		}
	}
	maps.DeleteFunc(c.markers, func(_ uint64, f *markerFlight) bool { return f.m.partition == p })
	c.opts.Logger.Info("unloaded transactions", "partition", partition, "transactional.ids", len(p.txns))
}

// Tick passes time: nowMs is the caller's clock, in ms. The coordinator
// sends again the markers that failed and appends again the Complete
// records that failed, aborts the Ongoing transactions that have run
// longer than their timeout (bumping the epoch, which fences their
// producers), and removes the transactional ids that expired: those with
// no open transaction whose state has not changed for
// TransactionalIDExpiration, with one batch of tombstones per partition.
// Call it often: the interval is the markers' retry backoff, and how late a
// timeout may be noticed.
func (c *Coordinator) Tick(nowMs int64) {
	expireBefore := nowMs - c.opts.TransactionalIDExpiration.Milliseconds()
	for _, i := range slices.Sorted(maps.Keys(c.partitions)) {
		p := c.partitions[i]
		var retry, timedOut, expired []*txnMeta
		for _, m := range p.txns {
			switch {
			case m.phase != nil:
				retry = append(retry, m)
			case m.pending != nil:
			case m.cur.state == Ongoing && m.cur.startMs+int64(m.cur.timeoutMs) < nowMs:
				timedOut = append(timedOut, m)
			case m.durable && (m.cur.state == Empty || m.cur.state.completed()) && m.cur.updateMs <= expireBefore:
				expired = append(expired, m)
			}
		}
		for _, m := range sortByID(retry) {
			c.retryMarkers(m, nowMs)
		}
		for _, m := range sortByID(timedOut) {
			c.opts.Logger.Info("aborting a transaction that timed out", "transactional.id", m.id,
				"producer.id", m.cur.producerID, "epoch", m.cur.epoch, "timeout.ms", m.cur.timeoutMs)
			c.begin(m, kindTimeout, m.cur.prepared(Abort, m.cur.tv, true, noProducerID, nowMs), nil, nowMs)
		}
		if len(expired) > 0 {
			c.expire(p, sortByID(expired), nowMs)
		}
	}
}

// expire appends tombstones for ids, which expired, and removes them once
// the tombstones are durable; meanwhile they are busy.
func (c *Coordinator) expire(p *statePartition, ids []*txnMeta, nowMs int64) {
	id := c.nextID()
	a := Append{ID: id, Partition: p.index, CoordinatorEpoch: p.coordinatorEpoch, TimestampMs: nowMs}
	for _, m := range ids {
		m.pending = &transit{kind: kindExpire, next: m.cur, appendID: id}
		a.Records = append(a.Records, Record{Key: EncodeKey(m.id)})
		c.opts.Logger.Info("removing an expired transactional id", "transactional.id", m.id, "producer.id", m.cur.producerID)
	}
	c.appends[id] = &appendFlight{partition: p, txns: ids}
	c.ready.Appends = append(c.ready.Appends, a)
}

// sortByID sorts ms by transactional id, so that effects come in the same
// order whatever the order of the map they were found in.
func sortByID(ms []*txnMeta) []*txnMeta {
	slices.SortFunc(ms, func(a, b *txnMeta) int { return cmp.Compare(a.id, b.id) })
	return ms
}
