// Quickstart is partlog's first run: it opens a data directory, creates the
// topic "study" with two partitions, produces keyed and unkeyed records,
// consumes them all back, and shows what a newcomer should recognise from
// Kafka — how records spread over partitions, the offsets consumed, and the
// study-0 and study-1 directories with their segment files.
//
//	go run ./examples/quickstart [-dir DIR]
//
// The directory is emptied first: the default one lives under the OS's
// temporary directory, and a directory of your own must be a partlog data
// directory (or empty) to be used.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/producer"
)

func main() {
	dir := flag.String("dir", filepath.Join(os.TempDir(), "partlog-quickstart"), "data directory (emptied first)")
	flag.Parse()
	if err := run(context.Background(), *dir); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir string) error {
	if err := emptyDataDir(dir); err != nil {
		return err
	}
	fmt.Printf("data directory: %s\n\n", dir)

	// A node hosts topics in its data directory. Segment files are made
	// small here so that several show up.
	node, err := partlog.Open(dir)
	if err != nil {
		return err
	}
	defer node.Close()
	err = node.CreateTopic(ctx, partlog.NewTopic{Name: "study", Partitions: 2, Configs: map[string]string{
		"segment.bytes":       "16384",
		"segment.index.bytes": "65536",
	}})
	if err != nil {
		return err
	}
	fmt.Println("created topic study with 2 partitions")

	// Produce: a keyed record goes to the partition of its key's hash, so
	// one key's records stay in order; unkeyed records take turns.
	p, err := producer.New(node.Client(), producer.Linger(2*time.Millisecond))
	if err != nil {
		return err
	}
	const n = 1000
	for i := range n {
		key := fmt.Sprintf("user-%d", i%7)
		p.Produce(ctx, &producer.Record{Topic: "study", Key: []byte(key), Value: []byte(fmt.Sprintf("keyed hello %d", i))}, nil)
		p.Produce(ctx, &producer.Record{Topic: "study", Value: []byte(fmt.Sprintf("unkeyed hello %d", i))}, nil)
	}
	// One more, waiting for its offset.
	last := &producer.Record{Topic: "study", Key: []byte("user-0"), Value: []byte("last hello")}
	if err := p.ProduceSync(ctx, last).FirstErr(); err != nil {
		return err
	}
	if err := p.Close(); err != nil {
		return err
	}
	fmt.Printf("produced %d keyed and %d unkeyed records; the last went to study-%d at offset %d\n\n", n+1, n, last.Partition, last.Offset)

	// Consume everything from the beginning.
	c, err := consumer.New(node.Client(), consumer.Topics("study"), consumer.AutoOffsetReset(consumer.Earliest))
	if err != nil {
		return err
	}
	defer c.Close()
	type seen struct {
		count, first, last int64
		keys               map[string]int
	}
	parts := map[int32]*seen{}
	total := 0
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for rec, err := range c.Records(ctx) {
		if err != nil {
			return err
		}
		s := parts[rec.Partition]
		if s == nil {
			s = &seen{first: rec.Offset, keys: map[string]int{}}
			parts[rec.Partition] = s
		}
		s.count++
		s.last = rec.Offset
		if rec.Key != nil {
			s.keys[string(rec.Key)]++
		}
		if total++; total == 2*n+1 {
			break
		}
	}
	fmt.Println("consumed from the beginning:")
	for _, id := range []int32{0, 1} {
		s := parts[id]
		if s == nil {
			fmt.Printf("  study-%d: nothing\n", id)
			continue
		}
		fmt.Printf("  study-%d: %4d records, offsets %d..%d; keys here: %s\n", id, s.count, s.first, s.last, keyList(s.keys))
	}
	if err := c.Close(); err != nil {
		return err
	}

	descs, err := node.DescribeTopics("study")
	if err != nil {
		return err
	}
	fmt.Println("\npartitions:")
	for _, d := range descs[0].Partitions {
		fmt.Printf("  study-%d: log start offset %d, log end offset %d, high watermark %d, %d bytes\n",
			d.Partition, d.LogStartOffset, d.LogEndOffset, d.HighWatermark, d.Size)
	}
	if err := node.Close(); err != nil {
		return err
	}
	fmt.Println("\nthe data directory after a clean close, laid out as a Kafka log directory:")
	return listFiles(dir)
}

// emptyDataDir removes dir's contents if it is a partlog data directory or
// does not hold anything else.
func emptyDataDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, partlog.MetaPropertiesFileName)); err != nil && len(entries) > 0 {
		return fmt.Errorf("%s holds files but is not a partlog data directory; give an empty one", dir)
	}
	return os.RemoveAll(dir)
}

func keyList(keys map[string]int) string {
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	for i, k := range names {
		names[i] = fmt.Sprintf("%s×%d", k, keys[k])
	}
	return strings.Join(names, " ")
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
			if strings.HasPrefix(e.Name(), "__") {
				return filepath.SkipDir // the node's own metadata
			}
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
