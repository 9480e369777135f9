package partlog_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// damageTopics are the fixture's topics, each of damagePartitions.
var damageTopics = []string{"a", "b"}

const damagePartitions = 2

// FuzzDamagedDirectory closes a node's data directory cleanly (or, by the
// input's first byte, as a crash would leave it), damages it as the rest
// of the input says — bytes flipped, files cut short or grown with
// garbage, files removed, stray segment files added, checkpoints
// overwritten with garbage — and opens it again. The node must open (one
// partition's damage never keeps it from serving the others), nothing may
// panic, and every partition that is online must still hand back, byte for
// byte, every record below the first damaged batch of its segments.
//
// go test -run '^$' -fuzz FuzzDamagedDirectory .
func FuzzDamagedDirectory(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{0, 0, 3, 0, 40, 7})                 // a flipped byte in a segment
	f.Add([]byte{1, 1, 5, 0, 200, 0})                // a segment cut short, after a crash
	f.Add([]byte{0, 2, 9, 0, 0, 60})                 // garbage appended
	f.Add([]byte{0, 3, 2, 0, 0, 0})                  // a file removed
	f.Add([]byte{0, 4, 1, 0, 7, 30, 4, 1, 9, 99, 5}) // stray segments
	f.Add([]byte{1, 5, 0, 0, 0, 40, 5, 1, 0, 0, 9})  // checkpoints overwritten
	f.Fuzz(func(t *testing.T, input []byte) {
		if len(input) == 0 {
			return
		}
		mem, acked := damageFixture(t)
		fsys := vfs.FS(mem)
		if input[0]%2 == 1 {
			// A crash: the clean-shutdown marker was never written.
			fsys.Remove(path.Join("/data", log.CleanShutdownFileName))
		}
		lost := damage(t, mem, input[1:])

		n, err := partlog.Open("/data", partlog.Filesystem(fsys))
		if err != nil {
			t.Fatalf("the node refused to open after %v: %v", input, err)
		}
		defer n.Close()
		for _, topic := range damageTopics {
			d, err := n.DescribeTopics(topic)
			if err != nil {
				t.Fatalf("describe %s: %v", topic, err)
			}
			for _, pd := range d[0].Partitions {
				tp := kafka.TopicPartition{Topic: topic, Partition: pd.Partition}
				if pd.Offline != nil {
					continue // kept on disk, not served: not lost
				}
				below := lost[tp.String()]
				want := acked[tp.String()]
				got := readBelow(t, n, tp, below)
				for off := int64(0); off < below && off < int64(len(want)); off++ {
					if off >= int64(len(got)) || got[off] != want[off] {
						t.Fatalf("%s: record %d lost or altered below the damage at %d (read %d records)", tp, off, below, len(got))
					}
				}
			}
		}
	})
}

