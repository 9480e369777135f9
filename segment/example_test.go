package segment_test

import (
	"fmt"

	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

// A segment takes batches whose offsets are assigned, and finds them again.
func ExampleSegment_Append() {
	fsys := vfs.NewMem()
	fsys.MkdirAll("/data/study-0", 0o755)
	s, err := segment.Create(fsys, "/data/study-0", 100, 0, segment.Options{})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	for i := range 3 {
		b := record.NewBuilder(record.DefaultBatchOptions())
		b.Append(record.Record{Timestamp: int64(1000 + i), Value: []byte("v")})
		b.Append(record.Record{Timestamp: int64(1000 + i), Value: []byte("w")})
		batch := b.Build()
		record.SetBaseOffset(batch, s.NextOffset())
		h, _ := record.Validate(batch)
		if err := s.Append(h, batch); err != nil {
			panic(err)
		}
	}
	pos, h, _, _ := s.Locate(103)
	fmt.Println(s.Path(segment.LogSuffix))
	fmt.Printf("offset 103 is in the batch %d..%d at position %d\n", h.BaseOffset, h.LastOffset(), pos)
	off, _, _, _ := s.FindOffsetByTimestamp(1002)
	fmt.Println("first record at 1002 ms or later:", off)
	// Output:
	// /data/study-0/00000000000000000100.log
	// offset 103 is in the batch 102..103 at position 77
	// first record at 1002 ms or later: 104
}
