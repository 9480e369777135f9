package group

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
)

// consumerSimSeed picks one seed of TestConsumerGroupSimulation to run.
var consumerSimSeed = flag.Uint64("consumer.seed", 0, "seed of TestConsumerGroupSimulation; 0 runs seeds 1 to 40")

// TestConsumerGroupSimulation runs seeded random simulations of a group
// whose members join, leave, crash, come back, change subscriptions and
// lose answers while topics grow, each member a simple client that
// revokes what it is told to (sometimes late) and heartbeats. After every
// step, no partition is held by two members, nor owned by two clients,
// and epochs never go backwards; once the churn stops and every member
// has heartbeated a few times, the group is Stable and every subscribed
// partition is assigned exactly once; and replaying the group's records
// gives a group that answers as it does.
func TestConsumerGroupSimulation(t *testing.T) {
	seeds := []uint64{*consumerSimSeed}
	if *consumerSimSeed == 0 {
		seeds = seeds[:0]
		for s := range uint64(40) {
			seeds = append(seeds, s+1)
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := newConsumerSim(t, seed)
			defer func() {
				if t.Failed() {
					t.Logf("seed %d (rerun with -run TestConsumerGroupSimulation -consumer.seed=%d)", seed, seed)
				}
			}()
			s.run(400)
		})
	}
}

// simClient is a consumer speaking the consumer protocol to the group.
type simClient struct {
	id       string
	instance string // "" for a dynamic member
	names    []string
	regex    string
	assignor string

	joined     bool  // else its next heartbeat joins (epoch 0)
	epoch      int32 // the epoch it last heard
	owned      map[string][]int32
	sentOwned  map[string][]int32 // what it last told the coordinator it owns
	subChanged bool               // its next heartbeat sends the subscription
	full       bool               // its next heartbeat sends every field (after a lost answer)
	// pending is an assignment the client has not applied yet; it does
	// at applyAt (a slow revocation).
	pending map[string][]int32
	applyAt time.Time
	lastHB  time.Time
	gone    bool // fenced for good (another member took its instance id)
}

// consumerSim is one run of the simulation: the group, its clients, and
// the epochs last seen.
type consumerSim struct {
	*consumerHarness
	t       *testing.T
	rng     *rand.Rand
	clients map[string]*simClient // the running clients
	crashed []*simClient          // clients that crashed and may restart
	freeIDs []string              // instance ids a new static client may take
	next    int

	groupEpoch, targetEpoch int32
	memberEpochs            map[*consumerMember]int32
}

// newConsumerSim returns a simulation of seed, with two topics and no
// clients.
func newConsumerSim(t *testing.T, seed uint64) *consumerSim {
	s := &consumerSim{
		consumerHarness: newConsumerHarness(t, map[string]int32{"t0": 3, "t1": 2}),
		t:               t,
		rng:             rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		clients:         map[string]*simClient{},
		memberEpochs:    map[*consumerMember]int32{},
	}
	s.config.SessionTimeout = 10 * time.Second
	return s
}

// run runs steps random steps, then lets the group settle and checks it.
func (s *consumerSim) run(steps int) {
	for step := range steps {
		s.step()
		s.check()
		if step%25 == 0 {
			s.checkReplay()
		}
	}
	s.settle()
}

// step does one random thing.
func (s *consumerSim) step() {
	switch r := s.rng.IntN(100); {
	case r < 35:
		if c := s.anyClient(); c != nil {
			s.heartbeat(c, true)
		}
	case r < 45:
		if len(s.clients) < 6 {
			s.start(s.newClient())
		}
	case r < 50:
		if c := s.anyClient(); c != nil && c.joined {
			s.leave(c)
		}
	case r < 55:
		if c := s.anyClient(); c != nil {
			delete(s.clients, c.id)
			s.crashed = append(s.crashed, c)
		}
	case r < 58:
		if len(s.crashed) > 0 && len(s.clients) < 6 {
			i := s.rng.IntN(len(s.crashed))
			old := s.crashed[i]
			s.crashed = slices.Delete(s.crashed, i, i+1)
			if _, running := s.clients[old.id]; !running {
				c := &simClient{id: old.id, instance: old.instance, names: old.names, regex: old.regex, assignor: old.assignor}
				s.start(c)
			}
		}
	case r < 65:
		if c := s.anyClient(); c != nil {
			s.subscribe(c)
			c.subChanged = true
		}
	case r < 69:
		s.grow()
	default:
		s.advance(time.Duration(s.rng.IntN(1500)) * time.Millisecond)
	}
}

