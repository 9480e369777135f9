package txn

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
)

// simSeed runs TestSimulation with one seed (the one a failure prints).
var simSeed = flag.Uint64("sim.seed", 0, "run TestSimulation with this seed only")

// simSteps is how many steps each run of the simulation takes.
const simSteps = 3000

// TestSimulation drives a coordinator with seeded random requests from
// producers and their zombies, ticks, failed appends, failed and
// duplicated marker writes, crashes and moves of its partitions, and
// checks after every step that:
//
//   - a transaction's outcome, once decided (its Prepare record durable),
//     never changes, and every EndTxn answered without error agrees with
//     it;
//   - markers are asked for only once the Prepare record is durable, with
//     its outcome, producer id and epoch;
//   - the Complete record is appended only after every marker is written;
//   - epochs never go backwards for a producer id, in the log or in
//     answers;
//   - VerifyPartitions says yes only for the producer and epoch of an
//     Ongoing transaction that includes the partition;
//
// and, at the end, that every decided transaction completes and every
// request is answered. It prints the seed when it fails.
func TestSimulation(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	if *simSeed != 0 {
		seeds = []uint64{*simSeed}
	}
	for _, seed := range seeds {
		v, summary := runSim(seed, simSteps, Options{})
		t.Logf("seed %d: %s", seed, summary)
		if len(v) > 0 {
			t.Fatalf("seed %d (go test -run TestSimulation -sim.seed=%d): %d violations, the first:\n%s", seed, seed, len(v), v[0])
		}
	}
}

// TestSimulationCatchesBrokenCoordinators switches off one mechanism at a
// time and checks that the simulation notices.
func TestSimulationCatchesBrokenCoordinators(t *testing.T) {
	for name, opts := range map[string]Options{
		"markers before the Prepare record is durable": {markersBeforeDurable: true},
		"Complete before the markers":                  {completeBeforeMarkers: true},
		"InitProducerId aborts a decided commit":       {fencePrepared: true},
		"an exhausted producer id starts over":         {reuseProducerID: true},
	} {
		t.Run(name, func(t *testing.T) {
			for seed := uint64(1); seed <= 8; seed++ {
				if v, _ := runSim(seed, simSteps, opts); len(v) > 0 {
					t.Logf("seed %d: %s", seed, v[0])
					return
				}
			}
			t.Fatal("no seed caught it")
		})
	}
}

// sim is one run of the simulation.
type sim struct {
	rng        *rand.Rand
	opts       Options
	c          *Coordinator
	ids        *ids
	now        int64
	epoch      int32
	logs       [][]Record    // each state partition's durable records
	appends    []Append      // handed out, not reported
	markers    []MarkerWrite // handed out, with partitions not yet reported
	producers  []*simProducer
	requests   map[uint64]*simRequest // sent, not yet answered
	lastReq    uint64
	violations []string

	// What the durable log says, per transactional id.
	latest  map[string]*Value                        // the latest record; nil after a tombstone
	decided map[string]*Value                        // the Prepare record of an outcome not yet completed
	written map[string]map[kafka.TopicPartition]bool // markers written for decided
	epochs  map[int64]int16                          // the highest epoch of each producer id
}

// simProducer is an instance of a producer; older instances of the same
// transactional id go on sending as zombies.
type simProducer struct {
	id    string
	pid   int64
	epoch int16
	tv    TransactionVersion
	ready bool
	// fenced says a request of it was answered that it is fenced: the
	// simulation then mostly leaves it be, as an application starts a new
	// producer; sometimes it goes on, as a zombie.
	fenced bool
	// waiting says it has a request in flight.
	waiting bool
}

type simRequest struct {
	api    api
	p      *simProducer
	result Result
}

const simPartitions = 3

