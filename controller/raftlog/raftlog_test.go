package raftlog

import (
	"fmt"
	"io"
	stdlog "log"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	raft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/vfs"
)

// quiet is a raft logger that writes nothing.
var quiet = &raft.DefaultLogger{Logger: stdlog.New(io.Discard, "", 0)}

const (
	partitionDir = "/meta/__cluster_metadata-0"
	statePath    = "/meta/quorum-state"
	snapDir      = "/meta/snapshots"
)

// openLog opens the Raft log on fsys; the partition closes with the test.
func openLog(t *testing.T, fsys vfs.FS) *Log {
	t.Helper()
	require.NoError(t, vfs.MkdirAllDurable(fsys, partitionDir, 0o755))
	require.NoError(t, vfs.MkdirAllDurable(fsys, snapDir, 0o755))
	l, err := log.Open(partitionDir, log.Options{FS: fsys})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	s, err := Open(l, fsys, statePath, snapDir)
	require.NoError(t, err)
	return s
}

func entry(index, term uint64, data string) *pb.Entry {
	return &pb.Entry{Index: proto.Uint64(index), Term: proto.Uint64(term), Type: pb.EntryType_EntryNormal.Enum(), Data: []byte(data)}
}

// contents returns s's entries as "index/term:data" and its HardState.
func contents(t *testing.T, s *Log) ([]string, *pb.HardState) {
	t.Helper()
	first, err := s.FirstIndex()
	require.NoError(t, err)
	last, err := s.LastIndex()
	require.NoError(t, err)
	var out []string
	if last >= first {
		es, err := s.Entries(first, last+1, 1<<30)
		require.NoError(t, err)
		for _, e := range es {
			out = append(out, fmt.Sprintf("%d/%d:%s", e.GetIndex(), e.GetTerm(), e.GetData()))
		}
	}
	hs, _, err := s.InitialState()
	require.NoError(t, err)
	return out, hs
}

// TestSaveSurvivesACrash: what Save returned from is there after a crash
// that keeps only synced bytes — entries, with their terms, and the
// HardState — and a leader's overwrite of an uncommitted tail replaces it
// in the partition. The negative control is a Save that does not sync
// the partition: the crash then loses its entries, and this test and
// TestQuorumOnPartitionLogs fail (tried by hand).
func TestSaveSurvivesACrash(t *testing.T) {
	fsys := vfs.NewMem()
	s := openLog(t, fsys)
	hs := &pb.HardState{Term: proto.Uint64(1), Vote: proto.Uint64(2), Commit: proto.Uint64(2)}
	require.NoError(t, s.Save(hs, []*pb.Entry{entry(1, 1, "a"), entry(2, 1, "b"), entry(3, 1, "c"), entry(4, 1, "d")}))
	// A new leader of term 2 overwrites the uncommitted 3 and 4.
	hs2 := &pb.HardState{Term: proto.Uint64(2), Vote: proto.Uint64(3), Commit: proto.Uint64(3)}
	require.NoError(t, s.Save(hs2, []*pb.Entry{entry(3, 2, "C")}))
	want := []string{"1/1:a", "2/1:b", "3/2:C"}
	got, gotHS := contents(t, s)
	require.Equal(t, want, got)
	require.True(t, proto.Equal(hs2, gotHS))

	crashed := fsys.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
	r := openLog(t, crashed)
	got, gotHS = contents(t, r)
	require.Equal(t, want, got, "every saved entry, at its term, and none overwritten")
	require.True(t, proto.Equal(hs2, gotHS), "the HardState: %v", gotHS)
}

