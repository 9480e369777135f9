package replica_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/vfs"
)

// gatedLog is a log whose appends wait at a gate: entered reports that an
// append began, and it goes on when open is closed.
type gatedLog struct {
	*log.Log
	entered chan struct{}
	open    chan struct{}
}

func (g *gatedLog) AppendAsFollower(b []byte) (log.AppendInfo, error) {
	g.entered <- struct{}{}
	<-g.open
	return g.Log.AppendAsFollower(b)
}

// startOne starts a single-replica leader (ISR of one) over w.
func startOne(t *testing.T, l *log.Log, w replica.LogWriter) *replica.Node {
	t.Helper()
	r, err := replica.New(1, kafka.TopicPartition{Topic: "p"}, l, testOptions(1))
	if err != nil {
		t.Fatal(err)
	}
	n := replica.StartNode(r, w, &chanTransport{nodes: map[int32]*replica.Node{}, cut: map[int32]bool{}}, replica.NodeOptions{})
	t.Cleanup(func() { n.Close() })
	if err := n.Apply(context.Background(), replica.LeaderAndISR{Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	return n
}

// requireLogHolds checks that l holds exactly want, batch after batch, byte
// for byte but for the base offset and leader epoch the leader stamps.
func requireLogHolds(t *testing.T, l *log.Log, want [][]byte) {
	t.Helper()
	data, err := l.Read(nil, 0, l.LogEndOffset(), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		h, err := record.ParseHeader(data)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		got := bytes.Clone(data[:h.Size()])
		record.SetBaseOffset(got, 0)
		record.SetPartitionLeaderEpoch(got, -1)
		if !bytes.Equal(got, w) {
			t.Fatalf("batch %d at offset %d is not the batch proposed", i, h.BaseOffset)
		}
		data = data[h.Size():]
	}
	if len(data) != 0 {
		t.Fatalf("%d bytes after the proposed batches", len(data))
	}
}

// requireWaiting checks, once every goroutine of the bubble is blocked,
// that Propose has not returned.
func requireWaiting(t *testing.T, done chan error) {
	t.Helper()
	synctest.Wait()
	select {
	case err := <-done:
		t.Fatalf("Propose returned (%v) while its batch was being written", err)
	default:
	}
}

// TestProposeBorrowsUntilWritten: Propose returns only once the loop is
// done with its batch, so a caller that reuses the buffer at once — a
// producer recycling a settled batch, or retrying one by re-encoding its
// header in place — cannot change what the log holds. Before, acks=0 was
// answered as soon as the loop accepted the batch, and a Propose whose
// context ended returned while the batch still waited to be written.
func TestProposeBorrowsUntilWritten(t *testing.T) {
	for _, c := range []struct {
		name   string
		acks   kafka.Acks
		cancel bool // the caller's context ends while the batch is written
	}{
		{"acks=0", kafka.AcksNone, false},
		{"cancelled", kafka.AcksAll, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, err := log.Open("/p-0", log.Options{FS: vfs.NewMem(), MaxIndexBytes: 4096})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				g := &gatedLog{Log: l, entered: make(chan struct{}), open: make(chan struct{})}
				n := startOne(t, l, g)

				batch := oneBatch("borrowed", c.name)
				want := bytes.Clone(batch)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan error, 1)
				go func() {
					_, err := n.Propose(ctx, batch, c.acks)
					done <- err
				}()
				<-g.entered // the write has begun
				if c.cancel {
					cancel()
				}
				requireWaiting(t, done)
				close(g.open)
				if err := <-done; err != nil && !(c.cancel && errors.Is(err, context.Canceled)) {
					t.Fatal(err)
				}
				for i := range batch {
					batch[i] = 42 // the caller's again
				}
				requireLogHolds(t, l, [][]byte{want})
			})
		})
	}
}

// TestProposeReusedBuffers proposes many batches with acks 0, 1 and all
// from one buffer that is overwritten as soon as each Propose returns:
// the log holds every batch as proposed.
func TestProposeReusedBuffers(t *testing.T) {
	l, err := log.Open("/p-0", log.Options{FS: vfs.NewMem(), MaxIndexBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	n := startOne(t, l, l)
	var (
		buf  []byte
		want [][]byte
	)
	for i := range 300 {
		b := record.NewBuilder(record.DefaultBatchOptions())
		for j := range 1 + i%5 {
			b.Append(record.Record{Value: fmt.Appendf(nil, "batch %d record %d", i, j)})
		}
		buf = b.AppendTo(buf[:0])
		want = append(want, bytes.Clone(buf))
		acks := []kafka.Acks{kafka.AcksNone, kafka.AcksLeader, kafka.AcksAll}[i%3]
		if _, err := n.Propose(context.Background(), buf, acks); err != nil {
			t.Fatal(err)
		}
		for k := range buf {
			buf[k] = 42
		}
	}
	requireLogHolds(t, l, want)
}
