package log_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/internal/batchtest"
	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/vfs"
)

// TestTruncateFullyWhileReading: a follower restarting its log at a new
// offset (TruncateFullyAndStartAt) while readers read it. The old segments
// used to be closed before they left the list readers walk, so a read
// could find a closed segment ("segment: closed", or an unmapped index).
// A read may find its offset gone (ErrOffsetOutOfRange); nothing else.
func TestTruncateFullyWhileReading(t *testing.T) {
	for name, dir := range map[string]string{"mem": "", "os": t.TempDir()} {
		t.Run(name, func(t *testing.T) {
			opts := smallOptions(newMem(t))
			if dir != "" {
				opts = smallOptions(nil)
			}
			opts.IndexIntervalBytes = 1
			l, err := plog.Open(dir+"/p-0", opts)
			require.NoError(t, err)
			defer l.Close()
			var (
				stop    atomic.Bool
				readers sync.WaitGroup
				bad     atomic.Value
			)
			for range 2 {
				readers.Go(func() {
					for !stop.Load() {
						start := l.LogStartOffset()
						_, err := l.Read(nil, start, start+100, 1<<16)
						if err == nil {
							var r vfs.FileRange
							if r, err = l.ReadRange(start, start+100, 1<<16); err == nil {
								r.Close()
							}
						}
						if err != nil && !errors.Is(err, plog.ErrOffsetOutOfRange) && !errors.Is(err, plog.ErrNoDescriptor) {
							bad.CompareAndSwap(nil, err)
						}
					}
				})
			}
			for range 150 {
				for range 5 {
					_, err := l.Append(batchtest.Simple(3, 1000))
					require.NoError(t, err)
				}
				require.NoError(t, l.TruncateFullyAndStartAt(l.LogEndOffset()+3))
			}
			stop.Store(true)
			readers.Wait()
			if err, _ := bad.Load().(error); err != nil {
				t.Fatalf("a read failed: %v", err)
			}
		})
	}
}