// runSim runs the simulation and returns the invariants it found broken,
// and a summary of the records written.
func runSim(seed uint64, steps int, opts Options) ([]string, string) {
	opts.StatePartitions = simPartitions
	opts.TransactionalIDExpiration = 10 * time.Minute
	s := &sim{
		rng: rand.New(rand.NewPCG(seed, seed)), opts: opts, ids: &ids{next: 100}, now: 1_000_000,
		logs: make([][]Record, simPartitions), requests: map[uint64]*simRequest{},
		latest: map[string]*Value{}, decided: map[string]*Value{},
		written: map[string]map[kafka.TopicPartition]bool{}, epochs: map[int64]int16{},
	}
	// Some ids start close to the end of their epochs.
	for i := range 3 {
		id := fmt.Sprintf("worn-%d", i)
		v := Value{Version: 1, ProducerID: int64(i + 1), PreviousProducerID: -1, NextProducerID: -1, ProducerEpoch: math.MaxInt16 - 4,
			TransactionTimeoutMs: 30_000, State: Empty, LastUpdateTimestampMs: s.now, StartTimestampMs: -1, NextProducerEpoch: -1}
		s.durable(PartitionFor(id, simPartitions), Record{Key: EncodeKey(id), Value: v.Encode()})
	}
	s.restart()
	for range steps {
		s.step()
	}
	// Then no more faults: every request is answered; and, after a restart
	// (which resumes markers given up on), every decided transaction
	// completes.
	s.settle()
	for id, r := range s.requests {
		s.violate("request %d (%v of %q) never answered", id, r.api, r.p.id)
	}
	s.restart()
	s.settle()
	for id, v := range s.decided {
		s.violate("transaction of %q decided %s never completed", id, v.State)
	}
	return s.violations, s.summary()
}

// settle carries out every effect, without faults, for a minute of ticks.
func (s *sim) settle() {
	for range 60 {
		s.now += 1000
		s.c.Tick(s.now)
		s.drain()
		for len(s.appends) > 0 || len(s.markers) > 0 {
			for len(s.appends) > 0 {
				s.finishAppend(0, nil)
			}
			for len(s.markers) > 0 {
				s.finishMarkers(0, false)
			}
		}
	}
}

func (s *sim) violate(format string, args ...any) {
	s.violations = append(s.violations, fmt.Sprintf("at %d ms: ", s.now)+fmt.Sprintf(format, args...))
}

// step does one random thing.
func (s *sim) step() {
	switch r := s.rng.IntN(100); {
	case r < 5:
		s.initProducer()
	case r < 28:
		s.addPartitions()
	case r < 42:
		s.endTxn()
	case r < 46:
		s.verify()
	case r < 56:
		s.now += s.rng.Int64N(1500)
		s.c.Tick(s.now)
	case r < 57:
		s.now += 50_000 + s.rng.Int64N(40_000) // past transaction timeouts
		s.c.Tick(s.now)
	case r < 58 && s.rng.IntN(4) == 0:
		s.now += 10 * time.Minute.Milliseconds() // past transactional id expiration
		s.c.Tick(s.now)
	case r < 82:
		if len(s.appends) > 0 {
			var err error
			if s.rng.IntN(5) == 0 {
				err = []error{kafka.ErrNotEnoughReplicas, kafka.ErrNotLeaderOrFollower, kafka.ErrRequestTimedOut}[s.rng.IntN(3)]
			}
			s.finishAppend(s.rng.IntN(len(s.appends)), err)
		}
	case r < 96:
		if len(s.markers) > 0 {
			s.finishMarkers(s.rng.IntN(len(s.markers)), true)
		}
	case r < 98:
		s.restart() // a crash: effects in flight are lost, and their requests
	default:
		p := int32(s.rng.IntN(simPartitions)) // leadership moves and comes back
		s.c.Unload(p)
		s.drain()
		s.dropEffects(p)
		s.epoch++
		s.load(p)
	}
	s.drain()
}

