package log_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
)

// TestCleanWhileAppendingAndReading runs cleans in a loop beside appenders
// and readers (run it with -race). Appends never fail, readers always see
// well-formed batches with increasing offsets whose records are the ones
// appended there, and in the end each key's latest value is there at its
// offset and a final clean leaves exactly the compacted model.
func TestCleanWhileAppendingAndReading(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(fmt.Sprint("sync=", sync), func(t *testing.T) {
			opts := compactOptions(newMem(t), nil)
			opts.SyncBeforeAck = sync
			l := open(t, opts)
			defer l.Close()
			runCleanConcurrently(t, l)
		})
	}
}

func runCleanConcurrently(t *testing.T, l *plog.Log) {
	const appenders, each = 3, 150
	var (
		mu      sync.Mutex
		h       history
		writers sync.WaitGroup
		others  sync.WaitGroup
		stop    = make(chan struct{})
		errs    = make(chan error, 16)
		cleans  int
	)
	for a := range appenders {
		writers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(a), 99))
			for i := range each {
				var kvs []kv
				for j := range 1 + rng.IntN(3) {
					k := fmt.Sprintf("w%d-k%d", a, rng.IntN(10))
					kvs = append(kvs, put(k, fmt.Sprintf("%s#%d.%d", k, i, j)))
				}
				info, err := l.Append(keyedBatch(record.DefaultBatchOptions(), 1, kvs...))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for j, r := range kvs {
					h = append(h, written{offset: info.FirstOffset + int64(j), key: r.key, value: r.value})
				}
				mu.Unlock()
			}
		})
	}
	others.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			st, err := l.Clean(context.Background(), l.LogEndOffset())
			if err != nil && !errors.Is(err, plog.ErrCleanAborted) {
				errs <- err
				return
			}
			if st.Cleaned {
				cleans++
			}
		}
	})
	for r := range 3 {
		others.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := checkRead(l, rng); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	others.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Positive(t, cleans)
	t.Logf("%d cleans ran beside the appends", cleans)
	slices.SortFunc(h, func(a, b written) int { return cmp.Compare(a.offset, b.offset) })
	requireConsistent(t, h, readKV(t, l), "after concurrent cleans")
	clean(t, l)
	require.Equal(t, h.compacted(l.FirstDirtyOffset()), readKV(t, l))
}

// checkRead reads from a random offset and checks what came back.
func checkRead(l *plog.Log, rng *rand.Rand) error {
	start, leo := l.LogStartOffset(), l.LogEndOffset()
	if leo == start {
		return nil
	}
	off := start + rng.Int64N(leo-start)
	data, err := l.Read(nil, off, leo, 1+rng.IntN(4000))
	if err != nil {
		return fmt.Errorf("read at %d: %w", off, err)
	}
	prev := int64(-1)
	for len(data) > 0 {
		b, err := record.Decode(data[:mustSize(data)])
		if err != nil {
			return fmt.Errorf("read at %d: %w", off, err)
		}
		for _, r := range b.Records {
			if r.Offset <= prev || !strings.HasPrefix(string(r.Value), string(r.Key)+"#") {
				return fmt.Errorf("read at %d: record %d %q=%q after %d", off, r.Offset, r.Key, r.Value, prev)
			}
			prev = r.Offset
		}
		data = data[b.Size():]
	}
	return nil
}