// anyClient returns a random running client, nil if none.
func (s *consumerSim) anyClient() *simClient {
	if len(s.clients) == 0 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(s.clients))
	return s.clients[ids[s.rng.IntN(len(ids))]]
}

// newClient returns a new client, static one time in three.
func (s *consumerSim) newClient() *simClient {
	s.next++
	c := &simClient{id: fmt.Sprintf("c%d", s.next)}
	if s.rng.IntN(3) == 0 {
		if len(s.freeIDs) > 0 && s.rng.IntN(2) == 0 {
			c.instance = s.freeIDs[0]
			s.freeIDs = s.freeIDs[1:]
		} else {
			c.instance = fmt.Sprintf("i%d", s.next)
		}
	}
	s.subscribe(c)
	c.assignor = []string{"", "", "uniform", "range"}[s.rng.IntN(4)]
	return c
}

// start runs client c: it joins at once.
func (s *consumerSim) start(c *simClient) {
	s.clients[c.id] = c
	s.heartbeat(c, true)
}

// subscribe draws c a new subscription: topics by name (some that may
// not exist yet), a regex, or both.
func (s *consumerSim) subscribe(c *simClient) {
	c.names, c.regex = nil, ""
	for _, tn := range []string{"t0", "t1", "t2", "t3"} {
		if s.rng.IntN(2) == 0 {
			c.names = append(c.names, tn)
		}
	}
	if s.rng.IntN(3) == 0 {
		c.regex = []string{"t[0-2]", "t.*", "t[3-9]"}[s.rng.IntN(3)]
	}
	if c.names == nil {
		c.names = []string{}
	}
}

// grow adds a partition to a topic, or a topic.
func (s *consumerSim) grow() {
	topics := maps.Clone(s.topics)
	if s.rng.IntN(3) == 0 && len(topics) < 5 {
		topics[fmt.Sprintf("t%d", len(topics))] = int32(1 + s.rng.IntN(3))
	} else {
		names := slices.Sorted(maps.Keys(topics))
		tn := names[s.rng.IntN(len(names))]
		if topics[tn] < 8 {
			topics[tn] += int32(1 + s.rng.IntN(2))
		}
	}
	s.setTopics(topics)
}

// advance moves the clock, ticks, applies the slow clients' assignments
// that are due and heartbeats the clients that have not for 3s.
func (s *consumerSim) advance(d time.Duration) {
	s.consumerHarness.advance(d)
	for _, id := range slices.Sorted(maps.Keys(s.clients)) {
		c := s.clients[id]
		if c.pending != nil && !s.now.Before(c.applyAt) {
			c.owned, c.pending = c.pending, nil
		}
		if s.now.Sub(c.lastHB) >= 3*time.Second {
			s.heartbeat(c, true)
		}
	}
}

// request returns c's next heartbeat.
func (s *consumerSim) request(c *simClient) consumerHeartbeat {
	if !c.joined {
		c.owned, c.pending = nil, nil
		req := consumerHeartbeat{
			MemberID: c.id, MemberEpoch: joinEpoch, RebalanceTimeout: ptr(5 * time.Second),
			SubscribedTopicNames: slices.Clone(c.names), SubscribedTopicRegex: ptr(c.regex),
			ServerAssignor: ptr(c.assignor), OwnedPartitions: map[string][]int32{},
		}
		if c.instance != "" {
			req.InstanceID = ptr(c.instance)
		}
		return req
	}
	req := consumerHeartbeat{MemberID: c.id, MemberEpoch: c.epoch}
	// Owned partitions go when they changed, else now and then.
	if c.full || !equalPartitions(c.owned, c.sentOwned) || c.sentOwned == nil || s.rng.IntN(4) == 0 {
		req.OwnedPartitions = clonePartitions(c.owned)
		if req.OwnedPartitions == nil {
			req.OwnedPartitions = map[string][]int32{}
		}
	}
	if c.subChanged || c.full {
		req.SubscribedTopicNames, req.SubscribedTopicRegex = slices.Clone(c.names), ptr(c.regex)
	}
	if c.full {
		req.RebalanceTimeout, req.ServerAssignor = ptr(5*time.Second), ptr(c.assignor)
	}
	if c.instance != "" && (c.full || s.rng.IntN(2) == 0) {
		req.InstanceID = ptr(c.instance)
	}
	return req
}

