package group

// reconcile moves member m one step towards its target assignment, as
// Kafka's CurrentAssignmentBuilder does, and returns the member as it is
// after the step: m itself when nothing changes, a changed copy
// otherwise. It modifies nothing.
//
// target is m's target assignment, of epoch targetEpoch. owned is what
// m's heartbeat says it owns; ownedKnown is false when the heartbeat did
// not say (a heartbeat sends owned partitions only when they changed), and
// then m is taken to still own everything it was asked to revoke.
// heldByOther reports whether another member holds a partition: has it
// assigned or pending revocation.
//
// The steps:
//
//   - A Stable member whose epoch is the target's has nothing to do.
//   - A member that must give up partitions it holds (its assignment
//     outside the target) keeps only assignment ∩ target and its epoch,
//     and becomes UnrevokedPartitions with the rest pending revocation —
//     unless its owned partitions show it no longer holds them.
//   - An UnrevokedPartitions member stays so until its owned partitions
//     no longer hold any partition pending revocation.
//   - Otherwise the member moves to the target epoch and gets its target,
//     less the partitions another member still holds; when there are
//     such, it is UnreleasedPartitions, and gets them at a later heartbeat
//     once they are released; else it is Stable.
//
// So a partition moves from one member to another in two steps — the
// first member revokes it, then the second gets it — and is never held
// by two members at once.
func reconcile(m *consumerMember, targetEpoch int32, target map[string][]int32,
	owned map[string][]int32, ownedKnown bool, heldByOther func(topic string, partition int32) bool) *consumerMember {
	// ownsAny reports whether m may still own some of ps.
	ownsAny := func(ps map[string][]int32) bool {
		if len(ps) == 0 {
			return false
		}
		return !ownedKnown || overlapsPartitions(owned, ps)
	}
	switch m.state {
	case consumerMemberStable:
		if m.memberEpoch == targetEpoch {
			return m
		}
	case consumerMemberUnrevokedPartitions:
		if ownsAny(m.pendingRevocation) {
			return m
		}
	}

	keep := intersectPartitions(m.assigned, target)
	revoke := subtractPartitions(m.assigned, keep)
	unreleased := false
	add := partitionsWhere(subtractPartitions(target, keep), func(t string, p int32) bool {
		if heldByOther(t, p) {
			unreleased = true
			return false
		}
		return true
	})

	next := m.clone()
	next.pendingRevocation = nil
	switch {
	case ownsAny(revoke):
		next.state = consumerMemberUnrevokedPartitions
		next.assigned = keep
		next.pendingRevocation = revoke
	case unreleased:
		next.state = consumerMemberUnreleasedPartitions
		next.memberEpoch = targetEpoch
		next.assigned = unionPartitions(keep, add)
	default:
		next.state = consumerMemberStable
		next.memberEpoch = targetEpoch
		next.assigned = unionPartitions(keep, add)
	}
	// The previous epoch is the one before the current, kept for a
	// member whose answer with the new epoch was lost. (Kafka's
	// updateMemberEpoch also sets it when the epoch does not change,
	// which writes a record for nothing.)
	if next.memberEpoch != m.memberEpoch {
		next.previousMemberEpoch = m.memberEpoch
	}
	if next.sameAssignment(m) {
		return m
	}
	return next
}
