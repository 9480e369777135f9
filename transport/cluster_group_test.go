package transport

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/partlog/partlog/kafka"
	"github.com/stretchr/testify/require"
)

// coordFakes is a fake cluster of in-memory nodes "n:<id>" for the group
// requests of a ClusterClient: coord coordinates every group (0: none).
type coordFakes struct {
	mu    sync.Mutex
	coord int32
	down  map[int32]bool
	finds int
	beats map[int32]int
}

// coordFake is one node of coordFakes; the methods it lacks panic.
type coordFake struct {
	NodeClient
	c  *coordFakes
	id int32
}

func (f coordFake) Close() error { return nil }

func (f coordFake) Metadata(context.Context, *MetadataRequest) (*MetadataResponse, error) {
	return &MetadataResponse{Brokers: []Broker{{NodeID: 1, Host: "n", Port: 1}, {NodeID: 2, Host: "n", Port: 2}}}, nil
}

func (f coordFake) FindCoordinator(_ context.Context, req *FindCoordinatorRequest) (*FindCoordinatorResponse, error) {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	f.c.finds++
	if f.c.coord == 0 {
		return &FindCoordinatorResponse{NodeID: -1, Port: -1, Err: kafka.ErrCoordinatorNotAvailable}, nil
	}
	return &FindCoordinatorResponse{NodeID: f.c.coord, Host: "n", Port: f.c.coord}, nil
}

func (f coordFake) Heartbeat(_ context.Context, req *HeartbeatRequest) (*HeartbeatResponse, error) {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if f.c.down[f.id] {
		return nil, fmt.Errorf("%w: node %d is down", kafka.ErrNetwork, f.id)
	}
	f.c.beats[f.id]++
	if f.id != f.c.coord {
		return &HeartbeatResponse{Err: kafka.ErrNotCoordinator}, nil
	}
	return &HeartbeatResponse{}, nil
}

// TestClusterClientFollowsCoordinator: group calls go to the coordinator
// FindCoordinator names, found once and cached; NOT_COORDINATOR or a
// failed call makes the client find it again at the next call.
func TestClusterClientFollowsCoordinator(t *testing.T) {
	fakes := &coordFakes{coord: 1, down: map[int32]bool{}, beats: map[int32]int{}}
	ctx := context.Background()
	c, err := NewClusterClient(ctx, []string{"n:1"}, func(_ context.Context, addr string) (NodeClient, error) {
		var id int32
		if _, err := fmt.Sscanf(addr, "n:%d", &id); err != nil {
			return nil, fmt.Errorf("%w: %s", kafka.ErrNetwork, addr)
		}
		return coordFake{c: fakes, id: id}, nil
	})
	require.NoError(t, err)
	defer c.Close()
	beat := func() error {
		resp, err := c.Heartbeat(ctx, &HeartbeatRequest{Group: "g"})
		if err != nil {
			return err
		}
		return resp.Err
	}
	state := func() (int, map[int32]int) {
		fakes.mu.Lock()
		defer fakes.mu.Unlock()
		return fakes.finds, map[int32]int{1: fakes.beats[1], 2: fakes.beats[2]}
	}

	require.NoError(t, beat())
	require.NoError(t, beat())
	finds, beats := state()
	require.Equal(t, 1, finds, "the coordinator is cached")
	require.Equal(t, map[int32]int{1: 2, 2: 0}, beats)

	fakes.mu.Lock()
	fakes.coord = 2
	fakes.mu.Unlock()
	require.ErrorIs(t, beat(), kafka.ErrNotCoordinator)
	require.NoError(t, beat(), "found again after NOT_COORDINATOR")
	finds, beats = state()
	require.Equal(t, 2, finds)
	require.Equal(t, map[int32]int{1: 3, 2: 1}, beats)

	fakes.mu.Lock()
	fakes.down[2], fakes.coord = true, 0
	fakes.mu.Unlock()
	require.ErrorIs(t, beat(), kafka.ErrNetwork)
	err = beat()
	require.ErrorIs(t, err, kafka.ErrCoordinatorNotAvailable, "found again after a failed call; none is available")
	require.True(t, kafka.IsRetriable(err))
	fakes.mu.Lock()
	fakes.down[2], fakes.coord = false, 2
	fakes.mu.Unlock()
	require.NoError(t, beat())
	finds, beats = state()
	require.Equal(t, 4, finds)
	require.Equal(t, map[int32]int{1: 3, 2: 2}, beats)
}
