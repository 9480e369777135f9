package consumer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
)

// movingCoordinator is an OffsetStore whose first commits fail as while a
// cluster moves the group's coordinator.
type movingCoordinator struct {
	*consumer.MemoryOffsets
	mu    sync.Mutex
	fails []error // the answers of the next commits
	calls int
}

func (m *movingCoordinator) CommitOffsets(ctx context.Context, group string, gen consumer.Generation, offsets map[kafka.TopicPartition]consumer.CommittedOffset) error {
	m.mu.Lock()
	m.calls++
	var err error
	if len(m.fails) > 0 {
		err, m.fails = m.fails[0], m.fails[1:]
	}
	m.mu.Unlock()
	if err != nil {
		return err
	}
	return m.MemoryOffsets.CommitOffsets(ctx, group, gen, offsets)
}

// TestCommitRetriesWhileTheCoordinatorMoves: a commit answered
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or with a network error is
// sent again after the backoff and succeeds; one refused for good is not.
func TestCommitRetriesWhileTheCoordinatorMoves(t *testing.T) {
	store := &movingCoordinator{MemoryOffsets: consumer.NewMemoryOffsets(), fails: []error{
		fmt.Errorf("%w: moved", kafka.ErrNotCoordinator), kafka.ErrCoordinatorLoadInProgress, kafka.ErrNetwork}}
	c, err := consumer.New(newFixedLog(1, 4), consumer.Group("g"), consumer.Offsets(store), consumer.Partitions(tp("t", 0)),
		consumer.RetryBackoff(time.Millisecond), consumer.RetryBackoffMax(5*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	require.NoError(t, c.CommitOffsets(ctx, map[kafka.TopicPartition]consumer.CommittedOffset{tp("t", 0): {Offset: 3}}))
	require.Equal(t, 4, store.calls)
	got, err := c.Committed(ctx, tp("t", 0))
	require.NoError(t, err)
	require.Equal(t, int64(3), got[tp("t", 0)].Offset)

	store.fails = []error{kafka.ErrUnknownMemberID}
	require.ErrorIs(t, c.CommitOffsets(ctx, map[kafka.TopicPartition]consumer.CommittedOffset{tp("t", 0): {Offset: 4}}), kafka.ErrUnknownMemberID)
	require.Equal(t, 5, store.calls, "not retried")

	// Retriable failures that last RetryTimeout are reported.
	c2, err := consumer.New(newFixedLog(1, 4), consumer.Group("g"), consumer.Offsets(store), consumer.Partitions(tp("t", 0)),
		consumer.RetryBackoff(time.Millisecond), consumer.RetryBackoffMax(time.Millisecond), consumer.RetryTimeout(20*time.Millisecond))
	require.NoError(t, err)
	defer c2.Close()
	store.fails = make([]error, 1000)
	for i := range store.fails {
		store.fails[i] = kafka.ErrCoordinatorNotAvailable
	}
	require.ErrorIs(t, c2.CommitOffsets(ctx, map[kafka.TopicPartition]consumer.CommittedOffset{tp("t", 0): {Offset: 4}}), kafka.ErrCoordinatorNotAvailable)
}