// heartbeat sends c's heartbeat; mayLose lets the answer be lost.
func (s *consumerSim) heartbeat(c *simClient, mayLose bool) {
	req := s.request(c)
	a, err := s.send(req)
	c.lastHB = s.now
	if err != nil {
		switch {
		case errors.Is(err, kafka.ErrFencedMemberEpoch), errors.Is(err, kafka.ErrUnknownMemberID):
			// The member lost its partitions: it rejoins.
			c.joined, c.epoch, c.owned, c.sentOwned, c.pending = false, 0, nil, nil, nil
		case errors.Is(err, kafka.ErrUnreleasedInstanceID):
			// The instance id is still another member's: try later.
		case errors.Is(err, kafka.ErrFencedInstanceID):
			// Another member took the instance id: this one stops.
			c.gone = true
			c.owned, c.pending = nil, nil
			delete(s.clients, c.id)
		default:
			s.t.Fatalf("heartbeat %+v: %v", req, err)
		}
		return
	}
	if req.OwnedPartitions != nil {
		c.sentOwned = clonePartitions(req.OwnedPartitions)
		if c.sentOwned == nil {
			c.sentOwned = map[string][]int32{}
		}
	}
	if mayLose && s.rng.IntN(20) == 0 {
		// The answer is lost: the client sends a full request next.
		c.full = true
		return
	}
	if c.joined && req.MemberEpoch != joinEpoch && a.MemberEpoch < c.epoch {
		s.t.Fatalf("%s's epoch went from %d to %d", c.id, c.epoch, a.MemberEpoch)
	}
	c.joined, c.epoch, c.full, c.subChanged = true, a.MemberEpoch, false, false
	if a.Assignment != nil {
		if mayLose && s.rng.IntN(4) == 0 {
			c.pending, c.applyAt = clonePartitions(a.Assignment), s.now.Add(time.Duration(s.rng.IntN(7000))*time.Millisecond)
			if c.pending == nil {
				c.pending = map[string][]int32{}
			}
		} else {
			c.owned, c.pending = clonePartitions(a.Assignment), nil
		}
	}
}

// leave makes c leave: a static member with -2 one time in two (its
// instance id is then free for a new client), else with -1.
func (s *consumerSim) leave(c *simClient) {
	req := consumerHeartbeat{MemberID: c.id, MemberEpoch: leaveEpoch}
	if c.instance != "" {
		req.InstanceID = ptr(c.instance)
		if s.rng.IntN(2) == 0 {
			req.MemberEpoch = staticLeaveEpoch
		}
	}
	_, err := s.send(req)
	switch {
	case err == nil:
		if req.MemberEpoch == staticLeaveEpoch {
			s.freeIDs = append(s.freeIDs, c.instance)
		}
	case errors.Is(err, kafka.ErrUnknownMemberID), errors.Is(err, kafka.ErrFencedInstanceID):
	default:
		s.t.Fatalf("leave %+v: %v", req, err)
	}
	delete(s.clients, c.id)
}

// check checks, after a step, that running clients that are members own
// disjoint partitions, each held by their member, and that epochs never
// went backwards.
func (s *consumerSim) check() {
	s.t.Helper()
	g := s.g
	owner := map[kafka.TopicPartition]string{}
	for _, id := range slices.Sorted(maps.Keys(s.clients)) {
		c := s.clients[id]
		m := g.members[id]
		if m == nil || !c.joined {
			continue
		}
		held := unionPartitions(m.assigned, m.pendingRevocation)
		for tn, ps := range c.owned {
			for _, p := range ps {
				tp := kafka.TopicPartition{Topic: tn, Partition: p}
				if o, ok := owner[tp]; ok {
					s.t.Fatalf("%s owned by clients %s and %s", tp, o, id)
				}
				owner[tp] = id
				if !hasPartition(held, tn, p) {
					s.t.Fatalf("client %s owns %s, which its member does not hold (%v, pending %v)", id, tp, m.assigned, m.pendingRevocation)
				}
			}
		}
	}
	if g.groupEpoch < s.groupEpoch || g.targetEpoch < s.targetEpoch {
		s.t.Fatalf("epochs went back: group %d → %d, target %d → %d", s.groupEpoch, g.groupEpoch, s.targetEpoch, g.targetEpoch)
	}
	s.groupEpoch, s.targetEpoch = g.groupEpoch, g.targetEpoch
	if g.targetEpoch > g.groupEpoch {
		s.t.Fatalf("target epoch %d ahead of the group's %d", g.targetEpoch, g.groupEpoch)
	}
	seen := map[*consumerMember]int32{}
	for _, m := range g.members {
		if m.memberEpoch > g.targetEpoch {
			s.t.Fatalf("member %s at epoch %d, ahead of the target's %d", m.id, m.memberEpoch, g.targetEpoch)
		}
		if m.memberEpoch == staticLeaveEpoch {
			continue
		}
		if last, ok := s.memberEpochs[m]; ok && m.memberEpoch < last {
			s.t.Fatalf("member %s went from epoch %d to %d", m.id, last, m.memberEpoch)
		}
		seen[m] = m.memberEpoch
	}
	s.memberEpochs = seen
}

