package partlog_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// TestTxnProducerCrash is reliability test 23 (on a virtual clock, three
// nodes): a transactional producer adds three partitions, writes to two
// of them and dies. Left alone, the coordinator aborts the transaction
// once transaction.timeout.ms has passed — not before — and bumps the
// epoch; restarted before then with the same transactional id, the
// producer's InitProducerId aborts it at once. Either way every partition
// the transaction wrote gets an ABORT marker and no COMMIT, the last
// stable offsets reach the high watermarks, read_committed sees nothing
// of it, and the dead instance, should it wake, is fenced: its produce
// and its EndTxn fail.
func TestTxnProducerCrash(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "aborted by the timeout"
		if restart {
			name = "aborted by the restarted producer"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testTxnProducerCrash(t, restart) })
		})
	}
}

func testTxnProducerCrash(t *testing.T, restart bool) {
	const timeout = 5 * time.Second
	c := newTestCluster(t, 1, 2, 3)
	ctx := context.Background()
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: 3, ReplicationFactor: 3}))
	client, err := c.net.Client(ctx)
	require.NoError(t, err)
	defer client.Close()

	r := newRawTxnTimeout(t, ctx, client, "tx", 5, timeout)
	var tps []kafka.TopicPartition
	for p := range int32(3) {
		tps = append(tps, kafka.TopicPartition{Topic: "t", Partition: p})
	}
	r.add(tps...)
	written := tps[:2] // the producer dies before it writes to t-2
	for _, tp := range written {
		require.NoError(t, r.produceTo(tp, r.batchFor(tp, fmt.Sprintf("v%d", tp.Partition))))
	}
	died := time.Now()

	if restart {
		newRawTxnTimeout(t, ctx, client, "tx", 5, timeout)
	}
	for _, tp := range written {
		waitUntil(t, fmt.Sprintf("%s's ABORT marker", tp), func() bool {
			return len(c.markersOf(t, tp, r.producerID)) > 0 && c.stable(t, ctx, client, tp)
		})
		for _, m := range c.markersOf(t, tp, r.producerID) {
			require.Equal(t, record.ControlAbort, m, "%s", tp)
		}
		require.Empty(t, c.readCommitted(t, tp), "%s", tp)
	}
	if restart {
		require.Less(t, time.Since(died), timeout, "InitProducerId aborts at once")
	} else {
		require.GreaterOrEqual(t, time.Since(died), timeout, "the coordinator waits out the producer's timeout")
	}

	// The dead instance wakes: it is fenced everywhere.
	fenced := func(err error) bool {
		return errors.Is(err, kafka.ErrProducerFenced) || errors.Is(err, kafka.ErrInvalidProducerEpoch)
	}
	err = r.produceTo(tps[0], r.batchFor(tps[0], "late"))
	require.True(t, fenced(err), "the zombie's produce: %v", err)
	err = r.endOnce(transport.TxnCommit)
	require.True(t, fenced(err), "the zombie's EndTxn: %v", err)
	require.Empty(t, c.readCommitted(t, tps[0]))
}