// restart replaces the coordinator by a new one that loads every partition.
func (s *sim) restart() {
	var err error
	if s.c, err = New(s.ids, s.opts); err != nil {
		panic(err)
	}
	s.appends, s.markers, s.requests = nil, nil, map[uint64]*simRequest{}
	for _, p := range s.producers {
		p.waiting = false // their requests are lost
	}
	s.epoch++
	for p := range int32(simPartitions) {
		s.load(p)
	}
	s.drain()
}

func (s *sim) load(p int32) {
	if err := s.c.Load(p, s.epoch, s.logs[p], s.now); err != nil {
		s.violate("load %d: %v", p, err)
	}
	s.drain()
}

// dropEffects forgets the effects of partition p (unloaded).
func (s *sim) dropEffects(p int32) {
	s.appends = slices.DeleteFunc(s.appends, func(a Append) bool { return a.Partition == p })
	s.markers = slices.DeleteFunc(s.markers, func(m MarkerWrite) bool { return PartitionFor(m.TransactionalID, simPartitions) == p })
}

// producer returns a random producer instance — mostly the newest of its
// transactional id, sometimes a zombie — or nil.
func (s *sim) producer() *simProducer {
	if len(s.producers) == 0 {
		return nil
	}
	p := s.producers[s.rng.IntN(len(s.producers))]
	if s.rng.IntN(4) > 0 {
		for _, q := range slices.Backward(s.producers) {
			if q.id == p.id && q.ready && !q.fenced {
				p = q
				break
			}
		}
	}
	if p.waiting {
		return nil // a producer sends one request at a time
	}
	return p
}

func (s *sim) send(a api, p *simProducer, result Result) uint64 {
	p.waiting = true
	s.lastReq++
	s.requests[s.lastReq] = &simRequest{api: a, p: p, result: result}
	return s.lastReq
}

func (s *sim) initProducer() {
	ids := []string{"a", "b", "c", "d", "worn-0", "worn-1", "worn-2"}
	p := &simProducer{id: ids[s.rng.IntN(len(ids))], pid: -1, epoch: -1, tv: TransactionVersion(s.rng.IntN(3))}
	switch old := s.producer(); {
	case old != nil && !old.ready && s.rng.IntN(2) == 0: // a retry (after CONCURRENT_TRANSACTIONS)
		p = old
	case old != nil && old.ready && s.rng.IntN(3) == 0: // KIP-360: resume
		*p = *old
		p.fenced = false
		s.producers = append(s.producers, p)
	default:
		s.producers = append(s.producers, p)
	}
	req := InitProducerIDRequest{ID: s.send(apiInitProducerID, p, false), Version: 5, TransactionalID: p.id,
		TransactionTimeoutMs: 60_000, ProducerID: p.pid, ProducerEpoch: p.epoch}
	s.c.InitProducerID(req, s.now)
}

func (s *sim) addPartitions() {
	p := s.producer()
	if p == nil || !p.ready {
		return
	}
	if s.rng.IntN(5) == 0 {
		s.c.AddOffsets(AddOffsetsRequest{ID: s.send(apiAddOffsets, p, false), Version: 4, TransactionalID: p.id,
			ProducerID: p.pid, ProducerEpoch: p.epoch, GroupID: "g", TransactionVersion: p.tv}, s.now)
		return
	}
	var tps []kafka.TopicPartition
	for range 1 + s.rng.IntN(3) {
		tps = append(tps, kafka.TopicPartition{Topic: fmt.Sprint("t", s.rng.IntN(3)), Partition: int32(s.rng.IntN(3))})
	}
	s.c.AddPartitions(AddPartitionsRequest{ID: s.send(apiAddPartitions, p, false), Version: 3, TransactionalID: p.id,
		ProducerID: p.pid, ProducerEpoch: p.epoch, Partitions: tps, TransactionVersion: p.tv}, s.now)
}

func (s *sim) endTxn() {
	p := s.producer()
	if p == nil || !p.ready {
		return
	}
	r := Result(s.rng.IntN(3) > 0)
	s.c.EndTxn(EndTxnRequest{ID: s.send(apiEndTxn, p, r), Version: 5, TransactionalID: p.id, ProducerID: p.pid,
		ProducerEpoch: p.epoch, Result: r, TransactionVersion: p.tv}, s.now)
}