// settle stops the churn: slow clients apply what they hold, and every
// running client heartbeats each second for 30 seconds, its answers
// applied at once. Then the group must be Stable with every subscribed
// partition assigned exactly once, and a replay of its records must
// answer the same heartbeats the same way.
func (s *consumerSim) settle() {
	for _, c := range s.clients {
		if c.pending != nil {
			c.owned, c.pending = c.pending, nil
		}
	}
	for range 30 {
		s.consumerHarness.advance(time.Second)
		for _, id := range slices.Sorted(maps.Keys(s.clients)) {
			if c := s.clients[id]; c != nil {
				s.heartbeat(c, false)
			}
		}
		s.check()
	}

	g := s.g
	if st := g.state(); st != consumerGroupStable && st != consumerGroupEmpty {
		s.t.Fatalf("group %v after settling: %+v", st, g.describe())
	}
	if len(g.members) != len(s.clients) {
		s.t.Fatalf("%d members, %d clients: %+v", len(g.members), len(s.clients), g.describe())
	}
	holder := map[kafka.TopicPartition]string{}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		if len(m.pendingRevocation) > 0 || !equalPartitions(m.assigned, g.target[id]) {
			s.t.Fatalf("member %s has %v, pending %v, target %v", id, m.assigned, m.pendingRevocation, g.target[id])
		}
		if c := s.clients[id]; !equalPartitions(c.owned, m.assigned) {
			s.t.Fatalf("client %s owns %v, its member has %v", id, c.owned, m.assigned)
		}
		subscribed := g.subscribedTopics(m)
		for tn, ps := range m.assigned {
			if !slices.Contains(subscribed, tn) {
				s.t.Fatalf("member %s has %s, which it does not subscribe to", id, tn)
			}
			for _, p := range ps {
				holder[kafka.TopicPartition{Topic: tn, Partition: p}] = id
			}
		}
	}
	for _, m := range g.members {
		for _, tn := range g.subscribedTopics(m) {
			for p := range s.topics[tn] {
				if _, ok := holder[kafka.TopicPartition{Topic: tn, Partition: p}]; !ok {
					s.t.Fatalf("%s-%d is subscribed but not assigned: %+v", tn, p, g.describe())
				}
			}
		}
	}

	// The replayed group answers as the live one.
	r := s.checkReplay()
	for range 3 {
		s.now = s.now.Add(time.Second)
		for _, id := range slices.Sorted(maps.Keys(s.clients)) {
			c := s.clients[id]
			req := s.request(c)
			la, lrecs, lerr := s.g.heartbeat(req, s.now)
			ra, rrecs, rerr := r.heartbeat(req, s.now)
			if !reflect.DeepEqual(la, ra) || !reflect.DeepEqual(lrecs, rrecs) || fmt.Sprint(lerr) != fmt.Sprint(rerr) {
				s.t.Fatalf("heartbeat %+v:\nlive     %+v %+v %v\nreplayed %+v %+v %v", req, la, lrecs, lerr, ra, rrecs, rerr)
			}
		}
	}
	if got, want := r.describe(), s.g.describe(); !reflect.DeepEqual(got, want) {
		s.t.Fatalf("replayed group:\n%+v\nlive group:\n%+v", got, want)
	}
}
