package replica

import "github.com/partlog/partlog/kafka"

// leaderEpochEndOffset answers OffsetsForLeaderEpoch for a leader in epoch
// current whose epoch began at start, with leo its written log end: the
// largest epoch at or below epoch that the leader knows and the offset
// where it ended. The leader's own epoch counts from start even if s has no
// batch of it yet — what Kafka gets by assigning (current, leo) in the
// epoch cache on becoming leader.
func leaderEpochEndOffset(s Storage, epoch, current int32, start, leo int64) (int32, int64) {
	switch {
	case epoch == current:
		return current, leo
	case epoch > current || epoch == kafka.UndefinedEpoch:
		return kafka.UndefinedEpoch, -1
	}
	latest := s.LatestEpoch()
	got, end := s.EndOffsetForEpoch(epoch)
	if latest >= current {
		return got, end
	}
	// The cache lacks the current epoch: it ends every epoch it knows at
	// start.
	switch {
	case latest == kafka.UndefinedEpoch:
		// Below the first entry: the epoch itself, ending where the first
		// known epoch starts.
		return epoch, start
	case got == kafka.UndefinedEpoch || got == latest:
		return latest, start
	}
	return got, end
}

// followerTruncationOffset returns where a follower whose log ends at leo
// truncates when its leader answers with the diverging epoch d (KIP-279, as
// Kafka's fetcher does): to the smaller of d's end and the follower's own
// end for that epoch; when the follower does not have d's epoch, to its end
// for the largest epoch below, and it fetches again to go on comparing. A
// leader that knows no end offset leaves the follower its high watermark hw,
// Kafka's fallback.
func followerTruncationOffset(s Storage, d kafka.EpochEndOffset, leo, hw int64) int64 {
	switch {
	case d.EndOffset < 0:
		return min(hw, leo)
	case d.LeaderEpoch == kafka.UndefinedEpoch:
		return min(d.EndOffset, leo)
	}
	epoch, end := s.EndOffsetForEpoch(d.LeaderEpoch)
	switch {
	case epoch == kafka.UndefinedEpoch:
		return min(d.EndOffset, leo)
	case epoch != d.LeaderEpoch:
		return min(end, leo)
	}
	return min(end, d.EndOffset, leo)
}