// TestCompactThenReopen: after Compact, raft's storage starts after the
// snapshot, the partition no longer holds what it covers, and a crash
// and Open give back the snapshot and the entries after it.
func TestCompactThenReopen(t *testing.T) {
	fsys := vfs.NewMem()
	s := openLog(t, fsys)
	hs := &pb.HardState{Term: proto.Uint64(1), Vote: proto.Uint64(1), Commit: proto.Uint64(4)}
	require.NoError(t, s.Save(hs, []*pb.Entry{entry(1, 1, "a"), entry(2, 1, "b"), entry(3, 1, "c"), entry(4, 1, "d"), entry(5, 1, "e")}))
	cs := &pb.ConfState{Voters: []uint64{1, 2, 3}}
	require.NoError(t, s.Compact(3, cs, []byte("a,b,c")))
	require.NoError(t, s.Save(nil, []*pb.Entry{entry(6, 1, "f")}))
	want := []string{"4/1:d", "5/1:e", "6/1:f"}
	got, _ := contents(t, s)
	require.Equal(t, want, got)

	r := openLog(t, fsys.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone}))
	got, gotHS := contents(t, r)
	require.Equal(t, want, got)
	require.EqualValues(t, 4, gotHS.GetCommit())
	snap, err := r.Snapshot()
	require.NoError(t, err)
	require.Equal(t, []any{uint64(3), uint64(1), "a,b,c"}, []any{snap.GetMetadata().GetIndex(), snap.GetMetadata().GetTerm(), string(snap.GetData())})
	require.Equal(t, cs.GetVoters(), snap.GetMetadata().GetConfState().GetVoters())
}

// node is one member of a three-controller quorum in a test: a RawNode on
// a Log on its own filesystem.
type node struct {
	id      uint64
	fs      *vfs.MemFS
	log     *log.Log
	store   *Log
	rn      *raft.RawNode
	applied []string // the normal entries' data it applied, in order
	// snapshots counts the snapshots the leader sent it.
	snapshots int
}

func startNode(t *testing.T, id uint64, fsys *vfs.MemFS, bootstrap bool) *node {
	t.Helper()
	require.NoError(t, vfs.MkdirAllDurable(fsys, partitionDir, 0o755))
	require.NoError(t, vfs.MkdirAllDurable(fsys, snapDir, 0o755))
	l, err := log.Open(partitionDir, log.Options{FS: fsys})
	require.NoError(t, err)
	s, err := Open(l, fsys, statePath, snapDir)
	require.NoError(t, err)
	rn, err := raft.NewRawNode(&raft.Config{ID: id, ElectionTick: 10, HeartbeatTick: 1, Storage: s,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 64, Logger: quiet})
	require.NoError(t, err)
	if bootstrap {
		require.NoError(t, rn.Bootstrap([]raft.Peer{{ID: 1}, {ID: 2}, {ID: 3}}))
	}
	n := &node{id: id, fs: fsys, log: l, store: s, rn: rn}
	if snap, _ := s.Snapshot(); !raft.IsEmptySnap(snap) {
		n.applied = strings.Split(string(snap.GetData()), ",")
	}
	return n
}

// quorum is three nodes and the messages between them.
type quorum struct {
	t     *testing.T
	nodes map[uint64]*node
	inbox []*pb.Message
}

// process carries out every node's Ready — save, then send, then apply —
// and delivers the messages, until nothing is left to do.
func (q *quorum) process() {
	for round := 0; round < 1000; round++ {
		busy := false
		for id := uint64(1); id <= 3; id++ {
			n := q.nodes[id]
			if n == nil || !n.rn.HasReady() {
				continue
			}
			busy = true
			rd := n.rn.Ready()
			if !raft.IsEmptySnap(rd.Snapshot) {
				require.NoError(q.t, n.store.SaveSnapshot(rd.Snapshot))
				n.applied = strings.Split(string(rd.Snapshot.GetData()), ",")
				n.snapshots++
			}
			require.NoError(q.t, n.store.Save(rd.HardState, rd.Entries))
			q.inbox = append(q.inbox, rd.Messages...)
			for _, e := range rd.CommittedEntries {
				switch e.GetType() {
				case pb.EntryType_EntryNormal:
					if len(e.GetData()) > 0 {
						n.applied = append(n.applied, string(e.GetData()))
					}
				case pb.EntryType_EntryConfChange:
					var cc pb.ConfChange
					require.NoError(q.t, proto.Unmarshal(e.GetData(), &cc))
					n.rn.ApplyConfChange(&cc)
				}
			}
			n.rn.Advance(rd)
		}
		msgs := q.inbox
		q.inbox = nil
		for _, m := range msgs {
			if to := q.nodes[m.GetTo()]; to != nil {
				busy = true
				require.NoError(q.t, to.rn.Step(m))
			}
		}
		if !busy {
			return
		}
	}
	q.t.Fatal("the quorum never settled")
}

