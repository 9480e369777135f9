package group

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// shareSimSeed picks one seed of TestShareGroupSimulation to run.
var shareSimSeed = flag.Uint64("share.seed", 0, "seed of TestShareGroupSimulation; 0 runs seeds 1 to 40")

// TestShareGroupSimulation runs seeded random simulations of a share group
// whose members join, leave, crash, lose answers and change
// subscriptions while topics grow and the broker confirms share-state
// initializations late (or has them fail). After every step, the group
// and target epochs never go back, nor does a running client's epoch;
// every few steps, replaying the records gives the same group. Once the
// churn stops and every client has heartbeated a few times, the group is
// Stable, every member has its target, and every partition of a
// subscribed topic is assigned to at least one member.
func TestShareGroupSimulation(t *testing.T) {
	seeds := []uint64{*shareSimSeed}
	if *shareSimSeed == 0 {
		seeds = seeds[:0]
		for s := range uint64(40) {
			seeds = append(seeds, s+1)
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("seed %d (rerun with -run TestShareGroupSimulation -share.seed=%d)", seed, seed)
				}
			}()
			s := &shareSim{shareHarness: newShareHarness(t, map[string]int32{"t0": 3, "t1": 2}),
				rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), clients: map[string]*shareSimClient{}}
			s.autoInit = false
			s.run(300)
		})
	}
}

// shareSimClient is a share consumer.
type shareSimClient struct {
	id     string
	topics []string
	joined bool  // else its next heartbeat joins
	epoch  int32 // the epoch it last heard
	resub  bool  // its next heartbeat sends its subscription
}

type shareSim struct {
	*shareHarness
	rng     *rand.Rand
	clients map[string]*shareSimClient
	next    int
	// pending are initializations asked for and not yet confirmed.
	pending []map[string][]int32

	groupEpoch, targetEpoch int32
}

func (s *shareSim) run(steps int) {
	for step := range steps {
		s.step()
		s.checkEpochs()
		if step%20 == 0 {
			s.checkReplay()
		}
	}
	s.settle()
}

