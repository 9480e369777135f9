package producer_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
)

// TestNextBatchWhilePromisesRun holds the promise of a partition's first
// batch: with one batch in flight per partition (acks=1, no idempotence),
// the next batch is still appended while that promise runs — a batch
// whose answer came counts no longer — but its own promise waits its
// turn, so promises keep offset order.
func TestNextBatchWhilePromisesRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := openNode(t)
		createTopic(t, node, "t", 1, nil)
		// Each 100-byte record fills a batch of 256 bytes.
		valueA, valueB := "a"+strings.Repeat(".", 99), "b"+strings.Repeat(".", 99)
		p := newProducer(t, node.Client(), producer.Acks(kafka.AcksLeader), producer.Linger(0), producer.BatchSize(256))
		entered, release := make(chan struct{}), make(chan struct{})
		// On failure, the held promise must end before Close waits for it.
		releaseOnce := sync.OnceFunc(func() { close(release) })
		t.Cleanup(releaseOnce)
		var order []string
		first := &producer.Record{Topic: "t", Value: []byte(valueA)}
		p.Produce(context.Background(), first, func(r *producer.Record, err error) {
			require.NoError(t, err)
			order = append(order, "a")
			close(entered)
			<-release
		})
		<-entered
		second := &producer.Record{Topic: "t", Value: []byte(valueB)}
		p.Produce(context.Background(), second, func(r *producer.Record, err error) {
			require.NoError(t, err)
			order = append(order, "b")
		})
		synctest.Wait()
		values := fetchValues(t, node, "t", 0)
		require.Equal(t, []string{valueA, valueB}, values, "the second batch waited for the first one's promises")
		require.Equal(t, []string{"a"}, order, "the second promise ran before the first returned")

		releaseOnce()
		require.NoError(t, p.Flush(context.Background()))
		require.Equal(t, []string{"a", "b"}, order)
		require.Equal(t, int64(0), first.Offset)
		require.Equal(t, int64(1), second.Offset)
	})
}