// damageFixture writes the fixture's topics on a MemFS node with small
// segments, closes it cleanly, and returns the filesystem and, by
// partition directory name, the values acknowledged at each offset.
func damageFixture(t *testing.T) (*vfs.MemFS, map[string][]string) {
	t.Helper()
	mem := vfs.NewMem()
	n, err := partlog.Open("/data", partlog.Filesystem(mem),
		partlog.TopicDefaults(map[string]string{"segment.bytes": "1024", "segment.index.bytes": "4096", "index.interval.bytes": "128"}))
	if err != nil {
		t.Fatal(err)
	}
	acked := map[string][]string{}
	for _, topic := range damageTopics {
		if err := n.CreateTopic(context.Background(), partlog.NewTopic{Name: topic, Partitions: damagePartitions}); err != nil {
			t.Fatal(err)
		}
		for p := range int32(damagePartitions) {
			tp := kafka.TopicPartition{Topic: topic, Partition: p}.String()
			for i := range 30 {
				values := []string{fmt.Sprintf("%s/%d/a", tp, i), fmt.Sprintf("%s/%d/b", tp, i)}
				resp, err := n.Client().Produce(context.Background(), &transport.ProduceRequest{Acks: kafka.AcksAll, Topics: []transport.ProduceTopic{{
					Topic: topic, Partitions: []transport.ProducePartition{{Partition: p, Records: batchOf(values...)}}}}})
				if err != nil || resp.Topics[0].Partitions[0].Err != nil {
					t.Fatalf("produce: %v %v", err, resp.Topics[0].Partitions[0].Err)
				}
				acked[tp] = append(acked[tp], values...)
			}
		}
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	return mem, acked
}

// damage applies the ops input encodes to the partitions' files and the
// checkpoints, and returns, by partition, the lowest offset a damaged
// batch of it starts at (math.MaxInt64 where no record can be lost:
// index files, checkpoints, garbage after the last batch, stray files).
func damage(t *testing.T, mem *vfs.MemFS, input []byte) map[string]int64 {
	t.Helper()
	lost := map[string]int64{}
	var dirs []string
	for _, topic := range damageTopics {
		for p := range int32(damagePartitions) {
			name := kafka.TopicPartition{Topic: topic, Partition: p}.String()
			dirs = append(dirs, name)
			lost[name] = math.MaxInt64
		}
	}
	checkpoints := []string{log.RecoveryPointFileName, log.LogStartOffsetFileName, log.CleanerOffsetFileName}
	for len(input) >= 5 {
		op, which, pos, v := input[0]%6, int(input[1]), int64(binary.BigEndian.Uint16(input[2:4])), input[4]
		input = input[5:]
		dir := dirs[which%len(dirs)]
		files := listFiles(t, mem, "/data/"+dir)
		if len(files) == 0 {
			continue
		}
		file := files[(which/len(dirs))%len(files)]
		full := path.Join("/data", dir, file)
		data := readFile(t, mem, full)
		t.Logf("damage op %d on %s (%d bytes): pos %d, v %d", op, full, len(data), pos, v) // shown when a case fails
		switch op {
		case 0: // flip a byte
			if len(data) == 0 {
				continue
			}
			i := pos % int64(len(data))
			noteLoss(lost, dir, file, data, i)
			data[i] ^= v | 1
			writeFile(t, mem, full, data)
		case 1: // cut short
			if len(data) == 0 {
				continue
			}
			i := pos % int64(len(data))
			noteLoss(lost, dir, file, data, i)
			writeFile(t, mem, full, data[:i])
		case 2: // garbage appended
			writeFile(t, mem, full, append(data, make([]byte, int(v))...))
		case 3: // removed
			if base, suffix, ok := segment.ParseFileName(file); ok && suffix == segment.LogSuffix {
				lost[dir] = min(lost[dir], base)
			} else if !ok {
				continue // partition.metadata and the epoch checkpoint are rebuilt
			}
			mem.Remove(full)
		case 4: // a stray segment file, with garbage or empty
			name := segment.FileName(int64(pos)+1, segment.LogSuffix)
			if slices.Contains(files, name) {
				continue
			}
			writeFile(t, mem, path.Join("/data", dir, name), make([]byte, int(v)%3*20))
		case 5: // a checkpoint overwritten with garbage
			garbage := make([]byte, int(v)%40)
			for i := range garbage {
				garbage[i] = byte(pos>>(i%16)) ^ byte(i*31)
			}
			writeFile(t, mem, path.Join("/data", checkpoints[which%len(checkpoints)]), garbage)
		}
	}
	return lost
}

// noteLoss records that the byte at i of a partition's file was damaged:
// for a segment's log, the records from the batch holding it on may be
// lost.
func noteLoss(lost map[string]int64, dir, file string, data []byte, i int64) {
	base, suffix, ok := segment.ParseFileName(file)
	if !ok || suffix != segment.LogSuffix {
		return
	}
	// Walk the batches of the file as written to find the one holding i.
	first := base
	for pos := int64(0); pos+record.HeaderSize <= int64(len(data)); {
		h, err := record.ParseHeader(data[pos:])
		if err != nil || pos+int64(h.Size()) > i {
			if err == nil {
				first = h.BaseOffset
			}
			break
		}
		pos += int64(h.Size())
		first = h.NextOffset()
	}
	lost[dir] = min(lost[dir], first)
}

// readBelow reads tp's records from offset 0 below offset end, or until a
// read fails or returns nothing, and returns their values by offset.
func readBelow(t *testing.T, n *partlog.Node, tp kafka.TopicPartition, end int64) []string {
	t.Helper()
	var values []string
	for off := int64(0); off < end; {
		resp, err := n.Client().Fetch(context.Background(), &transport.FetchRequest{ReplicaID: -1, MaxBytes: 1 << 20,
			Topics: []transport.FetchTopic{{Topic: tp.Topic, Partitions: []transport.FetchPartition{{Partition: tp.Partition, FetchOffset: off, MaxBytes: 1 << 20}}}}})
		if err != nil {
			t.Fatalf("fetch %s at %d: %v", tp, off, err)
		}
		pr := resp.Topics[0].Partitions[0]
		if pr.Err != nil || len(pr.Records) == 0 {
			return values
		}
		for data := pr.Records; len(data) > 0 && off < end; {
			h, err := record.ParseHeader(data)
			if err != nil || h.Size() > len(data) {
				return values
			}
			b, err := record.Decode(data[:h.Size()])
			if err != nil {
				return values // a damaged batch: what follows is above the damage
			}
			for _, r := range b.Records {
				if r.Offset == int64(len(values)) {
					values = append(values, string(r.Value))
				}
			}
			off = max(off, h.NextOffset())
			data = data[h.Size():]
		}
	}
	return values
}

func listFiles(t *testing.T, fsys vfs.FS, dir string) []string {
	t.Helper()
	names, err := fsys.List(dir)
	if err != nil {
		return nil
	}
	var files []string
	for _, n := range names {
		if fi, err := fsys.Stat(path.Join(dir, n)); err == nil && !fi.IsDir() && !strings.HasPrefix(n, ".") {
			files = append(files, n)
		}
	}
	slices.Sort(files)
	return files
}

func readFile(t *testing.T, fsys vfs.FS, name string) []byte {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeFile(t *testing.T, fsys vfs.FS, name string, data []byte) {
	t.Helper()
	if err := vfs.WriteFileAtomic(fsys, name, data); err != nil {
		t.Fatal(err)
	}
}
