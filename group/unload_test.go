package group

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// TestUnloadForgetsOnePartition unloads the partition of one group while a
// member waits in a JoinGroup: the wait is answered NOT_COORDINATOR, the
// group and its offsets are gone, a group of another partition is
// untouched, and loading the partition again brings the group back from
// the log.
func TestUnloadForgetsOnePartition(t *testing.T) {
	h := newHarness(t)
	require.NotEqual(t, PartitionFor("g", 5), PartitionFor("other", 5))
	h.twoMembers("g")
	require.NoError(t, h.commit("g", "c-1", 2, "t", 0, 7))
	require.NoError(t, h.commit("other", "", -1, "t", 0, 3))
	j := h.join("g", "")
	j.waiting(t)

	p := PartitionFor("g", 5)
	h.c.Unload(p)
	require.ErrorIs(t, j.answered(t).Err, kafka.ErrNotCoordinator)
	require.Equal(t, "Dead", h.state("g"))
	require.Equal(t, int64(-1), h.committed("g", "t", 0))
	require.ErrorIs(t, h.heartbeat("g", "c-1", 2), kafka.ErrUnknownMemberID)
	require.Equal(t, int64(3), h.committed("other", "t", 0), "another partition's group stays")
	require.Equal(t, []transport.ListedGroup{{Group: "other", State: "Empty"}}, h.c.List(&transport.ListGroupsRequest{}).Groups)

	recs := h.log.parts[p]
	require.NoError(t, h.c.Load(p, func(yield func(Record) bool) error {
		for _, r := range recs {
			if !yield(r) {
				break
			}
		}
		return nil
	}))
	require.Equal(t, int64(7), h.committed("g", "t", 0))
	require.Equal(t, "Stable", h.state("g"))
	require.NoError(t, h.heartbeat("g", "c-2", 2), "the members carry on in their generation")
}
