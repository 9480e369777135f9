package txn

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
)

// ids hands out producer ids from next, or fails with err.
type ids struct {
	next int64
	err  error
}

func (a *ids) NextProducerID() (int64, error) {
	if a.err != nil {
		return -1, a.err
	}
	a.next++
	return a.next - 1, nil
}

// harness drives a Coordinator as a caller would, with one partition of
// __transaction_state (so every id lives in partition 0), and lets a test
// decide when, and how, each effect is carried out.
type harness struct {
	t       testing.TB
	c       *Coordinator
	ids     *ids
	opts    Options
	now     int64
	lastReq uint64
	epoch   int32              // the partition's coordinator epoch
	log     []Record           // partition 0's durable records
	appends []Append           // handed out, not yet reported
	markers []MarkerWrite      // handed out, not yet reported
	written []MarkerWrite      // every marker write reported, by partition
	answers map[uint64]*Answer // by request id
}

func newHarness(t testing.TB, opts Options) *harness {
	t.Helper()
	opts.StatePartitions = 1
	h := &harness{t: t, ids: &ids{next: 1000}, opts: opts, now: 1_000_000, epoch: 1, answers: map[uint64]*Answer{}}
	var err error
	h.c, err = New(h.ids, opts)
	require.NoError(t, err)
	require.NoError(t, h.c.Load(0, h.epoch, nil, h.now))
	h.drain()
	return h
}

// drain takes the coordinator's Ready into the harness's queues.
func (h *harness) drain() {
	rd := h.c.Ready()
	h.appends = append(h.appends, rd.Appends...)
	h.markers = append(h.markers, rd.Markers...)
	for _, a := range rd.Answers {
		_, dup := h.answers[a.Request]
		require.False(h.t, dup, "request %d answered twice", a.Request)
		h.answers[a.Request] = &a
	}
}

// finishAppend reports the oldest append handed out: durable when err is
// nil (its records go to the log), failed otherwise.
func (h *harness) finishAppend(err error) Append {
	h.t.Helper()
	h.drain()
	require.NotEmpty(h.t, h.appends, "no append to report")
	a := h.appends[0]
	h.appends = h.appends[1:]
	if err == nil {
		h.log = append(h.log, a.Records...)
	}
	h.c.AppendDone(a.ID, err, h.now)
	h.drain()
	return a
}

// writeMarkers reports every marker write handed out, each partition with
// result(tp) (nil: written).
func (h *harness) writeMarkers(result func(MarkerWrite, kafka.TopicPartition) error) {
	h.t.Helper()
	h.drain()
	ms := h.markers
	h.markers = nil
	for _, m := range ms {
		var rs []MarkerResult
		for _, tp := range m.Partitions {
			err := result(m, tp)
			rs = append(rs, MarkerResult{tp, err})
			if err == nil {
				h.written = append(h.written, MarkerWrite{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
					Result: m.Result, CoordinatorEpoch: m.CoordinatorEpoch, Partitions: []kafka.TopicPartition{tp}})
			}
		}
		h.c.MarkersDone(m.ID, rs, h.now)
	}
	h.drain()
}

// stabilize carries out every effect, successfully, until none is left.
func (h *harness) stabilize() {
	h.t.Helper()
	for h.drain(); len(h.appends) > 0 || len(h.markers) > 0; h.drain() {
		for len(h.appends) > 0 {
			h.finishAppend(nil)
		}
		h.writeMarkers(func(MarkerWrite, kafka.TopicPartition) error { return nil })
	}
}

// tick moves the clock by ms and ticks.
func (h *harness) tick(ms int64) {
	h.now += ms
	h.c.Tick(h.now)
	h.drain()
}

// reload crashes the coordinator, keeping only the durable log, and loads
// the partition again in the next coordinator epoch.
func (h *harness) reload() {
	h.t.Helper()
	var err error
	h.c, err = New(h.ids, h.opts)
	require.NoError(h.t, err)
	h.appends, h.markers = nil, nil
	h.epoch++
	require.NoError(h.t, h.c.Load(0, h.epoch, h.log, h.now))
	h.drain()
}

// nextReq returns a new request id.
func (h *harness) nextReq() uint64 {
	h.lastReq++
	return h.lastReq
}

// answer returns the answer to request id, failing when there is none.
func (h *harness) answer(id uint64) Answer {
	h.t.Helper()
	h.drain()
	a := h.answers[id]
	require.NotNil(h.t, a, "request %d has no answer", id)
	return *a
}

// unanswered checks that request id has no answer yet.
func (h *harness) unanswered(id uint64) {
	h.t.Helper()
	h.drain()
	require.Nil(h.t, h.answers[id], "request %d is answered already", id)
}

