// Package raftlog keeps the Raft log of the controller quorum as KRaft keeps
// __cluster_metadata: in a partition log of Kafka record batches, with the
// Raft state beside it in a quorum-state file. It is the storage under
// go.etcd.io/raft/v3: a Log is the library's raft.Storage (reads are served
// from a raft.MemoryStorage filled from the partition at Open), and Save
// makes a Ready's entries and HardState durable, as the library requires
// before its messages are sent.
//
// Each entry is one RecordBatch v2 at offset index-1, stamped with the
// entry's term as its partition leader epoch, holding one record: the
// entry's type as the key (one byte) and its data as the value. So the
// partition's leader-epoch-checkpoint is the Raft log's term history, and
// partlog dump-log reads it as it reads any partition.
//
//	offset   = index - 1
//	epoch    = term
//	record   = key: [type u8], value: data
//
// quorum-state holds the HardState as JSON: {"term":T,"vote":V,"commit":C},
// replaced atomically.
//
// A snapshot is a checkpoint file named as KRaft names them, after the
// index and term it covers, %020d-%010d.checkpoint, in the snapshot
// directory: one RecordBatch v2 stamped with the term, whose records are
// the ConfState (key "c", its protobuf) and the application's state (key
// "d"). The partition then starts after the snapshot, and Open reads the
// newest checkpoint and the entries after it.
package raftlog

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"

	raft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// ErrCorrupt says the partition or quorum-state holds what no Save wrote.
var ErrCorrupt = errors.New("raftlog: corrupt Raft log")

// Log is a Raft log on a partition log. The embedded MemoryStorage is what
// raft reads; only Save may change it. A Log is for one goroutine, the one
// that runs the raft node's Ready loop.
type Log struct {
	*raft.MemoryStorage
	log       *log.Log
	fs        vfs.FS
	statePath string
	snapDir   string
	state     hardState
}

// hardState is quorum-state's content.
type hardState struct {
	Term   uint64 `json:"term"`
	Vote   uint64 `json:"vote"`
	Commit uint64 `json:"commit"`
}

// Open reads the Raft log — the newest checkpoint in snapDir, and the
// entries of l after it — and the HardState in the file statePath of fsys
// (none yet is an empty HardState), and returns them as a Log. The
// partition must hold only batches Save wrote, from the checkpoint on, and
// its directory and snapDir must be durable, as log.Dir or
// vfs.MkdirAllDurable makes them: the Log syncs its files, not the
// directories above them. l stays the caller's to close, after the Log's
// last use.
func Open(l *log.Log, fsys vfs.FS, statePath, snapDir string) (*Log, error) {
	s := &Log{MemoryStorage: raft.NewMemoryStorage(), log: l, fs: fsys, statePath: statePath, snapDir: snapDir}
	snap, err := s.newestSnapshot()
	if err != nil {
		return nil, err
	}
	from := int64(0)
	if snap != nil {
		if err := s.MemoryStorage.ApplySnapshot(snap); err != nil {
			return nil, err
		}
		from = int64(snap.GetMetadata().GetIndex())
	}
	if snap != nil && l.LogEndOffset() < from {
		// A crash after a checkpoint was written and before the partition
		// restarted after it (SaveSnapshot, Seed): restart it now, so that
		// the next entry is appended where it belongs.
		if err := l.TruncateFullyAndStartAt(from); err != nil {
			return nil, err
		}
	}
	if start := l.LogStartOffset(); start > from {
		return nil, fmt.Errorf("%w: the partition starts at offset %d, after the snapshot's %d", ErrCorrupt, start, from)
	}
	entries, err := s.read(from)
	if err != nil {
		return nil, err
	}
	if err := s.MemoryStorage.Append(entries); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	data, err := readFile(fsys, statePath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		if err := json.Unmarshal(data, &s.state); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, statePath, err)
		}
	}
	if snap != nil {
		// A crash between SaveSnapshot and the Save of its Ready leaves
		// the HardState behind the snapshot, which covers committed
		// entries only: raft requires the commit index at least there.
		s.state.Commit = max(s.state.Commit, snap.GetMetadata().GetIndex())
		s.state.Term = max(s.state.Term, snap.GetMetadata().GetTerm())
	}
	last, _ := s.LastIndex()
	if s.state.Commit > last {
		return nil, fmt.Errorf("%w: %s commits index %d, the log ends at %d", ErrCorrupt, statePath, s.state.Commit, last)
	}
	if err := s.SetHardState(s.state.proto()); err != nil {
		return nil, err
	}
	return s, nil
}