func (s *sim) verify() {
	p := s.producer()
	if p == nil || !p.ready {
		return
	}
	tp := kafka.TopicPartition{Topic: fmt.Sprint("t", s.rng.IntN(3)), Partition: int32(s.rng.IntN(3))}
	res := s.c.VerifyPartitions(p.id, p.pid, p.epoch, []kafka.TopicPartition{tp})[0]
	if res.Err != nil {
		return
	}
	v := s.latest[p.id]
	if v == nil || v.State != Ongoing || v.ProducerID != p.pid || v.ProducerEpoch != p.epoch || !includesAll(new(stateOf(v)), []kafka.TopicPartition{tp}) {
		s.violate("VerifyPartitions(%q, %d, %d, %s) said yes; the log has %+v", p.id, p.pid, p.epoch, tp, v)
	}
}

// drain takes the coordinator's Ready and checks it.
func (s *sim) drain() {
	rd := s.c.Ready()
	for _, a := range rd.Appends {
		for _, r := range a.Records {
			s.checkHandedOut(r)
		}
	}
	s.appends = append(s.appends, rd.Appends...)
	for _, m := range rd.Markers {
		d := s.decided[m.TransactionalID]
		switch {
		case d == nil:
			s.violate("markers %s for %q before its outcome is durable", m.Result, m.TransactionalID)
		case resultOf(d.State) != m.Result || d.ProducerID != m.ProducerID || d.ProducerEpoch != m.ProducerEpoch:
			s.violate("markers %s %d/%d for %q, decided %+v", m.Result, m.ProducerID, m.ProducerEpoch, m.TransactionalID, d)
		}
	}
	s.markers = append(s.markers, rd.Markers...)
	for _, a := range rd.Answers {
		s.checkAnswer(a)
	}
}

// checkHandedOut checks a record the coordinator asks to append: a
// Complete record only once every marker of the decided outcome is written.
func (s *sim) checkHandedOut(r Record) {
	id, _ := DecodeKey(r.Key)
	if r.Value == nil {
		return
	}
	v, err := DecodeValue(r.Value)
	if err != nil {
		s.violate("record of %q: %v", id, err)
		return
	}
	if d := s.decided[id]; v.State.completed() && d != nil {
		for _, tp := range stateOf(d).partitions {
			if !s.written[id][tp] {
				s.violate("%s of %q before its marker to %s is written", v.State, id, tp)
			}
		}
	}
}

// checkAnswer checks an answer and updates the producer it answers.
func (s *sim) checkAnswer(a Answer) {
	r := s.requests[a.Request]
	if r == nil {
		return // a request of a coordinator that crashed
	}
	delete(s.requests, a.Request)
	r.p.waiting = false
	if errors.Is(a.Err, kafka.ErrProducerFenced) || errors.Is(a.Err, kafka.ErrInvalidProducerIDMapping) {
		r.p.fenced = true
	}
	if a.Err != nil {
		return
	}
	if a.ProducerID >= 0 {
		if top, ok := s.epochs[a.ProducerID]; ok && a.ProducerEpoch < top {
			s.violate("answered epoch %d for producer id %d, which had %d", a.ProducerEpoch, a.ProducerID, top)
		}
	}
	switch r.api {
	case apiInitProducerID:
		r.p.pid, r.p.epoch, r.p.ready, r.p.fenced = a.ProducerID, a.ProducerEpoch, true, false
	case apiEndTxn:
		if v := s.latest[r.p.id]; v == nil || !(v.State.prepared() || v.State.completed()) || resultOf(v.State) != r.result {
			s.violate("EndTxn(%s) of %q answered OK; the log has %+v", r.result, r.p.id, v)
		}
		if r.p.tv.bumpsEpoch() {
			r.p.pid, r.p.epoch = a.ProducerID, a.ProducerEpoch
		}
	}
}

