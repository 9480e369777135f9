package partlog_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// TestFetchWaitingWhenNodeCloses long-polls a fetch on a node with
// nothing to read and closes the node under it: the fetch gets
// ErrClosed, as a request that arrives after Close does — not an answer
// whose partitions failed with ErrClosed, which a consumer takes for a
// fatal error of the partition. A client of a cluster then tries the
// partition's new leader.
func TestFetchWaitingWhenNodeCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t, vfs.NewMem())
		require.NoError(t, n.CreateTopic(context.Background(), partlog.NewTopic{Name: "t"}))
		produce(t, n, "t", 0, "a")

		type answer struct {
			resp *transport.FetchResponse
			err  error
		}
		done := make(chan answer, 1)
		go func() {
			resp, err := n.Client().Fetch(context.Background(), &transport.FetchRequest{MaxWait: time.Minute, MinBytes: 1,
				Topics: []transport.FetchTopic{{Topic: "t", Partitions: []transport.FetchPartition{{Partition: 0, FetchOffset: 1}}}}})
			done <- answer{resp, err}
		}()
		synctest.Wait() // the fetch waits for a record at offset 1
		require.NoError(t, n.Close())
		a := <-done
		require.ErrorIs(t, a.err, partlog.ErrClosed, "answer: %+v", a.resp)
	})
}
