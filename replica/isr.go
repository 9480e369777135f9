package replica

// The ISR and high watermark arithmetic, with no state of its own, as etcd
// raft's quorum package. Times are ticks.

// highWatermark returns the smallest log end offset among isr (leo gives a
// member's, false for a replica it has no view of; a follower not heard
// from in this epoch has -1), and false when the high watermark must stand
// still: committed, the size of the ISR the controller committed, is below
// minISR (strict min ISR, KIP-966), or a member's log end offset is
// unknown.
func highWatermark(isr []int32, committed, minISR int, leo func(id int32) (int64, bool)) (int64, bool) {
	if committed < minISR || len(isr) == 0 {
		return 0, false
	}
	hw := int64(-1)
	for i, id := range isr {
		end, ok := leo(id)
		if !ok || end < 0 {
			return 0, false
		}
		if i == 0 || end < hw {
			hw = end
		}
	}
	return hw, true
}

// caughtUpTime returns a follower's new last-caught-up time after a fetch
// at fetchOffset, as Kafka's Replica.updateFetchState computes it: a fetch
// at the leader's log end offset is caught up now; one at the leader's log
// end offset of the follower's previous fetch was caught up then.
func caughtUpTime(last, fetchOffset, leaderLEO, prevLeaderLEO, prevFetch, now int64) int64 {
	switch {
	case fetchOffset >= leaderLEO:
		return max(last, now)
	case prevLeaderLEO >= 0 && fetchOffset >= prevLeaderLEO:
		return max(last, prevFetch)
	}
	return last
}

// isCaughtUp reports whether a follower stays in the ISR: its log ends
// where the leader's does, or it was caught up within lag ticks (Kafka's
// replica.lag.time.max.ms rule: time since last caught up, not distance).
func isCaughtUp(leo, leaderLEO, lastCaughtUp, now, lag int64) bool {
	return leo == leaderLEO || now-lastCaughtUp <= lag
}
