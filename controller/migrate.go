package controller

import (
	"fmt"
	"log/slog"
	"math"
	"path"
	"strconv"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/partlog/partlog/controller/raftlog"
	"github.com/partlog/partlog/internal/props"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// EpochFileName is the file in which a controller before the quorum
// counted its starts, in its directory: its metadata versions started at
// that epoch times 2^32. A metadata log migrated from that time starts its
// Raft log above every version it handed out (see migrateLogStore).
const EpochFileName = "controller-epoch"

// isLogStore reports whether l holds a metadata log a LogStore wrote —
// the log of a single controller before the quorum — rather than a Raft
// log: its records have no key, where each Raft entry's has one byte.
func isLogStore(l *log.Log) (bool, error) {
	from, end := l.LogStartOffset(), l.LogEndOffset()
	if from == end {
		return false, nil
	}
	buf, err := l.Read(nil, from, end, 1<<20)
	if err != nil {
		return false, fmt.Errorf("controller: read metadata at %d: %w", from, err)
	}
	h, err := record.ParseHeader(buf)
	if err != nil {
		return false, fmt.Errorf("controller: metadata batch at %d: %w", from, err)
	}
	b, err := record.Decode(buf[:h.Size()])
	if err != nil {
		return false, fmt.Errorf("controller: metadata batch at %d: %w", from, err)
	}
	return len(b.Records) > 0 && b.Records[0].Key == nil, nil
}

// migrateLogStore turns the metadata log l of a single controller before
// the quorum into a Raft log whose only voter is id: it replays l into a
// Machine and seeds the Raft log with a snapshot of that state (see
// raftlog.Seed), at an index above every metadata version the controller
// handed out, so that the nodes that know one take the next. A log that is
// not a LogStore's is left alone; a crash part way leaves the old log,
// which the next start migrates again.
func migrateLogStore(l *log.Log, id int32, fsys vfs.FS, dir, snapDir string, logger *slog.Logger, opts Options) error {
	old, err := isLogStore(l)
	if err != nil || !old {
		return err
	}
	m, err := NewMachine(NewLogStore(l), opts)
	if err != nil {
		return err
	}
	epoch, err := readEpoch(fsys, path.Join(dir, EpochFileName))
	if err != nil {
		return err
	}
	index := uint64(l.LogEndOffset()) + 1
	if epoch > 0 {
		index = uint64(epoch+1) << 32
	}
	snap := &pb.Snapshot{Data: appendRecords(nil, m.Snapshot()), Metadata: &pb.SnapshotMetadata{
		Index: proto.Uint64(index), Term: proto.Uint64(1), ConfState: &pb.ConfState{Voters: []uint64{raftID(id)}}}}
	if err := raftlog.Seed(l, fsys, snapDir, snap); err != nil {
		return fmt.Errorf("controller: migrate the metadata log: %w", err)
	}
	logger.Info("metadata log migrated to a Raft log", "index", index, "voter", id)
	return nil
}

// readEpoch reads the epoch in file, or 0 when there is none.
func readEpoch(fsys vfs.FS, file string) (int64, error) {
	kv, err := props.Read(fsys, file)
	if err != nil || kv == nil {
		return 0, err
	}
	v, ok := kv["epoch"]
	if !ok {
		return 0, nil
	}
	epoch, err := strconv.ParseInt(v, 10, 32)
	if err != nil || epoch < 0 || epoch >= math.MaxInt32 {
		return 0, fmt.Errorf("controller: %s: bad epoch %q", file, v)
	}
	return epoch, nil
}