// readFile returns the content of name in fsys.
func readFile(fsys vfs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// read returns the entries of the partition from offset from, in order.
func (s *Log) read(from int64) ([]*pb.Entry, error) {
	var out []*pb.Entry
	var buf []byte
	for next := from; next < s.log.LogEndOffset(); {
		data, err := s.log.Read(buf[:0], next, s.log.LogEndOffset(), 1<<20)
		if err != nil {
			return nil, err
		}
		buf = data
		for len(data) > 0 {
			h, err := record.ParseHeader(data)
			if err != nil {
				return nil, fmt.Errorf("%w: at offset %d: %v", ErrCorrupt, next, err)
			}
			if h.BaseOffset < next { // the batch before the snapshot's end
				data = data[h.Size():]
				continue
			}
			b, err := record.Decode(data[:h.Size()])
			if err != nil {
				return nil, fmt.Errorf("%w: at offset %d: %v", ErrCorrupt, next, err)
			}
			if len(b.Records) != 1 || len(b.Records[0].Key) != 1 || h.BaseOffset != next {
				return nil, fmt.Errorf("%w: the batch at offset %d is not one entry (%d records, at %d)", ErrCorrupt, next, len(b.Records), h.BaseOffset)
			}
			r := b.Records[0]
			out = append(out, &pb.Entry{Index: proto.Uint64(uint64(next) + 1), Term: proto.Uint64(uint64(h.PartitionLeaderEpoch)),
				Type: pb.EntryType(r.Key[0]).Enum(), Data: append([]byte(nil), r.Value...)})
			next++
			data = data[h.Size():]
		}
	}
	return out, nil
}

// Save makes hs (nil or empty for no change) and entries durable, then
// gives them to raft's MemoryStorage: entries that replace a tail the
// leader overwrote cut the partition back first. It returns once the
// partition and quorum-state are synced. entries and their data stay the
// caller's; Save copies what it keeps.
func (s *Log) Save(hs *pb.HardState, entries []*pb.Entry) error {
	if len(entries) > 0 {
		first := int64(entries[0].GetIndex()) - 1
		if first < s.log.LogEndOffset() {
			if err := s.log.TruncateTo(first); err != nil {
				return err
			}
		}
		var batches []byte
		for _, e := range entries {
			batches = append(batches, entryBatch(e)...)
		}
		if _, err := s.log.AppendAsFollower(batches); err != nil {
			return err
		}
		if err := s.log.Flush(); err != nil {
			return err
		}
		kept := make([]*pb.Entry, len(entries))
		for i, e := range entries {
			kept[i] = proto.Clone(e).(*pb.Entry)
		}
		if err := s.MemoryStorage.Append(kept); err != nil {
			return err
		}
	}
	if hs == nil || raft.IsEmptyHardState(hs) {
		return nil
	}
	next := hardState{Term: hs.GetTerm(), Vote: hs.GetVote(), Commit: hs.GetCommit()}
	if next == s.state {
		return nil
	}
	data, err := json.Marshal(next)
	if err != nil {
		return err
	}
	if err := vfs.WriteFileAtomic(s.fs, s.statePath, data); err != nil {
		return err
	}
	s.state = next
	return s.SetHardState(next.proto())
}

// entryBatch encodes e as its batch, at offset e.Index-1.
func entryBatch(e *pb.Entry) []byte {
	opts := record.DefaultBatchOptions()
	opts.PartitionLeaderEpoch = int32(e.GetTerm())
	b := record.NewBuilder(opts)
	b.Append(record.Record{Key: []byte{byte(e.GetType())}, Value: e.GetData()})
	batch := b.Build()
	record.SetBaseOffset(batch, int64(e.GetIndex())-1)
	return batch
}

// proto returns s as raft's HardState.
func (s hardState) proto() *pb.HardState {
	return &pb.HardState{Term: proto.Uint64(s.Term), Vote: proto.Uint64(s.Vote), Commit: proto.Uint64(s.Commit)}
}

// SaveSnapshot installs snap, a snapshot the leader sent (a Ready's
// Snapshot): it writes its checkpoint, restarts the partition empty after
// it, and hands it to raft's MemoryStorage. An empty snap changes nothing.
// Call it before Save of the same Ready.
func (s *Log) SaveSnapshot(snap *pb.Snapshot) error {
	if snap == nil || raft.IsEmptySnap(snap) {
		return nil
	}
	if err := s.writeCheckpoint(snap); err != nil {
		return err
	}
	if err := s.log.TruncateFullyAndStartAt(int64(snap.GetMetadata().GetIndex())); err != nil {
		return err
	}
	if err := s.MemoryStorage.ApplySnapshot(snap); err != nil {
		return err
	}
	return s.removeCheckpointsBefore(snap.GetMetadata().GetIndex())
}

// Seed starts the Raft log in partition l over from snap, a snapshot the
// caller made of a state kept before there was a Raft log: it writes
// snap's checkpoint in snapDir and restarts l empty at snap's index,
// dropping what l held. Open then reads snap and no entries. A crash
// in between leaves the checkpoint, which Open completes.
func Seed(l *log.Log, fsys vfs.FS, snapDir string, snap *pb.Snapshot) error {
	s := &Log{log: l, fs: fsys, snapDir: snapDir}
	if err := s.writeCheckpoint(snap); err != nil {
		return err
	}
	return l.TruncateFullyAndStartAt(int64(snap.GetMetadata().GetIndex()))
}

// Compact takes a snapshot at index, an applied entry, of the
// application's state data with configuration cs, writes its checkpoint,
// and drops the entries up to index from raft's MemoryStorage and, segment
// by segment, from the partition. data stays the caller's.
func (s *Log) Compact(index uint64, cs *pb.ConfState, data []byte) error {
	snap, err := s.MemoryStorage.CreateSnapshot(index, cs, append([]byte(nil), data...))
	if err != nil {
		return err
	}
	if err := s.writeCheckpoint(snap); err != nil {
		return err
	}
	if err := s.MemoryStorage.Compact(index); err != nil {
		return err
	}
	if err := s.log.DeleteRecordsBefore(int64(index)); err != nil {
		return err
	}
	return s.removeCheckpointsBefore(index)
}

// checkpointName is the file name of a snapshot at index and term.
func checkpointName(index, term uint64) string {
	return fmt.Sprintf("%020d-%010d.checkpoint", index, term)
}

// writeCheckpoint writes snap's checkpoint, atomically.
func (s *Log) writeCheckpoint(snap *pb.Snapshot) error {
	md := snap.GetMetadata()
	cs, err := proto.Marshal(md.GetConfState())
	if err != nil {
		return err
	}
	opts := record.DefaultBatchOptions()
	opts.PartitionLeaderEpoch = int32(md.GetTerm())
	b := record.NewBuilder(opts)
	b.Append(record.Record{Key: []byte("c"), Value: cs})
	b.Append(record.Record{Key: []byte("d"), Value: snap.GetData()})
	batch := b.Build()
	record.SetBaseOffset(batch, int64(md.GetIndex())-1)
	return vfs.WriteFileAtomic(s.fs, path.Join(s.snapDir, checkpointName(md.GetIndex(), md.GetTerm())), batch)
}

// checkpoints returns the indexes and terms of the checkpoints in the
// snapshot directory, oldest first.
func (s *Log) checkpoints() ([][2]uint64, error) {
	names, err := s.fs.List(s.snapDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out [][2]uint64
	for _, name := range names {
		var index, term uint64
		if _, err := fmt.Sscanf(name, "%020d-%010d.checkpoint", &index, &term); err == nil && name == checkpointName(index, term) {
			out = append(out, [2]uint64{index, term})
		}
	}
	slices.SortFunc(out, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	return out, nil
}

// newestSnapshot reads the newest checkpoint, or returns nil when there is
// none.
func (s *Log) newestSnapshot() (*pb.Snapshot, error) {
	cps, err := s.checkpoints()
	if err != nil || len(cps) == 0 {
		return nil, err
	}
	index, term := cps[len(cps)-1][0], cps[len(cps)-1][1]
	name := path.Join(s.snapDir, checkpointName(index, term))
	data, err := readFile(s.fs, name)
	if err != nil {
		return nil, err
	}
	b, err := record.Decode(data)
	if err != nil || len(b.Records) != 2 || string(b.Records[0].Key) != "c" || string(b.Records[1].Key) != "d" {
		return nil, fmt.Errorf("%w: %s is not a checkpoint (%v)", ErrCorrupt, name, err)
	}
	var cs pb.ConfState
	if err := proto.Unmarshal(b.Records[0].Value, &cs); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	return &pb.Snapshot{Data: append([]byte(nil), b.Records[1].Value...),
		Metadata: &pb.SnapshotMetadata{Index: proto.Uint64(index), Term: proto.Uint64(term), ConfState: &cs}}, nil
}

// removeCheckpointsBefore removes the checkpoints older than index.
func (s *Log) removeCheckpointsBefore(index uint64) error {
	cps, err := s.checkpoints()
	if err != nil {
		return err
	}
	for _, cp := range cps {
		if cp[0] < index {
			if err := s.fs.Remove(path.Join(s.snapDir, checkpointName(cp[0], cp[1]))); err != nil {
				return err
			}
		}
	}
	return nil
}
