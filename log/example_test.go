package log_test

import (
	"fmt"

	"github.com/partlog/partlog/kafka"
	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// Append a batch, which gets the log's next offsets, and read it back.
func ExampleLog_Append() {
	fsys := vfs.NewMem() // the OS filesystem when Options.FS is nil
	l, err := plog.Open("/data/study-0", plog.Options{FS: fsys, SyncBeforeAck: true})
	if err != nil {
		panic(err)
	}
	defer l.Close()

	for _, words := range [][]string{{"hello", "world"}, {"again"}} {
		b := record.NewBuilder(record.DefaultBatchOptions())
		for _, w := range words {
			b.Append(record.Record{Timestamp: 1700000000000, Key: []byte("greeting"), Value: []byte(w)})
		}
		info, err := l.Append(b.Build())
		if err != nil {
			panic(err)
		}
		fmt.Printf("appended offsets %d..%d\n", info.FirstOffset, info.LastOffset)
	}

	data, err := l.Read(nil, 1, l.LogEndOffset(), 1<<20)
	if err != nil {
		panic(err)
	}
	for len(data) > 0 {
		h, _ := record.ParseHeader(data)
		batch, err := record.Decode(data[:h.Size()])
		if err != nil {
			panic(err)
		}
		for _, r := range batch.Records {
			if r.Offset >= 1 { // a read starts at the batch holding the offset
				fmt.Printf("offset %d: %s=%s\n", r.Offset, r.Key, r.Value)
			}
		}
		data = data[h.Size():]
	}
	fmt.Println("log end offset:", l.LogEndOffset(), "durable below:", l.RecoveryPoint())
	// Output:
	// appended offsets 0..1
	// appended offsets 2..2
	// offset 1: greeting=world
	// offset 2: greeting=again
	// log end offset: 3 durable below: 3
}

// A Dir remembers, across restarts, whether its logs were closed cleanly.
func ExampleDir() {
	fsys := vfs.NewMem()
	tp := kafka.TopicPartition{Topic: "study", Partition: 1}
	d, _ := plog.OpenDir("/data", plog.DirOptions{FS: fsys})
	l, _ := d.Open(tp, plog.Options{})
	b := record.NewBuilder(record.DefaultBatchOptions())
	b.Append(record.Record{Value: []byte("hello")})
	l.Append(b.Build())
	d.Close()

	d, _ = plog.OpenDir("/data", plog.DirOptions{FS: fsys})
	defer d.Close()
	l, _ = d.Open(tp, plog.Options{})
	fmt.Println("clean:", l.LoadReport().Clean, "segments scanned:", len(l.LoadReport().Recovered), "log end offset:", l.LogEndOffset())
	// Output: clean: true segments scanned: 0 log end offset: 1
}
