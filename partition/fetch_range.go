package partition

import (
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/vfs"
)

// FetchRange is Fetch for a network server: rather than reading the
// batches, it returns where they lie in a segment file, as a vfs.FileRange
// whose descriptor the caller sends with sendfile and closes. A zero range
// means no records. On a filesystem without file descriptors it returns
// log.ErrNoDescriptor, unwrapped, and the caller uses Fetch. It is
// FetchRangeIsolated at kafka.ReadUncommitted.
func (p *Partition) FetchRange(offset int64, maxBytes int) (FetchResult, vfs.FileRange, error) {
	return p.FetchRangeIsolated(offset, maxBytes, kafka.ReadUncommitted)
}
