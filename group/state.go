package group

// State is a group's state, as Kafka's GroupCoordinator names them.
//
//	           first join                all joined            leader's sync
//	Empty ───────────────▶ PreparingRebalance ──────▶ CompletingRebalance ──────▶ Stable
//	  ▲                        ▲   │ no members left        │                       │
//	  └────────────────────────┼───┘                        │ join, leave, timeout  │
//	                           └────────────────────────────┴───────────────────────┘
//
// Dead is a group that was removed (its metadata deleted); a request for
// it finds no group.
type State int8

// The states.
const (
	// Empty: no members; the group may hold committed offsets.
	Empty State = iota
	// PreparingRebalance: the coordinator waits for every member to
	// (re)join, up to the rebalance timeout.
	PreparingRebalance
	// CompletingRebalance: every member has joined a new generation; the
	// coordinator waits for the leader's assignment (SyncGroup).
	CompletingRebalance
	// Stable: every member has its assignment; members heartbeat.
	Stable
	// Dead: the group is gone.
	Dead
)

// String returns the state as Kafka spells it.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	case Dead:
		return "Dead"
	}
	return "Unknown"
}
