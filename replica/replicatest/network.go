// Package replicatest runs replicas of a partition against each other in
// memory, deterministically: a Network that loses, delays, duplicates and
// reorders messages and cuts links under a seed, and a Cluster that drives
// replica.Replica state machines over logs on vfs.MemFS, with a test
// controller, crashes that keep only synced bytes, and history checks.
//
// Time is ticks; nothing here sleeps or reads a clock, so a failing run
// replays exactly from its seed.
package replicatest

import (
	"cmp"
	"math/rand/v2"
	"slices"

	"github.com/partlog/partlog/replica"
)

// Any matches every node or message type in a Rule.
const Any = -1

// Faults is what a link does to the messages crossing it.
type Faults struct {
	// Drop is the probability that a message is lost.
	Drop float64
	// Duplicate is the probability that a message is delivered twice
	// (the copy with its own delay).
	Duplicate float64
	// MinDelay and MaxDelay bound a message's delay in ticks; each message
	// draws its own, so that messages overtake each other.
	MinDelay, MaxDelay int64
}

// Rule applies Faults to the messages from From to To of type Type; Any
// (-1, or 0 for Type) matches all. The last rule that matches a message
// decides its faults.
type Rule struct {
	// From and To match the sending and receiving nodes.
	From, To int32
	// Type matches the message type.
	Type replica.MessageType
	// Faults are what befalls a matching message.
	Faults Faults
}

// Verdict is what a Network's filter does with a message.
type Verdict uint8

// The verdicts.
const (
	// Pass lets the message through to the fault rules.
	Pass Verdict = iota
	// Drop loses the message.
	Drop
)

// Network carries Messages between nodes with faults chosen by a seeded
// random source. It is not safe for concurrent use.
type Network struct {
	rng     *rand.Rand
	now     int64
	nextSeq uint64
	queue   []envelope
	rules   []Rule
	cut     map[[2]int32]bool
	paused  map[int32]bool
	filter  func(replica.Message) Verdict

	// Sent, Dropped and Duplicated count messages.
	Sent, Dropped, Duplicated int
}

type envelope struct {
	at  int64
	seq uint64
	msg replica.Message
}

// NewNetwork returns a network with no faults whose random choices follow
// seed.
func NewNetwork(seed int64) *Network {
	return &Network{
		rng:    rand.New(rand.NewPCG(uint64(seed), 0x6e6574776f726b)), // "network"
		cut:    map[[2]int32]bool{},
		paused: map[int32]bool{},
	}
}

// AddRule adds a fault rule; later rules win.
func (n *Network) AddRule(r Rule) { n.rules = append(n.rules, r) }

// ClearRules removes every fault rule.
func (n *Network) ClearRules() { n.rules = nil }

// SetFilter sets a function that sees every message sent and may drop it,
// for tests that lose one chosen message. Nil removes it.
func (n *Network) SetFilter(f func(replica.Message) Verdict) { n.filter = f }

// Cut loses every message from one node to another (a one-way partition)
// until Heal.
func (n *Network) Cut(from, to int32) { n.cut[[2]int32{from, to}] = true }

// Heal undoes Cut(from, to).
func (n *Network) Heal(from, to int32) { delete(n.cut, [2]int32{from, to}) }

// Partition cuts a from b both ways.
func (n *Network) Partition(a, b int32) {
	n.Cut(a, b)
	n.Cut(b, a)
}

// Isolate cuts id from every node in others, both ways.
func (n *Network) Isolate(id int32, others ...int32) {
	for _, o := range others {
		if o != id {
			n.Partition(id, o)
		}
	}
}

// HealAll removes every cut.
func (n *Network) HealAll() { clear(n.cut) }

// Pause holds every message bound for id until Resume; a Cluster also
// stops ticking and stepping a paused node, as if its process were
// stopped (SIGSTOP).
func (n *Network) Pause(id int32) { n.paused[id] = true }

// Resume undoes Pause.
func (n *Network) Resume(id int32) { delete(n.paused, id) }

// Paused reports whether id is paused.
func (n *Network) Paused(id int32) bool { return n.paused[id] }

// Now returns the network's clock in ticks.
func (n *Network) Now() int64 { return n.now }

// Tick advances the clock by one tick.
func (n *Network) Tick() { n.now++ }

// Send puts m on the wire: the filter and the fault rules decide whether
// it arrives, when, and how often. A cut link loses it at delivery.
func (n *Network) Send(m replica.Message) {
	n.Sent++
	if n.filter != nil && n.filter(m) == Drop {
		n.Dropped++
		return
	}
	f := n.faults(m)
	if f.Drop > 0 && n.rng.Float64() < f.Drop {
		n.Dropped++
		return
	}
	n.enqueue(m, f)
	if f.Duplicate > 0 && n.rng.Float64() < f.Duplicate {
		n.Duplicated++
		n.enqueue(m, f)
	}
}

func (n *Network) faults(m replica.Message) Faults {
	var f Faults
	for _, r := range n.rules {
		if (r.From == Any || r.From == m.From) && (r.To == Any || r.To == m.To) && (r.Type == 0 || r.Type == m.Type) {
			f = r.Faults
		}
	}
	return f
}

func (n *Network) enqueue(m replica.Message, f Faults) {
	delay := f.MinDelay
	if f.MaxDelay > f.MinDelay {
		delay += n.rng.Int64N(f.MaxDelay - f.MinDelay + 1)
	}
	n.nextSeq++
	n.queue = append(n.queue, envelope{at: n.now + delay, seq: n.nextSeq, msg: m})
}

// Deliver removes and returns the messages due now, in the order they are
// due (ties in the order sent). Messages for a paused node stay queued;
// messages over a cut link are lost.
func (n *Network) Deliver() []replica.Message {
	var due []envelope
	keep := n.queue[:0]
	for _, e := range n.queue {
		switch {
		case e.at > n.now || n.paused[e.msg.To]:
			keep = append(keep, e)
		case n.cut[[2]int32{e.msg.From, e.msg.To}]:
			n.Dropped++
		default:
			due = append(due, e)
		}
	}
	n.queue = keep
	slices.SortFunc(due, func(a, b envelope) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return cmp.Compare(a.seq, b.seq)
	})
	out := make([]replica.Message, len(due))
	for i, e := range due {
		out[i] = e.msg
	}
	return out
}

// InFlight returns how many messages are queued.
func (n *Network) InFlight() int { return len(n.queue) }

// DropAll loses every queued message.
func (n *Network) DropAll() {
	n.Dropped += len(n.queue)
	n.queue = nil
}
