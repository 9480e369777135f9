package broker

import (
	"context"

	"github.com/partlog/partlog/sharecoord"
)

// sharePersister keeps the durable state of share partitions (KIP-932),
// as Kafka's Persister does for its SharePartitionManager: each share
// partition's state lives with its share coordinator, the leader of the
// share partition's partition of __share_group_state, on this node or
// another. The node leading a topic partition keeps the in-flight state
// of the share groups that consume it (see share.Partition) and writes
// every change through the persister before it answers the client.
//
// Each call goes to the share partition's coordinator, wherever it is,
// and retries while that coordinator moves or loads (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE) until ctx
// ends; the errors it returns are Kafka's (kafka.ErrFencedStateEpoch,
// kafka.ErrFencedLeaderEpoch, kafka.ErrInvalidRequest for a share
// partition never initialized, ...).
type sharePersister interface {
	// initialize creates or resets sp's state at stateEpoch, its share
	// partition start offset startOffset (-1: not known yet, the leader
	// picks it from share.auto.offset.reset at the first fetch).
	initialize(ctx context.Context, sp sharecoord.SharePartition, stateEpoch int32, startOffset int64) error
	// read returns sp's state for a leader in leaderEpoch, which the
	// coordinator records when it is newer; the state's LeaderEpoch is
	// leaderEpoch (ReadShareGroupState carries none back).
	read(ctx context.Context, sp sharecoord.SharePartition, leaderEpoch int32) (sharecoord.State, error)
	// write stores a change of sp's state.
	write(ctx context.Context, sp sharecoord.SharePartition, w sharecoord.Write) error
	// delete forgets sp's state.
	delete(ctx context.Context, sp sharecoord.SharePartition) error
}