func (s *shareSim) anyClient() *shareSimClient {
	if len(s.clients) == 0 {
		return nil
	}
	ids := slices.Sorted(mapKeys(s.clients))
	return s.clients[ids[s.rng.IntN(len(ids))]]
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (s *shareSim) randomTopics() []string {
	switch s.rng.IntN(3) {
	case 0:
		return []string{"t0"}
	case 1:
		return []string{"t1"}
	}
	return []string{"t0", "t1"}
}

func (s *shareSim) step() {
	switch r := s.rng.IntN(100); {
	case r < 40:
		if c := s.anyClient(); c != nil {
			s.heartbeat(c)
		}
	case r < 52:
		s.next++
		c := &shareSimClient{id: fmt.Sprintf("m%d", s.next), topics: s.randomTopics()}
		s.clients[c.id] = c
		s.heartbeat(c)
	case r < 58:
		if c := s.anyClient(); c != nil { // leaves
			if c.joined {
				s.ok(shareBeat(c.id, -1))
			}
			delete(s.clients, c.id)
		}
	case r < 63:
		if c := s.anyClient(); c != nil { // crashes: its session expires
			delete(s.clients, c.id)
		}
	case r < 68:
		if c := s.anyClient(); c != nil { // loses an answer
			s.heartbeatLost(c)
		}
	case r < 74:
		if c := s.anyClient(); c != nil {
			c.topics, c.resub = s.randomTopics(), true
		}
	case r < 77:
		grown := map[string]int32{}
		for n, info := range s.topics {
			grown[n] = info.Partitions
		}
		grown[[]string{"t0", "t1"}[s.rng.IntN(2)]]++
		s.setTopics(grown)
	case r < 90:
		if len(s.pending) > 0 { // the share coordinator answers
			i := s.rng.IntN(len(s.pending))
			p := s.pending[i]
			s.pending = slices.Delete(s.pending, i, i+1)
			if s.rng.IntN(5) == 0 {
				s.records = append(s.records, s.g.markUninitialized(p)...)
			} else {
				s.records = append(s.records, s.g.markInitialized(p)...)
			}
		}
	default:
		s.advance(time.Duration(s.rng.IntN(3000)) * time.Millisecond)
		for id, c := range s.clients {
			if c.joined && s.g.members[id] == nil {
				c.joined = false // fenced: it rejoins
			}
		}
	}
}

// heartbeat sends c's heartbeat and applies the answer.
func (s *shareSim) heartbeat(c *shareSimClient) {
	s.t.Helper()
	req := shareBeat(c.id, c.epoch)
	if !c.joined {
		req = shareJoin(c.id, c.topics...)
		req.MemberEpoch = 0
	} else if c.resub {
		req.SubscribedTopicNames = slices.Clone(c.topics)
	}
	a, err := s.send(req)
	if err != nil {
		// Fenced (a rejoin Kafka refuses until the member's session
		// expires) or unknown (expired): the client starts over.
		c.joined, c.epoch = false, 0
		return
	}
	if a.MemberEpoch < c.epoch {
		s.t.Fatalf("client %s went from epoch %d to %d", c.id, c.epoch, a.MemberEpoch)
	}
	c.joined, c.epoch, c.resub = true, a.MemberEpoch, false
	if a.Initialize != nil {
		s.pending = append(s.pending, a.Initialize)
	}
}

// heartbeatLost sends c's heartbeat and drops the answer.
func (s *shareSim) heartbeatLost(c *shareSimClient) {
	req := shareBeat(c.id, c.epoch)
	if !c.joined {
		req = shareJoin(c.id, c.topics...)
	}
	a, err := s.send(req)
	if err == nil && a.Initialize != nil {
		s.pending = append(s.pending, a.Initialize)
	}
}

func (s *shareSim) checkEpochs() {
	s.t.Helper()
	if s.g.groupEpoch < s.groupEpoch || s.g.targetEpoch < s.targetEpoch {
		s.t.Fatalf("epochs went back: group %d→%d, target %d→%d", s.groupEpoch, s.g.groupEpoch, s.targetEpoch, s.g.targetEpoch)
	}
	s.groupEpoch, s.targetEpoch = s.g.groupEpoch, s.g.targetEpoch
	if s.g.targetEpoch > s.g.groupEpoch {
		s.t.Fatalf("target epoch %d ahead of group epoch %d", s.g.targetEpoch, s.g.groupEpoch)
	}
}

func (s *shareSim) checkReplay() {
	s.t.Helper()
	if len(s.records) == 0 {
		return // nobody joined yet
	}
	if got, want := s.replayed().describe(), s.g.describe(); !reflect.DeepEqual(got, want) {
		s.t.Fatalf("replayed group differs:\n got %+v\nwant %+v", got, want)
	}
}

// settle stops the churn: pending initializations are confirmed, and
// every client heartbeats until nothing changes.
func (s *shareSim) settle() {
	s.t.Helper()
	s.autoInit = true
	for _, p := range s.pending {
		s.records = append(s.records, s.g.markInitialized(p)...)
	}
	s.pending = nil
	s.advance(s.config.SessionTimeout + time.Second) // crashed members expire
	for range 4 {
		for _, id := range slices.Sorted(mapKeys(s.clients)) {
			s.heartbeat(s.clients[id])
			s.checkEpochs()
		}
	}
	s.checkReplay()
	want := shareGroupEmpty
	if len(s.clients) > 0 {
		want = shareGroupStable
	}
	if s.g.state() != want || len(s.g.members) != len(s.clients) {
		s.t.Fatalf("group is %v with %d members; want %v with %d", s.g.state(), len(s.g.members), want, len(s.clients))
	}
	subscribed := map[string]bool{}
	for _, m := range s.g.members {
		if m.memberEpoch != s.g.targetEpoch || !equalPartitions(m.assigned, s.g.target[m.id]) {
			s.t.Fatalf("member %s at epoch %d with %v; target %d: %v", m.id, m.memberEpoch, m.assigned, s.g.targetEpoch, s.g.target[m.id])
		}
		for _, t := range m.subscribedTopicNames {
			subscribed[t] = true
		}
	}
	for t := range subscribed {
		for p := range s.topics[t].Partitions {
			held := false
			for _, m := range s.g.members {
				held = held || hasPartition(m.assigned, t, p)
			}
			if !held {
				s.t.Fatalf("%s-%d is assigned to no member", t, p)
			}
		}
	}
}
