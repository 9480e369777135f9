package partlog

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// The Node hands out producer ids to idempotent producers.
var _ transport.ProducerIDClient = (*Node)(nil)

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

// InitProducerID hands out a new producer id with epoch 0, from a block
// the controller reserved for this node, for an
// idempotent producer (an empty TransactionalID). Transactional ids are not
// supported yet: they are answered with kafka.ErrInvalidRequest. A
// failure to persist the id block is kafka.ErrKafkaStorage, and the
// id space running out (after 2^63 ids) ErrUnknownServerError.
func (n *Node) InitProducerID(ctx context.Context, req *transport.InitProducerIDRequest) (*transport.InitProducerIDResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.InitProducerIDResponse{ProducerID: -1, ProducerEpoch: -1}
	if req.TransactionalID != "" {
		resp.Err = fmt.Errorf("%w: transactional id %q: transactions are not supported yet", kafka.ErrInvalidRequest, req.TransactionalID)
		return resp, nil
	}
	id, err := n.member.producerID(ctx)
	if err != nil {
		n.logger.Error("allocating a producer id failed", "err", err)
		resp.Err = err
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
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
	if err := writeAtomic(fsys, file, []byte(fmt.Sprintf("version=0\nnext.producer.id=%d\n", end))); err != nil {
		return fmt.Errorf("%w: %w", kafka.ErrKafkaStorage, err)
	}
	a.blockEnd = end
	return nil
}

// readProducerIDMark reads the high-water mark; a missing file is 0.
func readProducerIDMark(fsys vfs.FS, file string) (int64, error) {
	props, err := readProperties(fsys, file)
	if err != nil || props == nil {
		return 0, err
	}
	v, ok := props["next.producer.id"]
	if !ok {
		return 0, fmt.Errorf("partlog: %s has no next.producer.id", file)
	}
	mark, err := strconv.ParseInt(v, 10, 64)
	if err != nil || mark < 0 {
		return 0, fmt.Errorf("partlog: %s: bad next.producer.id %q", file, v)
	}
	return mark, nil
}

// ExpireProducers forgets, in every partition, the idempotent producers
// whose last batch is ProducerIDExpiration or more older than the node's
// clock, as the node does every ProducerIDExpirationCheckInterval.
func (n *Node) ExpireProducers() error {
	if err := n.begin(); err != nil {
		return err
	}
	defer n.end()
	n.removeExpiredProducers()
	return nil
}

// removeExpiredProducers forgets, in every partition, the idempotent
// producers silent for longer than ProducerIDExpiration.
func (n *Node) removeExpiredProducers() {
	now := n.opts.now()
	for _, p := range n.member.partitions() {
		if k := p.RemoveExpiredProducers(now); k > 0 {
			n.logger.Info("forgot expired producers", "partition", partitionName(p), "producers", k)
		}
	}
}