// state returns what the coordinator holds for id.
func (h *harness) state(id string) Status {
	h.t.Helper()
	s, err := h.c.Describe(id)
	require.NoError(h.t, err)
	return s
}

// lastValue returns the latest record of id in the log, nil for none or a
// tombstone.
func (h *harness) lastValue(id string) *Value {
	h.t.Helper()
	for _, r := range slices.Backward(h.log) {
		if k, err := DecodeKey(r.Key); err == nil && k == id {
			if r.Value == nil {
				return nil
			}
			v, err := DecodeValue(r.Value)
			require.NoError(h.t, err)
			return &v
		}
	}
	return nil
}

// producer is a transactional producer as a test sees it.
type producer struct {
	h       *harness
	id      string
	pid     int64
	epoch   int16
	tv      TransactionVersion
	version int16 // the version of its requests
}

// newProducer starts a producer of id, retrying InitProducerId while it
// gets kafka.ErrConcurrentTransactions, with every effect carried out.
func (h *harness) newProducer(id string, tv TransactionVersion) *producer {
	h.t.Helper()
	p := &producer{h: h, id: id, tv: tv, version: 5}
	for range 10 {
		a := p.init()
		h.stabilize()
		if !errors.Is(a.Err, kafka.ErrConcurrentTransactions) {
			require.NoError(h.t, a.Err)
			return p
		}
	}
	h.t.Fatalf("InitProducerId of %q never succeeded", id)
	return nil
}

// init sends InitProducerId (version 5, without an epoch to resume) and
// returns its answer once its record is durable.
func (p *producer) init() Answer {
	p.h.t.Helper()
	id := p.h.nextReq()
	p.h.c.InitProducerID(InitProducerIDRequest{ID: id, Version: 5, TransactionalID: p.id, TransactionTimeoutMs: 60_000,
		ProducerID: -1, ProducerEpoch: -1}, p.h.now)
	p.h.drain()
	for p.h.answers[id] == nil && len(p.h.appends) > 0 {
		p.h.finishAppend(nil)
	}
	a := p.h.answer(id)
	if a.Err == nil {
		p.pid, p.epoch = a.ProducerID, a.ProducerEpoch
	}
	return a
}

// add sends AddPartitionsToTxn for topic-partition names such as "t-0"
// and returns the request id; the append is left to the test.
func (p *producer) addReq(tps ...string) uint64 {
	id := p.h.nextReq()
	p.h.c.AddPartitions(AddPartitionsRequest{ID: id, Version: p.version, TransactionalID: p.id, ProducerID: p.pid,
		ProducerEpoch: p.epoch, Partitions: parts(tps...), TransactionVersion: p.tv}, p.h.now)
	p.h.drain()
	return id
}

// add adds partitions and returns the answer, with the append durable.
func (p *producer) add(tps ...string) Answer {
	p.h.t.Helper()
	id := p.addReq(tps...)
	if p.h.answers[id] == nil {
		p.h.finishAppend(nil)
	}
	return p.h.answer(id)
}

// endReq sends EndTxn and returns the request id.
func (p *producer) endReq(r Result) uint64 {
	id := p.h.nextReq()
	p.h.c.EndTxn(EndTxnRequest{ID: id, Version: p.version, TransactionalID: p.id, ProducerID: p.pid,
		ProducerEpoch: p.epoch, Result: r, TransactionVersion: p.tv}, p.h.now)
	p.h.drain()
	return id
}

// end ends the transaction and returns the answer once the Prepare record
// is durable (markers not yet written); under TV2 the producer takes the
// epoch it is answered.
func (p *producer) end(r Result) Answer {
	p.h.t.Helper()
	id := p.endReq(r)
	if p.h.answers[id] == nil {
		p.h.finishAppend(nil)
	}
	a := p.h.answer(id)
	if a.Err == nil && p.tv.bumpsEpoch() {
		p.pid, p.epoch = a.ProducerID, a.ProducerEpoch
	}
	return a
}

// verify asks VerifyPartitions for the producer's id and epoch.
func (p *producer) verify(tps ...string) []error {
	var errs []error
	for _, r := range p.h.c.VerifyPartitions(p.id, p.pid, p.epoch, parts(tps...)) {
		errs = append(errs, r.Err)
	}
	return errs
}

// parts parses "topic-partition" names.
func parts(names ...string) []kafka.TopicPartition {
	var tps []kafka.TopicPartition
	for _, n := range names {
		var tp kafka.TopicPartition
		i := len(n) - 1
		for n[i] != '-' {
			i--
		}
		tp.Topic = n[:i]
		if _, err := fmt.Sscan(n[i+1:], &tp.Partition); err != nil {
			panic(err)
		}
		tps = append(tps, tp)
	}
	return tps
}
