package log_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/internal/batchtest"
	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
)

// TestConcurrentAppendersAndReaders appends from several goroutines, with
// and without sync-before-ack, while others read what has been appended and
// retention and flushes run: every append gets a distinct range of offsets,
// every read sees whole, valid batches in offset order, and in the end each
// appended record is in the log exactly once. Run it with -race.
func TestConcurrentAppendersAndReaders(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(fmt.Sprint("sync=", sync), func(t *testing.T) {
			opts := smallOptions(newMem(t))
			opts.SyncBeforeAck = sync
			l := open(t, opts)
			defer l.Close()
			runConcurrently(t, l)
		})
	}
}

func runConcurrently(t *testing.T, l *plog.Log) {
	const appenders, each = 4, 60
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firsts   = map[int64]string{}
		stop     = make(chan struct{})
		readErrs = make(chan error, 8)
	)
	for a := range appenders {
		wg.Go(func() {
			for i := range each {
				tag := fmt.Sprint(a, "-", i)
				info, err := l.Append(batchtest.Build(batchtest.Spec{Records: 1 + i%4, ValueSize: 40, Tag: tag, Epoch: -1}))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				firsts[info.FirstOffset] = tag
				mu.Unlock()
			}
		})
	}
	var readers sync.WaitGroup
	for range 3 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				off := l.LogEndOffset() / 2
				data, err := l.Read(nil, off, l.LogEndOffset(), 2000)
				if err != nil {
					readErrs <- err
					return
				}
				prev := int64(-1)
				for len(data) > 0 {
					b, err := record.Decode(data[:mustSize(data)])
					if err != nil || b.BaseOffset <= prev {
						readErrs <- fmt.Errorf("read at %d: %v (after %d)", off, err, prev)
						return
					}
					prev = b.LastOffset()
					data = data[b.Size():]
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(readErrs)
	for err := range readErrs {
		require.NoError(t, err)
	}
	require.Len(t, firsts, appenders*each, "every append got its own offsets")
	seen := map[string]int{}
	for _, r := range readAll(t, l, 0) {
		seen[tagOf(r.Value)]++
	}
	for i := range each {
		for a := range appenders {
			require.Equal(t, 1+i%4, seen[fmt.Sprint(a, "-", i)], "batch %d-%d", a, i)
		}
	}
}

func mustSize(b []byte) int {
	h, err := record.ParseHeader(b)
	if err != nil {
		return len(b)
	}
	return min(h.Size(), len(b))
}