// leader returns the node that leads, ticking the others until one does.
func (q *quorum) leader() *node {
	for range 200 {
		for _, n := range q.nodes {
			if n.rn.BasicStatus().RaftState == raft.StateLeader {
				return n
			}
		}
		for _, n := range q.nodes {
			n.rn.Tick()
		}
		q.process()
	}
	q.t.Fatal("no leader")
	return nil
}

// crash drops node id, keeping only what its filesystem synced, and
// starts it again from that.
func (q *quorum) crash(id uint64) {
	n := q.nodes[id]
	crashed := n.fs.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
	n.log.Close()
	delete(q.nodes, id)
	q.process() // the others go on without it
	q.nodes[id] = startNode(q.t, id, crashed, false)
}

// TestQuorumOnPartitionLogs runs go.etcd.io/raft's RawNode on three Logs:
// values proposed to the leader are applied by every controller in one
// order, through a follower's crash and the leader's; a restarted
// controller replays its partition and reapplies everything committed.
func TestQuorumOnPartitionLogs(t *testing.T) {
	q := &quorum{t: t, nodes: map[uint64]*node{}}
	for id := uint64(1); id <= 3; id++ {
		q.nodes[id] = startNode(t, id, vfs.NewMem(), true)
	}
	t.Cleanup(func() {
		for _, n := range q.nodes {
			n.log.Close()
		}
	})
	require.NoError(t, q.nodes[1].rn.Campaign())
	q.process()
	var want []string
	propose := func(from, to int) {
		for i := from; i < to; i++ {
			v := fmt.Sprintf("v%02d", i)
			require.NoError(t, q.leader().rn.Propose([]byte(v)))
			q.process()
			want = append(want, v)
		}
	}
	propose(0, 10)
	follower := uint64(1)
	if q.leader().id == follower {
		follower = 2
	}
	q.crash(follower)
	propose(10, 20)
	q.crash(q.leader().id)
	propose(20, 30)

	// A follower stops; meanwhile the leader snapshots what it applied and
	// drops its log up to there. The follower comes back behind the
	// leader's log and catches up from the snapshot; then the leader
	// restarts, and reads its own.
	lagging := uint64(1)
	if q.leader().id == lagging {
		lagging = 2
	}
	away := q.nodes[lagging]
	disk := away.fs.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
	away.log.Close()
	delete(q.nodes, lagging)
	propose(30, 40)
	lead := q.leader()
	applied := lead.rn.BasicStatus().Applied
	cs := &pb.ConfState{Voters: []uint64{1, 2, 3}} // as Bootstrap made it
	require.NoError(t, lead.store.Compact(applied, cs, []byte(strings.Join(lead.applied, ","))))
	first, err := lead.store.FirstIndex()
	require.NoError(t, err)
	require.Equal(t, applied+1, first)
	q.nodes[lagging] = startNode(t, lagging, disk, false)
	propose(40, 45)
	require.Equal(t, 1, q.nodes[lagging].snapshots, "the follower caught up from the snapshot")
	q.crash(lead.id)
	propose(45, 50)
	for range 20 { // heartbeats bring the restarted one up to date
		for _, n := range q.nodes {
			n.rn.Tick()
		}
		q.process()
	}
	for id, n := range q.nodes {
		require.Equal(t, want, n.applied, "controller %d", id)
		got, _ := contents(t, n.store)
		require.NotEmpty(t, got)
	}
}
