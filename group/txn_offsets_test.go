package group

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// txnCommit commits offset off of t-part for group g in producer pid's
// transaction, from outside group membership.
func (h *harness) txnCommit(g string, pid int64, part int32, off int64) error {
	return h.c.TxnCommit(TxnCommit{Group: g, ProducerID: pid, ProducerEpoch: 0, GenerationID: -1,
		Offsets: []TxnOffset{{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: part}, Offset: off, LeaderEpoch: -1}}})
}

// load replays what the log holds into a new coordinator.
func (h *harness) load() *Coordinator {
	c := h.open()
	h.log.loadInto(h.t, c)
	return c
}

// loadInto replays every partition l holds into c.
func (l *memLog) loadInto(t testing.TB, c *Coordinator) {
	t.Helper()
	for p, recs := range l.parts {
		require.NoError(t, c.Load(p, func(yield func(Record) bool) error {
			for _, r := range recs {
				if !yield(r) {
					break
				}
			}
			return nil
		}))
	}
}

// TestTxnOffsetsVisibleOnCommit: offsets committed in a transaction are
// written at once but read only once the transaction commits; an aborted
// transaction's offsets are never read. Meanwhile the partition is
// unstable (UNSTABLE_OFFSET_COMMIT for require_stable fetches).
func TestTxnOffsetsVisibleOnCommit(t *testing.T) {
	h := newHarness(t)
	tp0 := kafka.TopicPartition{Topic: "t", Partition: 0}
	require.NoError(t, h.commit("g", "", -1, "t", 0, 5))
	require.NoError(t, h.txnCommit("g", 7, 0, 10))
	require.Len(t, h.log.parts[PartitionFor("g", 5)], 2, "written before the transaction ends")
	require.Equal(t, int64(5), h.committed("g", "t", 0), "pending, not committed")
	require.True(t, h.c.Unstable("g", tp0))

	h.c.CompleteTxn(PartitionFor("g", 5), 7, true)
	require.Equal(t, int64(10), h.committed("g", "t", 0))
	require.False(t, h.c.Unstable("g", tp0))

	require.NoError(t, h.txnCommit("g", 8, 0, 20))
	h.c.CompleteTxn(PartitionFor("g", 5), 8, false)
	require.Equal(t, int64(10), h.committed("g", "t", 0), "an aborted transaction's offset is dropped")
	require.False(t, h.c.Unstable("g", tp0))
}

// TestTxnOffsetsReplay: a reload keeps a committed transaction's offsets,
// drops an aborted one's, and keeps an open one's pending.
func TestTxnOffsetsReplay(t *testing.T) {
	h := newHarness(t)
	p := PartitionFor("g", 5)
	require.NoError(t, h.txnCommit("g", 7, 0, 10))
	require.NoError(t, h.txnCommit("g", 8, 1, 11))
	require.NoError(t, h.txnCommit("g", 9, 2, 12))
	h.log.parts[p] = append(h.log.parts[p],
		Record{ProducerID: 7, Marker: CommitMarker},
		Record{ProducerID: 8, Marker: AbortMarker})
	c := h.load()
	h.c = c
	require.Equal(t, int64(10), h.committed("g", "t", 0), "committed")
	require.Equal(t, int64(-1), h.committed("g", "t", 1), "aborted")
	require.Equal(t, int64(-1), h.committed("g", "t", 2), "still open")
	require.True(t, c.Unstable("g", kafka.TopicPartition{Topic: "t", Partition: 2}))
	c.CompleteTxn(p, 9, true)
	require.Equal(t, int64(12), h.committed("g", "t", 2))
}

// TestTxnOffsetCommitFencing: KIP-447 — a member's transactional commit
// is fenced by its group generation and member id, as a plain commit is.
func TestTxnOffsetCommitFencing(t *testing.T) {
	h := newHarness(t)
	h.twoMembers("g")
	commit := func(member string, gen int32) error {
		return h.c.TxnCommit(TxnCommit{Group: "g", ProducerID: 7, MemberID: member, GenerationID: gen,
			Offsets: []TxnOffset{{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 0}, Offset: 3, LeaderEpoch: -1}}})
	}
	require.ErrorIs(t, commit("c-2", 1), kafka.ErrIllegalGeneration, "a zombie of the last generation")
	require.ErrorIs(t, commit("c-9", 2), kafka.ErrUnknownMemberID)
	require.NoError(t, commit("c-2", 2))
	require.ErrorIs(t, h.c.TxnCommit(TxnCommit{Group: "nobody", ProducerID: 7, MemberID: "m", GenerationID: 3}), kafka.ErrIllegalGeneration)
}

// TestRequireStableFetch: an OffsetFetch with require_stable is answered
// UNSTABLE_OFFSET_COMMIT for a partition with offsets of an open
// transaction, and the committed offset once it ends; one without
// require_stable reads the committed offset meanwhile.
func TestRequireStableFetch(t *testing.T) {
	h := newHarness(t)
	require.NoError(t, h.commit("g", "", -1, "t", 0, 5))
	require.NoError(t, h.txnCommit("g", 7, 0, 10))
	fetch := func(stable bool) transport.OffsetFetchPartitionResponse {
		resp := h.c.Fetch(&transport.OffsetFetchRequest{Group: "g", RequireStable: stable,
			Topics: []transport.OffsetFetchTopic{{Topic: "t", Partitions: []int32{0}}}})
		return resp.Topics[0].Partitions[0]
	}
	require.ErrorIs(t, fetch(true).Err, kafka.ErrUnstableOffsetCommit)
	require.Equal(t, int64(5), fetch(false).Offset)
	h.c.CompleteTxn(PartitionFor("g", 5), 7, true)
	require.NoError(t, fetch(true).Err)
	require.Equal(t, int64(10), fetch(true).Offset)
}

// TestTxnOffsetCommitConsumerProtocol: a member of a consumer-protocol
// group (KIP-848) commits in a transaction with its member epoch, fenced
// as its plain commits are (STALE_MEMBER_EPOCH behind it,
// FENCED_MEMBER_EPOCH ahead, UNKNOWN_MEMBER_ID for no member); once the
// transaction commits the offset is the group's.
func TestTxnOffsetCommitConsumerProtocol(t *testing.T) {
	h := newProtocolHarness(t)
	a := h.beat("a", 0, nil)
	require.NoError(t, a.Err)
	commit := func(member string, epoch int32) error {
		return h.c.TxnCommit(TxnCommit{Group: "g", ProducerID: 7, MemberID: member, GenerationID: epoch,
			Offsets: []TxnOffset{{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 0}, Offset: 3, LeaderEpoch: -1}}})
	}
	require.ErrorIs(t, commit("a", a.MemberEpoch-1), kafka.ErrStaleMemberEpoch)
	require.ErrorIs(t, commit("a", a.MemberEpoch+1), kafka.ErrFencedMemberEpoch)
	require.ErrorIs(t, commit("z", a.MemberEpoch), kafka.ErrUnknownMemberID)
	require.NoError(t, commit("a", a.MemberEpoch))
	h.c.CompleteTxn(PartitionFor("g", 5), 7, true)
	require.Equal(t, int64(3), h.committed("g", "t", 0))
}