// finishAppend reports append i: durable when err is nil. Appends to one
// partition are reported in order: i stands for the first append of i's
// partition.
func (s *sim) finishAppend(i int, err error) {
	p := s.appends[i].Partition
	i = slices.IndexFunc(s.appends, func(a Append) bool { return a.Partition == p })
	a := s.appends[i]
	s.appends = slices.Delete(s.appends, i, i+1)
	if err == nil {
		for _, r := range a.Records {
			s.durable(p, r)
		}
	}
	s.c.AppendDone(a.ID, err, s.now)
	s.drain()
}

// durable adds r to partition p's log and checks it against what came
// before.
func (s *sim) durable(p int32, r Record) {
	s.logs[p] = append(s.logs[p], r)
	id, _ := DecodeKey(r.Key)
	d := s.decided[id]
	if r.Value == nil {
		if d != nil {
			s.violate("tombstone for %q while its outcome %s is not complete", id, d.State)
		}
		s.latest[id] = nil
		return
	}
	v, _ := DecodeValue(r.Value)
	s.latest[id] = &v
	if top, ok := s.epochs[v.ProducerID]; ok && v.ProducerEpoch < top {
		s.violate("%q: epoch of producer id %d went back from %d to %d", id, v.ProducerID, top, v.ProducerEpoch)
	} else {
		s.epochs[v.ProducerID] = v.ProducerEpoch
	}
	switch {
	case d != nil && !(v.State.completed() && resultOf(v.State) == resultOf(d.State)):
		s.violate("%q decided %s, then %s was written", id, d.State, v.State)
	case d == nil && v.State.completed():
		s.violate("%q: %s without a Prepare record", id, v.State)
	case v.State.prepared():
		s.decided[id], s.written[id] = &v, map[kafka.TopicPartition]bool{}
	case v.State.completed():
		delete(s.decided, id)
	}
}

// finishMarkers reports marker write i: with faults, each partition
// written, failed, or left for later; without, all written.
func (s *sim) finishMarkers(i int, faults bool) {
	m := &s.markers[i]
	var results []MarkerResult
	var left []kafka.TopicPartition
	for _, tp := range m.Partitions {
		var err error
		if faults {
			switch r := s.rng.IntN(100); {
			case r < 20:
				left = append(left, tp)
				continue
			case r < 35:
				err = kafka.ErrNotLeaderOrFollower
			case r < 36:
				err = kafka.ErrTransactionCoordinatorFenced
			}
		}
		if err == nil && s.decided[m.TransactionalID] != nil {
			if d := s.decided[m.TransactionalID]; d.ProducerID == m.ProducerID && d.ProducerEpoch == m.ProducerEpoch {
				s.written[m.TransactionalID][tp] = true
			}
		}
		results = append(results, MarkerResult{tp, err})
	}
	id := m.ID
	if m.Partitions = left; len(left) == 0 {
		s.markers = slices.Delete(s.markers, i, i+1)
	}
	if faults && s.rng.IntN(10) == 0 { // a duplicated answer
		results = append(results, results...)
	}
	s.c.MarkersDone(id, results, s.now)
	s.drain()
}

func (a api) String() string {
	return [...]string{"InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn"}[a]
}

// summary counts the records written, by state.
func (s *sim) summary() string {
	var n [PrepareEpochFence + 1]int
	tombstones := 0
	for _, l := range s.logs {
		for _, r := range l {
			if v, err := DecodeValue(r.Value); err == nil {
				n[v.State]++
			} else {
				tombstones++
			}
		}
	}
	return fmt.Sprintf("records: %d Empty, %d Ongoing, %d PrepareCommit, %d PrepareAbort, %d CompleteCommit, %d CompleteAbort, %d tombstones",
		n[Empty], n[Ongoing], n[PrepareCommit], n[PrepareAbort], n[CompleteCommit], n[CompleteAbort], tombstones)
}
