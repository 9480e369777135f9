package controller

import (
	"slices"

	"github.com/partlog/partlog/replica"
)

// Unclean says whether a partition may elect a leader from outside its ISR
// (unclean.leader.election.enable), losing what only the ISR had.
type Unclean bool

// The election modes.
const (
	// CleanOnly elects only ISR members: Kafka's default.
	CleanOnly Unclean = false
	// AllowUnclean falls back to any live replica when no ISR member is
	// alive.
	AllowUnclean Unclean = true
)

// ElectLeader picks a partition's leader as Kafka's controller does: the
// first replica in assignment order that is alive and in the ISR. With
// AllowUnclean and no such replica, it picks the first live replica and
// reports unclean. With neither, ok is false: the partition stays offline
// rather than lose committed records.
func ElectLeader(replicas, isr []int32, alive func(id int32) bool, mode Unclean) (leader int32, unclean, ok bool) {
	for _, id := range replicas {
		if slices.Contains(isr, id) && alive(id) {
			return id, false, true
		}
	}
	if mode == AllowUnclean {
		for _, id := range replicas {
			if alive(id) {
				return id, true, true
			}
		}
	}
	return replica.NoLeader, false, false
}
