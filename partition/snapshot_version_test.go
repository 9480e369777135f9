package partition

import (
	"encoding/hex"
	"path"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// TestSnapshotVersions: a snapshot is written as version 2, with each
// producer's coordinator epoch and open transaction, byte for byte; a
// version 1 file, as partlog wrote before transactions, still loads, its
// producers with no coordinator epoch and no open transaction.
func TestSnapshotVersions(t *testing.T) {
	e := ProducerStateEntry{ProducerID: 5, ProducerEpoch: 2, LastTimestamp: 7, CoordinatorEpoch: 3, CurrentTxnFirstOffset: 9,
		Batches: []BatchMetadata{{FirstSequence: 0, LastSequence: 1, FirstOffset: 9, LastOffset: 10, Timestamp: 7}}}
	got := hex.EncodeToString(encodeSnapshot([]ProducerStateEntry{e}))
	want := "0002" + got[4:12] + "00000001" + // version 2, crc, one producer
		"0000000000000005" + "0002" + "0000000000000007" + "00000003" + "0000000000000009" + "0001" +
		"00000000" + "00000001" + "0000000000000009" + "000000000000000a" + "0000000000000007"
	if got != want {
		t.Fatalf("version 2 snapshot\n got %s\nwant %s", got, want)
	}

	fsys := vfs.NewMem()
	opts := log.Options{FS: fsys, MaxIndexBytes: 4096}
	l, err := log.Open("/data/t-0", opts)
	if err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.UnixMilli(2000) }
	p := New("t", 0, 1, 0, l, Options{Now: now})
	b := record.NewBuilder(record.DefaultBatchOptions())
	b.SetProducer(4, 1, 0)
	b.Append(record.Record{Timestamp: 1000, Value: []byte("v")})
	if _, err := p.Append(b.Build(), kafka.AcksAll); err != nil {
		t.Fatal(err)
	}
	before, err := p.ProducerStates()
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Replace the snapshot Close wrote with the state in version 1, its
	// timestamp changed so that the state tells it was read, not rebuilt
	// from the log.
	before[0].LastTimestamp = 1500
	name := path.Join("/data/t-0", SnapshotFileName(1))
	if err := vfs.WriteFileAtomic(fsys, name, encodeSnapshotVersion(before, 1)); err != nil {
		t.Fatal(err)
	}
	opts.CleanShutdown = true
	l, err = log.Open("/data/t-0", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p = New("t", 0, 1, 0, l, Options{Now: now})
	defer p.Close()
	after, err := p.ProducerStates()
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 1 || after[0].CoordinatorEpoch != -1 || after[0].CurrentTxnFirstOffset != -1 ||
		after[0].ProducerEpoch != 1 || len(after[0].Batches) != 1 || after[0].LastTimestamp != 1500 {
		t.Fatalf("version 1 snapshot loaded as %+v", after)
	}
	entries, err := readSnapshot(fsys, "/data/t-0", 1)
	if err != nil || len(entries) != 1 {
		t.Fatalf("the version 1 file: %v %v", entries, err)
	}
}
