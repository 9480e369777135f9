package partition

import (
	"errors"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/vfs"
)

// FetchRange is Fetch for a network server: rather than reading the
// batches, it returns where they lie in a segment file, as a vfs.FileRange
// whose descriptor the caller sends with sendfile and closes. A zero range
// means no records. On a filesystem without file descriptors it returns
// log.ErrNoDescriptor, unwrapped, and the caller uses Fetch.
func (p *Partition) FetchRange(offset int64, maxBytes int) (FetchResult, vfs.FileRange, error) {
	p.mu.Lock()
	hw, closed := p.hw, p.closed
	p.mu.Unlock()
	if closed {
		return FetchResult{}, vfs.FileRange{}, kafka.ErrClosed
	}
	res := FetchResult{HighWatermark: hw, LogStartOffset: p.log.LogStartOffset()}
	r, err := p.log.ReadRange(offset, hw, maxBytes)
	if errors.Is(err, log.ErrNoDescriptor) {
		return res, r, err
	}
	if err != nil {
		return res, r, kafkaError(err)
	}
	return res, r, nil
}
