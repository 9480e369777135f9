package partlog_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

func initProducerID(t *testing.T, n *partlog.Node) int64 {
	t.Helper()
	resp, err := n.Client().InitProducerID(context.Background(), &transport.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	require.EqualValues(t, 0, resp.ProducerEpoch)
	return resp.ProducerID
}

// TestProducerIDsNeverReused: producer ids are unique, concurrent callers
// included, and a restart — clean, or a crash that keeps only what was
// synced — never hands out an id again: the node persists the end of each
// block of 1000 ids before it uses the block.
func TestProducerIDsNeverReused(t *testing.T) {
	fsys := vfs.NewMem()
	n := openNode(t, fsys)
	seen := map[int64]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				resp, err := n.Client().InitProducerID(context.Background(), &transport.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
				if err != nil || resp.Err != nil {
					t.Error(err, resp.Err)
					return
				}
				mu.Lock()
				if seen[resp.ProducerID] {
					t.Errorf("id %d handed out twice", resp.ProducerID)
				}
				seen[resp.ProducerID] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, seen, 1600)
	for id := range int64(1600) {
		require.True(t, seen[id], "ids are dense within blocks: %d", id)
	}

	// A crash: the node is abandoned, and its disk keeps what was synced.
	crashed := fsys.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
	n2 := openNode(t, crashed)
	require.EqualValues(t, 2000, initProducerID(t, n2), "the rest of the block in use is skipped")
	require.NoError(t, n2.Close())
	n3 := openNode(t, crashed)
	require.EqualValues(t, 3000, initProducerID(t, n3), "after a clean close too")
	require.NoError(t, n3.Close())
	require.NoError(t, n.Close())
}

// TestProducerIDsAboveTheOldMark: a data directory from before the
// controller kept producer id blocks in its metadata log has the
// high-water mark in a file; no id below it is handed out.
func TestProducerIDsAboveTheOldMark(t *testing.T) {
	fsys := vfs.NewMem()
	require.NoError(t, vfs.MkdirAllDurable(fsys, "/data", 0o755))
	require.NoError(t, vfs.WriteFileAtomic(fsys, "/data/"+partlog.ProducerIDsFileName, []byte("version=0\nnext.producer.id=7000\n")))
	n := openNode(t, fsys)
	require.EqualValues(t, 7000, initProducerID(t, n))
	require.NoError(t, n.Close())
	n = openNode(t, fsys)
	require.EqualValues(t, 8000, initProducerID(t, n), "the block 7000-7999 is in the metadata log")
	require.NoError(t, n.Close())
}

// TestTransactionalInitProducerID: a transactional id is bound to one
// producer id, and every InitProducerId for it bumps the epoch — which
// fences the instance before — across a restart of the node too: the
// coordinator's state is in __transaction_state.
func TestTransactionalInitProducerID(t *testing.T) {
	fsys := vfs.NewMem()
	ctx := context.Background()
	init := func(n *partlog.Node, id string) (int64, int16) {
		t.Helper()
		req := &transport.InitProducerIDRequest{TransactionalID: id, TransactionTimeout: time.Minute, ProducerID: -1, ProducerEpoch: -1}
		for {
			resp, err := n.Client().InitProducerID(ctx, req)
			require.NoError(t, err)
			if errors.Is(resp.Err, kafka.ErrCoordinatorLoadInProgress) || errors.Is(resp.Err, kafka.ErrConcurrentTransactions) {
				continue // the first block of producer ids is being fetched
			}
			require.NoError(t, resp.Err)
			return resp.ProducerID, resp.ProducerEpoch
		}
	}
	n := openNode(t, fsys)
	pid, epoch := init(n, "tx")
	require.Equal(t, int16(0), epoch)
	again, epoch := init(n, "tx")
	require.Equal(t, pid, again, "the id keeps its producer id")
	require.Equal(t, int16(1), epoch, "a new instance fences the old one")
	other, _ := init(n, "other")
	require.NotEqual(t, pid, other)
	require.NoError(t, n.Close())

	n = openNode(t, fsys)
	defer n.Close()
	again, epoch = init(n, "tx")
	require.Equal(t, pid, again, "the binding survives a restart")
	require.Equal(t, int16(2), epoch)
	resp, err := n.Client().InitProducerID(ctx, &transport.InitProducerIDRequest{TransactionalID: "tx", TransactionTimeout: 100 * time.Hour, ProducerID: -1, ProducerEpoch: -1})
	require.NoError(t, err)
	require.ErrorIs(t, resp.Err, kafka.ErrInvalidTransactionTimeout, "above transaction.max.timeout.ms")
}

// TestInitProducerIDErrors: a damaged id file fails clearly (and the node
// hands out nothing it cannot persist), and a closed node answers
// ErrClosed.
func TestInitProducerIDErrors(t *testing.T) {
	fsys := vfs.NewMem()
	n := openNode(t, fsys)
	require.NoError(t, n.Close())

	require.NoError(t, vfs.WriteFileAtomic(fsys, "/data/"+partlog.ProducerIDsFileName, []byte("version=0\nnext.producer.id=oops\n")))
	n = openNode(t, fsys)
	resp, err := n.Client().InitProducerID(context.Background(), &transport.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
	require.NoError(t, err)
	require.ErrorIs(t, resp.Err, kafka.ErrKafkaStorage)
	require.ErrorContains(t, resp.Err, "bad next.producer.id")
	require.NoError(t, n.Close())
	_, err = n.Client().InitProducerID(context.Background(), &transport.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
	require.True(t, errors.Is(err, partlog.ErrClosed))
}
