package controller

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/vfs"
)

// untilActive runs the quorum, delivering every message, until a member
// is active, and returns it.
func (s *sim) untilActive(t *testing.T) *Member {
	t.Helper()
	for range 500 {
		if a := s.active(); a != nil {
			return a
		}
		require.NoError(t, s.tick())
		require.NoError(t, s.deliver(true))
	}
	t.Fatal("no controller became active")
	return nil
}

// commit runs fn on the active member and the quorum until the change
// commits, and returns its version.
func (s *sim) commit(t *testing.T, fn func(*Machine) error) int64 {
	t.Helper()
	a := s.untilActive(t)
	p, err := a.Do(fn)
	require.NoError(t, err)
	for range 100 {
		select {
		case <-p.Done():
			v, err := p.Result()
			require.NoError(t, err)
			return v
		default:
		}
		require.NoError(t, s.deliver(true))
	}
	t.Fatal("the change never committed")
	return 0
}

// TestMemberFailover: the active controller's changes reach the others
// only once committed; when it crashes, another becomes active with all
// of them, refuses nothing it acknowledged, and gives the nodes that were
// live the failover session — not a whole one — to heartbeat to it. A
// member that is not active answers NOT_CONTROLLER, naming the leader.
func TestMemberFailover(t *testing.T) {
	s, err := newSim(1, false)
	require.NoError(t, err)
	defer s.close()
	var epoch int64
	s.commit(t, func(mc *Machine) (err error) { epoch, err = mc.RegisterNode(100, ""); return err })
	s.commit(t, func(mc *Machine) error { return mc.Heartbeat(100, epoch) }) // unfences it
	v := s.commit(t, func(mc *Machine) error { return mc.CreateTopic("orders", 2, 1, TopicConfig{}) })
	first := s.active()
	for _, id := range s.voters {
		m := s.members[id].m
		if m == first {
			continue
		}
		_, err := m.Do(func(*Machine) error { return nil })
		require.ErrorIs(t, err, kafka.ErrNotController)
		require.ErrorContains(t, err, "leads the quorum")
	}
	// The others have it once they have applied up to its version.
	require.NoError(t, s.deliver(true))
	for _, sm := range s.members {
		require.GreaterOrEqual(t, sm.m.Version(), v)
		require.Contains(t, sm.m.State().Topics, "orders")
	}

	// The active controller and the node die together.
	require.NoError(t, s.crash(first.ID()))
	s.cut[first.ID()] = true
	next := s.untilActive(t)
	require.NotEqual(t, first.ID(), next.ID())
	require.Contains(t, next.State().Topics, "orders")
	require.False(t, next.State().Nodes[100].Fenced, "the node was live")
	ticks := 0
	for !next.State().Nodes[100].Fenced {
		require.NoError(t, s.tick())
		require.NoError(t, s.deliver(true))
		ticks++
		require.Less(t, ticks, 100)
	}
	failover := int(simOptions.FailoverSessionTimeout / defaultTickInterval)
	require.InDelta(t, failover, ticks, 2, "fenced after the failover session (%d ticks), not a whole one", failover)
	require.Equal(t, epoch, next.State().Nodes[100].BrokerEpoch)

	// The crashed controller comes back as a follower and catches up.
	delete(s.cut, first.ID())
	v = s.commit(t, func(mc *Machine) error { _, err := mc.RegisterNode(101, ""); return err })
	for range 50 {
		require.NoError(t, s.tick())
		require.NoError(t, s.deliver(true))
	}
	back := s.members[first.ID()].m
	require.False(t, back.Active())
	require.GreaterOrEqual(t, back.Version(), v)
	require.Contains(t, back.State().Nodes, int32(101))
}

// TestMemberRestartsFromItsSnapshot: a member that took snapshots
// (SnapshotEntries) restarts from the newest and the entries after it,
// into the same metadata, with its partition holding only those entries.
func TestMemberRestartsFromItsSnapshot(t *testing.T) {
	s, err := newSim(2, false)
	require.NoError(t, err)
	defer s.close()
	for i := range 60 {
		s.commit(t, func(mc *Machine) error { _, err := mc.RegisterNode(int32(i), ""); return err })
	}
	require.NoError(t, s.deliver(true))
	for _, id := range s.voters {
		m := s.members[id].m
		require.Greater(t, m.snapshotAt, uint64(0), "controller %d took a snapshot", id)
		want, version := m.State(), m.Version()
		first, err := m.log.FirstIndex()
		require.NoError(t, err)
		require.Equal(t, m.snapshotAt+1, first, "the entries the snapshot covers are gone")
		fsys := s.members[id].fs.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
		s.members[id].logs.Close()
		require.NoError(t, s.start(id, fsys))
		r := s.members[id].m
		_, err = r.Process()
		require.NoError(t, err)
		require.Equal(t, version, r.Version())
		require.Equal(t, want, r.State())
	}
}
