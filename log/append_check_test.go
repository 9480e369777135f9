package log_test

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/internal/batchtest"
	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

var errRefused = errors.New("refused by the check")

// tagCheck refuses batches whose first record's value starts with "no",
// and records what it saw and what failed, in order.
type tagCheck struct {
	mu     sync.Mutex
	seen   []int64 // base offsets of the batches let through
	failed int
}

func (c *tagCheck) CheckAppend(h record.Header, baseOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.BaseOffset != baseOffset {
		return fmt.Errorf("header base %d, offset %d", h.BaseOffset, baseOffset)
	}
	if h.BaseSequence == 1 { // the tests mark refused batches so
		return errRefused
	}
	c.seen = append(c.seen, baseOffset)
	return nil
}

func (c *tagCheck) AppendFailed(record.Header, error) {
	c.mu.Lock()
	c.failed++
	c.mu.Unlock()
}

// checkedBatch builds a batch of n records tagged tag; refuse marks it for
// tagCheck to refuse.
func checkedBatch(n int, tag string, refuse bool) []byte {
	b := batchtest.Build(batchtest.Spec{Records: n, ValueSize: 30, Timestamp: 1000, Tag: tag, Epoch: -1})
	h, _ := record.ParseHeader(b)
	opts := h.Options()
	if refuse {
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = 1, 0, 1
	}
	rb := record.NewBuilder(opts)
	d, _ := record.Decode(b)
	for _, r := range d.Records {
		rb.Append(r)
	}
	return rb.Build()
}

// TestAppendChecked: on both append paths — one at a time, and the write
// groups of sync-before-ack with many appenders — a refused batch is not
// written and takes no offset, the check sees each batch with the offset it
// gets, in log order, and everything let through is in the log, contiguous.
func TestAppendChecked(t *testing.T) {
	for _, syncAck := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync-before-ack=%v", syncAck), func(t *testing.T) {
			opts := smallOptions(newMem(t))
			opts.SyncBeforeAck = syncAck
			l := open(t, opts)
			defer l.Close()
			c := &tagCheck{}
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 30 {
						refuse := (g+i)%3 == 0
						_, err := l.AppendChecked(checkedBatch(1+i%3, fmt.Sprintf("g%d-%d", g, i), refuse), c)
						if refuse != errors.Is(err, errRefused) || !refuse && err != nil {
							t.Errorf("g%d-%d refuse=%v: %v", g, i, refuse, err)
						}
					}
				})
			}
			wg.Wait()
			var bases []int64
			for off := int64(0); off < l.LogEndOffset(); {
				data, err := l.Read(nil, off, l.LogEndOffset(), 1<<20)
				require.NoError(t, err)
				for len(data) > 0 {
					h, err := record.ParseHeader(data)
					require.NoError(t, err)
					require.EqualValues(t, -1, h.BaseSequence, "no refused batch is in the log")
					require.Equal(t, off, h.BaseOffset, "contiguous")
					bases = append(bases, h.BaseOffset)
					off = h.NextOffset()
					data = data[h.Size():]
				}
			}
			require.Equal(t, c.seen, bases, "checked in log order, with the offsets they got")
			require.Zero(t, c.failed)
		})
	}
}

// TestAppendCheckedFailedWrite: a batch that passed its check but could not
// be written (disk full) is reported to AppendFailed, and takes no offset.
func TestAppendCheckedFailedWrite(t *testing.T) {
	for _, syncAck := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync-before-ack=%v", syncAck), func(t *testing.T) {
			var full bool
			var mu sync.Mutex
			fsys := vfs.WithFaults(newMem(t), vfs.InjectorFunc(func(op vfs.Op) error {
				mu.Lock()
				defer mu.Unlock()
				if full && op.Kind == vfs.OpWrite {
					return syscall.ENOSPC
				}
				return nil
			}))
			opts := smallOptions(fsys)
			opts.SyncBeforeAck = syncAck
			l := open(t, opts)
			defer l.Close()
			c := &tagCheck{}
			_, err := l.AppendChecked(checkedBatch(2, "a", false), c)
			require.NoError(t, err)
			mu.Lock()
			full = true
			mu.Unlock()
			_, err = l.AppendChecked(checkedBatch(2, "b", false), c)
			require.ErrorIs(t, err, plog.ErrDiskFull)
			require.Equal(t, 1, c.failed)
			mu.Lock()
			full = false
			mu.Unlock()
			info, err := l.AppendChecked(checkedBatch(2, "c", false), c)
			require.NoError(t, err)
			require.EqualValues(t, 2, info.FirstOffset)
			require.Equal(t, []int64{0, 2, 2}, c.seen, "b was checked at 2, failed, and c got 2")
		})
	}
}
