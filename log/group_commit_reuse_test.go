package log_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
)

// refuseOdd refuses the batches whose producer id is odd: a duplicate, as
// a partition's producer state would refuse it, decided inside the group
// commit under the append lock.
type refuseOdd struct{}

var errDuplicate = errors.New("duplicate batch")

func (refuseOdd) CheckAppend(h record.Header, _ int64) error {
	if h.ProducerID%2 == 1 {
		return errDuplicate
	}
	return nil
}

func (refuseOdd) AppendFailed(record.Header, error) {}

// reuseValue is the value of record i of appender a's n-th batch.
func reuseValue(a, n, i, size int) []byte {
	v := fmt.Appendf(nil, "a%d-b%d-r%d|", a, n, i)
	for len(v) < size {
		v = append(v, byte('a'+(a+n+len(v))%26))
	}
	return v
}

// TestGroupCommitCallerReusesBatch is the regression test of the corruption
// of acknowledged records by the group commit: the log kept a caller's batch
// as its coalescing scratch when a run held one written batch and a refused
// one, and the next group copied other batches over it — over the bytes of
// a producer's pooled buffer. Here appenders share write groups (sync before
// ack) and each builds every batch in one buffer of its own that it
// overwrites as soon as Append returns, as a producer's pool does; in the
// same groups, batches are refused by the check (duplicates), are too large,
// or fail their CRC. Every batch the log acknowledged must read back
// exactly as it was built, at the offsets Append returned, and nothing else
// may be in the log.
func TestGroupCommitCallerReusesBatch(t *testing.T) {
	opts := smallOptions(newMem(t))
	opts.SyncBeforeAck = true
	opts.SegmentBytes = 64 << 10
	opts.MaxMessageBytes = 2000
	l := open(t, opts)
	defer l.Close()

	const appenders, batches = 8, 250
	type acked struct {
		info  plog.AppendInfo
		batch []byte // a copy of the batch as it was appended
	}
	var (
		mu     sync.Mutex
		byBase = map[int64]acked{}
		wg     sync.WaitGroup
	)
	for a := range appenders {
		wg.Go(func() {
			var buf []byte // this appender's one batch buffer
			for n := range batches {
				kind := (a + n) % 5
				opts := record.DefaultBatchOptions()
				opts.ProducerID = int64(2 * n)
				if kind == 1 {
					opts.ProducerID++ // refused by the check, in the group
				}
				b := record.NewBuilder(opts)
				records, size := 1+n%7, 20+(a*37+n*11)%90
				if kind == 2 {
					records, size = 3, 900 // too large for MaxMessageBytes
				}
				for i := range records {
					b.Append(record.Record{Timestamp: int64(1000 + n), Key: []byte{byte(a), byte(i)}, Value: reuseValue(a, n, i, size)})
				}
				buf = b.AppendTo(buf[:0])
				if kind == 3 {
					buf[len(buf)-1] ^= 0xff // bad CRC
				}
				want := bytes.Clone(buf)
				info, err := l.AppendChecked(buf, refuseOdd{})
				// The caller owns buf again: scribble over it, as the next
				// batch built in a pooled buffer would.
				for i := range buf {
					buf[i] = 42
				}
				switch kind {
				case 1:
					if !errors.Is(err, errDuplicate) {
						t.Errorf("appender %d batch %d: want the check's refusal, got %v", a, n, err)
					}
					continue
				case 2:
					if !errors.Is(err, plog.ErrRecordTooLarge) {
						t.Errorf("appender %d batch %d: want ErrRecordTooLarge, got %v", a, n, err)
					}
					continue
				case 3:
					if !errors.Is(err, record.ErrCorrupt) {
						t.Errorf("appender %d batch %d: want record.ErrCorrupt, got %v", a, n, err)
					}
					continue
				}
				if err != nil {
					t.Errorf("appender %d batch %d: %v", a, n, err)
					return
				}
				record.SetBaseOffset(want, info.FirstOffset)
				mu.Lock()
				byBase[info.FirstOffset] = acked{info, want}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// The log holds exactly the acknowledged batches, byte for byte.
	var next int64
	for next < l.LogEndOffset() {
		data, err := l.Read(nil, next, l.LogEndOffset(), 1<<20)
		require.NoError(t, err)
		for len(data) > 0 {
			h, err := record.ParseHeader(data)
			require.NoError(t, err, "at offset %d", next)
			got := data[:h.Size()]
			a, ok := byBase[h.BaseOffset]
			require.True(t, ok, "batch at %d was never acknowledged", h.BaseOffset)
			require.Equal(t, next, h.BaseOffset, "the log is contiguous")
			require.Equal(t, a.info.LastOffset, h.LastOffset())
			// The log stamps no leader epoch of its own; everything else
			// is the caller's bytes.
			if !bytes.Equal(a.batch, got) {
				_, derr := record.Decode(got)
				t.Fatalf("batch at %d differs from the one acknowledged (decodes: %v)", h.BaseOffset, derr)
			}
			delete(byBase, h.BaseOffset)
			next = h.NextOffset()
			data = data[h.Size():]
		}
	}
	require.Empty(t, byBase, "acknowledged batches missing from the log")
}
