package log_test

import (
	"context"
	"fmt"

	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// Compact a log: each key keeps only its latest record, at its offset.
func ExampleLog_Clean() {
	l, err := plog.Open("/data/profiles-0", plog.Options{
		FS:                     vfs.NewMem(),
		SegmentBytes:           1024, // small segments, so that some are sealed
		MaxIndexBytes:          1024,
		CleanupPolicy:          plog.CleanupCompact,
		MinCleanableDirtyRatio: -1, // clean whatever is dirty
	})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	for i := range 40 {
		b := record.NewBuilder(record.DefaultBatchOptions())
		key := []string{"ada", "bob"}[i%2]
		b.Append(record.Record{Timestamp: 1700000000000, Key: []byte(key), Value: fmt.Appendf(nil, "v%d", i)})
		if _, err := l.Append(b.Build()); err != nil {
			panic(err)
		}
	}
	// Clean up to the high watermark; here, everything appended.
	st, err := l.Clean(context.Background(), l.LogEndOffset())
	if err != nil {
		panic(err)
	}
	fmt.Printf("cleaned below %d: %d records read, %d kept\n", st.FirstUncleanableOffset, st.RecordsRead, st.RecordsKept)

	// A read returns the batches of one segment; emptied batches keep the
	// segments' offset ranges.
	for off := int64(0); off < l.LogEndOffset(); {
		data, _ := l.Read(nil, off, l.LogEndOffset(), 1<<20)
		for len(data) > 0 {
			h, _ := record.ParseHeader(data)
			batch, _ := record.Decode(data[:h.Size()])
			for _, r := range batch.Records {
				fmt.Printf("offset %d: %s=%s\n", r.Offset, r.Key, r.Value)
			}
			off = h.NextOffset()
			data = data[h.Size():]
		}
	}
	// Output:
	// cleaned below 39: 39 records read, 2 kept
	// offset 37: bob=v37
	// offset 38: ada=v38
	// offset 39: bob=v39
}
