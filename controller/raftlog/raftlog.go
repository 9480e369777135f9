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
// Snapshots are not kept yet: the log starts at index 1.
package raftlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

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
	state     hardState
}

// hardState is quorum-state's content.
type hardState struct {
	Term   uint64 `json:"term"`
	Vote   uint64 `json:"vote"`
	Commit uint64 `json:"commit"`
}

// Open reads the Raft log in l and the HardState in the file statePath of
// fsys (none yet is an empty HardState), and returns them as a Log. The
// partition must start at offset 0 and hold only batches Save wrote, and
// its directory must be durable, as log.Dir or vfs.MkdirAllDurable makes
// it: Save syncs the partition's files, not the directories above them.
// l stays the caller's to close, after the Log's last use.
func Open(l *log.Log, fsys vfs.FS, statePath string) (*Log, error) {
	s := &Log{MemoryStorage: raft.NewMemoryStorage(), log: l, fs: fsys, statePath: statePath}
	if start := l.LogStartOffset(); start != 0 {
		return nil, fmt.Errorf("%w: the partition starts at offset %d, not 0", ErrCorrupt, start)
	}
	entries, err := s.read()
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

// read returns every entry of the partition, in order.
func (s *Log) read() ([]*pb.Entry, error) {
	var out []*pb.Entry
	var buf []byte
	for next := int64(0); next < s.log.LogEndOffset(); {
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
