package controller

import (
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/partlog/partlog/internal/props"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/vfs"
)

// ProducerIDsFileName is the file in a controller's directory (a node's
// on its own) that holds the producer id high-water mark: no id at or
// above it was ever handed out, and ids below it are never handed out
// again.
const ProducerIDsFileName = "producer-ids"

// producerIDs is the controller's allocator of producer ids, which it
// hands nodes in blocks. The end of a block is written durably before the
// block is handed out, so that a restart, clean or not, starts after
// every id ever given: the unused rest of a block is skipped, never
// reused.
type producerIDs struct {
	mu       sync.Mutex
	loaded   bool
	next     int64 // the next id to hand out
	blockEnd int64 // ids below this are reserved durably
}

// allocateBlock reserves size producer ids durably and returns the first:
// a controller hands nodes blocks of ids.
func (a *producerIDs) allocateBlock(fsys vfs.FS, file string, size int64) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.loadLocked(fsys, file); err != nil {
		return -1, err
	}
	start := a.next
	if err := a.reserveLocked(fsys, file, size); err != nil {
		return -1, err
	}
	a.next = a.blockEnd
	return start, nil
}

// loadLocked reads the high-water mark once. The caller holds mu.
func (a *producerIDs) loadLocked(fsys vfs.FS, file string) error {
	if a.loaded {
		return nil
	}
	mark, err := readProducerIDMark(fsys, file)
	if err != nil {
		return fmt.Errorf("%w: %w", kafka.ErrKafkaStorage, err)
	}
	a.next, a.blockEnd, a.loaded = mark, mark, true
	return nil
}

// reserveLocked durably moves the high-water mark size ids past the next
// id to hand out. The caller holds mu.
func (a *producerIDs) reserveLocked(fsys vfs.FS, file string, size int64) error {
	if a.next > math.MaxInt64-size {
		return fmt.Errorf("%w: producer ids used up", kafka.ErrUnknownServerError)
	}
	end := a.next + size
	if err := props.WriteAtomic(fsys, file, []byte(fmt.Sprintf("version=0\nnext.producer.id=%d\n", end))); err != nil {
		return fmt.Errorf("%w: %w", kafka.ErrKafkaStorage, err)
	}
	a.blockEnd = end
	return nil
}

// readProducerIDMark reads the high-water mark; a missing file is 0.
func readProducerIDMark(fsys vfs.FS, file string) (int64, error) {
	kv, err := props.Read(fsys, file)
	if err != nil || kv == nil {
		return 0, err
	}
	v, ok := kv["next.producer.id"]
	if !ok {
		return 0, fmt.Errorf("controller: %s has no next.producer.id", file)
	}
	mark, err := strconv.ParseInt(v, 10, 64)
	if err != nil || mark < 0 {
		return 0, fmt.Errorf("controller: %s: bad next.producer.id %q", file, v)
	}
	return mark, nil
}
