// Quickstart writes records to a topic's two partitions with partlog's
// storage engine, reads them back, and shows the files a newcomer should
// recognise from Kafka: one directory per partition, segment files named by
// their base offset, and the checkpoints of a cleanly closed log directory.
//
//	go run ./examples/quickstart [-dir DIR]
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
)

func main() {
	dir := flag.String("dir", filepath.Join(os.TempDir(), "partlog-quickstart"), "data directory (emptied first)")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

const partitions = 2

func run(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	fmt.Printf("data directory: %s\n\n", dir)

	// A log directory holds the partitions' logs, as one of Kafka's log.dirs.
	d, err := log.OpenDir(dir, log.DirOptions{})
	if err != nil {
		return err
	}
	opts := log.Options{
		SyncBeforeAck: true,     // every append is on disk before it returns
		SegmentBytes:  16 << 10, // small segments, so that several appear
		MaxIndexBytes: 64 << 10, // and small preallocated indexes
	}
	logs := make([]*log.Log, partitions)
	for p := range logs {
		if logs[p], err = d.Open(log.TopicPartition{Topic: "study", Partition: int32(p)}, opts); err != nil {
			return err
		}
	}

	// Keyed records go to the partition of their key's hash, so one key's
	// records stay in order; unkeyed ones take turns.
	fmt.Println("producing 1,000 keyed and 1,000 unkeyed records, in batches of 50 ...")
	perPartition := make([][]record.Record, partitions)
	now := time.Now().UnixMilli()
	for i := range 1000 {
		key := fmt.Sprintf("user-%d", i%7)
		p := int(xxhash.Sum64String(key) % partitions)
		perPartition[p] = append(perPartition[p], record.Record{Timestamp: now, Key: []byte(key), Value: []byte(fmt.Sprintf("keyed hello %d", i))})
		perPartition[i%partitions] = append(perPartition[i%partitions], record.Record{Timestamp: now, Value: []byte(fmt.Sprintf("unkeyed hello %d", i))})
	}
	for p, recs := range perPartition {
		for start := 0; start < len(recs); start += 50 {
			b := record.NewBuilder(record.DefaultBatchOptions())
			for _, r := range recs[start:min(start+50, len(recs))] {
				b.Append(r)
			}
			if _, err := logs[p].Append(b.Build()); err != nil {
				return err
			}
		}
	}
	for p, l := range logs {
		fmt.Printf("  study-%d: %4d records, offsets %d..%d\n", p, l.LogEndOffset()-l.LogStartOffset(), l.LogStartOffset(), l.LogEndOffset()-1)
	}

	fmt.Println("\nconsuming every record from the beginning ...")
	for p, l := range logs {
		keys := map[string]int{}
		n, first, last, err := consume(l, func(r record.Record) {
			if r.Key != nil {
				keys[string(r.Key)]++
			}
		})
		if err != nil {
			return err
		}
		fmt.Printf("  study-%d: consumed %d records, offsets %d..%d; keys here: %s\n", p, n, first, last, keyList(keys))
	}

	if err := d.Close(); err != nil {
		return err
	}
	fmt.Println("\nthe data directory after a clean close:")
	if err := listFiles(dir); err != nil {
		return err
	}

	// Reopening after a clean close reads no segment through.
	d, err = log.OpenDir(dir, log.DirOptions{})
	if err != nil {
		return err
	}
	defer d.Close()
	l, err := d.Open(log.TopicPartition{Topic: "study", Partition: 0}, opts)
	if err != nil {
		return err
	}
	r := l.LoadReport()
	fmt.Printf("\nreopened study-0: clean shutdown %v, segments scanned %d, log end offset %d\n", r.Clean, len(r.Recovered), l.LogEndOffset())
	return nil
}

// consume reads a log from its start and calls f for each record.
func consume(l *log.Log, f func(record.Record)) (n int, first, last int64, err error) {
	first = -1
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		data, err := l.Read(nil, off, l.LogEndOffset(), 64<<10)
		if err != nil {
			return n, first, last, err
		}
		for len(data) > 0 {
			h, err := record.ParseHeader(data)
			if err != nil {
				return n, first, last, err
			}
			batch, err := record.Decode(data[:h.Size()])
			if err != nil {
				return n, first, last, err
			}
			for _, r := range batch.Records {
				if r.Offset < off {
					continue
				}
				if first < 0 {
					first = r.Offset
				}
				last = r.Offset
				n++
				f(r)
			}
			off = h.NextOffset()
			data = data[h.Size():]
		}
	}
	return n, first, last, nil
}

func keyList(keys map[string]int) string {
	var out []string
	for i := range 7 {
		k := fmt.Sprintf("user-%d", i)
		if keys[k] > 0 {
			out = append(out, fmt.Sprintf("%s×%d", k, keys[k]))
		}
	}
	return strings.Join(out, " ")
}

func listFiles(dir string) error {
	return filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		indent := strings.Repeat("    ", strings.Count(rel, string(filepath.Separator)))
		if e.IsDir() {
			fmt.Printf("  %s%s/\n", indent, e.Name())
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		fmt.Printf("  %s%-32s %8d bytes\n", indent, e.Name(), info.Size())
		return nil
	})
}
