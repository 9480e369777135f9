package partlog_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"

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

	data := readAll(t, crashed, "/data/"+partlog.ProducerIDsFileName)
	require.Equal(t, "version=0\nnext.producer.id=4000\n", data)
}

func readAll(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	require.NoError(t, err)
	defer f.Close()
	data, err := io.ReadAll(f)
	require.NoError(t, err)
	return string(data)
}

// TestInitProducerIDErrors: a transactional id is refused until
// transactions exist, a damaged id file fails clearly (and the node hands
// out nothing it cannot persist), and a closed node answers ErrClosed.
func TestInitProducerIDErrors(t *testing.T) {
	fsys := vfs.NewMem()
	n := openNode(t, fsys)
	resp, err := n.Client().InitProducerID(context.Background(), &transport.InitProducerIDRequest{TransactionalID: "tx", ProducerID: -1, ProducerEpoch: -1})
	require.NoError(t, err)
	require.ErrorIs(t, resp.Err, kafka.ErrInvalidRequest)
	require.NoError(t, n.Close())

	require.NoError(t, vfs.WriteFileAtomic(fsys, "/data/"+partlog.ProducerIDsFileName, []byte("version=0\nnext.producer.id=oops\n")))
	n = openNode(t, fsys)
	resp, err = n.Client().InitProducerID(context.Background(), &transport.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
	require.NoError(t, err)
	require.ErrorIs(t, resp.Err, kafka.ErrKafkaStorage)
	require.ErrorContains(t, resp.Err, "bad next.producer.id")
	require.NoError(t, n.Close())
	_, err = n.Client().InitProducerID(context.Background(), &transport.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
	require.True(t, errors.Is(err, partlog.ErrClosed))
}
