package controller

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/partlog/partlog/internal/props"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/vfs"
)

// ProducerIDsFileName is the file in which a controller before the quorum
// (a node's on its own) kept the producer id high-water mark, in its
// directory: no id at or above it was handed out, and ids below it are
// never handed out again. Blocks of producer ids are now records of the
// metadata log; a controller that finds the file hands out no id below
// its mark.
const ProducerIDsFileName = "producer-ids"

// producerIDFloor reads the high-water mark of ProducerIDsFileName once,
// for every block the controller hands out: ids start at or above it.
type producerIDFloor struct {
	mu     sync.Mutex
	loaded bool
	mark   int64
}

// get returns the mark in file, 0 when there is none, and an error
// matching kafka.ErrKafkaStorage when the file cannot be read.
func (f *producerIDFloor) get(fsys vfs.FS, file string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loaded {
		return f.mark, nil
	}
	mark, err := readProducerIDMark(fsys, file)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", kafka.ErrKafkaStorage, err)
	}
	f.mark, f.loaded = mark, true
	return mark, nil
}

// producerIDBlock is how many producer ids a node gets at once, as
// Kafka's controller hands brokers blocks of 1000.
const producerIDBlock = 1000

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
