package group

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// member is one member of a group.
type member struct {
	id, instanceID       string
	clientID, clientHost string
	sessionTimeout       time.Duration
	rebalanceTimeout     time.Duration
	protocols            []transport.JoinGroupProtocol
	assignment           []byte
	// lastHeartbeat is when the member was last heard from.
	lastHeartbeat time.Time
	// joinWait and syncWait answer a JoinGroup or SyncGroup that waits
	// for the rebalance; nil when none waits.
	joinWait func(*transport.JoinGroupResponse)
	syncWait func(*transport.SyncGroupResponse)
}

// metadata returns the member's metadata for protocol.
func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// failWaits answers the JoinGroup and SyncGroup the member waits in, if
// any, with err.
func (m *member) failWaits(err error) {
	if m.joinWait != nil {
		m.joinWait(&transport.JoinGroupResponse{Err: err, MemberID: m.id, GenerationID: transport.NoGeneration})
		m.joinWait = nil
	}
	if m.syncWait != nil {
		m.syncWait(&transport.SyncGroupResponse{Err: err})
		m.syncWait = nil
	}
}

// sameProtocols reports whether ps is what the member joined with.
func (m *member) sameProtocols(ps []transport.JoinGroupProtocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b transport.JoinGroupProtocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
}

// group is one group's state: Kafka's GroupMetadata.
type group struct {
	id        string
	partition int32
	state     State
	stateTime time.Time

	protocolType string
	protocol     string
	generation   int32
	leader       string
	// members in the order they joined; the first becomes leader when
	// the group needs a new one.
	members []*member
	// rebalanceDeadline is when a PreparingRebalance stops waiting for
	// members to rejoin.
	rebalanceDeadline time.Time
	// joinsUntil, while not zero, is when the first rebalance of a group
	// that was Empty may complete: it waits for more members to join
	// (group.initial.rebalance.delay.ms), each new one moving it later,
	// up to rebalanceDeadline.
	joinsUntil time.Time

	offsets map[kafka.TopicPartition]OffsetValue
	// consumer, when set, makes the group one of the consumer group
	// protocol (KIP-848): its members and assignments are there, and the
	// classic fields above stay empty.
	consumer *consumerGroup
	// share, when set, makes the group a share group (KIP-932): its
	// members and assignments are there, and the classic fields above
	// stay empty.
	share *shareGroup
}

func newGroup(id string, partition int32, now time.Time) *group {
	return &group{id: id, partition: partition, state: Empty, stateTime: now, offsets: map[kafka.TopicPartition]OffsetValue{}}
}

// sortedPartitions returns the partitions g has offsets for, by topic and
// partition.
func (g *group) sortedPartitions() []kafka.TopicPartition {
	return slices.SortedFunc(maps.Keys(g.offsets), compareTP)
}

func (g *group) member(id string) *member {
	for _, m := range g.members {
		if m.id == id {
			return m
		}
	}
	return nil
}

// memberOrNil is member, on a group that may be nil.
func (g *group) memberOrNil(id string) *member {
	if g == nil {
		return nil
	}
	return g.member(id)
}

func (g *group) memberByInstance(instanceID string) *member {
	if instanceID == "" {
		return nil
	}
	for _, m := range g.members {
		if m.instanceID == instanceID {
			return m
		}
	}
	return nil
}

func (g *group) transition(s State, now time.Time) {
	g.state, g.stateTime = s, now
}

// candidates returns the protocols every member supports, in the order of
// the first member's preference.
func (g *group) candidates() []string {
	if len(g.members) == 0 {
		return nil
	}
	var out []string
	for _, p := range g.members[0].protocols {
		all := true
		for _, m := range g.members[1:] {
			if !slices.ContainsFunc(m.protocols, func(q transport.JoinGroupProtocol) bool { return q.Name == p.Name }) {
				all = false
				break
			}
		}
		if all {
			out = append(out, p.Name)
		}
	}
	return out
}

// supports reports whether a member with protocols ps can join: the group
// is empty, or ps has a protocol every member supports.
func (g *group) supports(ps []transport.JoinGroupProtocol) bool {
	if len(g.members) == 0 {
		return true
	}
	for _, name := range g.candidates() {
		if slices.ContainsFunc(ps, func(p transport.JoinGroupProtocol) bool { return p.Name == name }) {
			return true
		}
	}
	return false
}

// selectProtocol picks the protocol of the new generation as Kafka does:
// each member votes for the first of the candidates it lists, and the most
// votes win (ties to the first member's preference).
func (g *group) selectProtocol() string {
	cands := g.candidates()
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if slices.Contains(cands, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, c := range cands {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

// value returns the group metadata record's value for the group as it is.
func (g *group) value() GroupValue {
	v := GroupValue{
		ProtocolType: g.protocolType, Generation: g.generation, Protocol: g.protocol, Leader: g.leader,
		CurrentStateTimestamp: g.stateTime.UnixMilli(),
	}
	for _, m := range g.members {
		v.Members = append(v.Members, MemberValue{
			MemberID: m.id, GroupInstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			RebalanceTimeout: int32(m.rebalanceTimeout.Milliseconds()), SessionTimeout: int32(m.sessionTimeout.Milliseconds()),
			Subscription: m.metadata(g.protocol), Assignment: m.assignment,
		})
	}
	return v
}

// randomMemberID is Kafka's member id: the client id, a dash, a UUID.
func randomMemberID(clientID string) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("group: no randomness: %v", err))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("%s-%s-%s-%s-%s-%s", clientID, h[:8], h[8:12], h[12:16], h[16:20], h[20:])
}
