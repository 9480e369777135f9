package consumer_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/consumer"
)

func TestRecordsLoopEndsWhenTheContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t)
		createTopic(t, n, "t", 1, nil)
		produceValues(t, n.Client(), "t", 0, "a", "b", "c")
		c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest))
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan string, 10)
		done := make(chan error)
		go func() {
			for rec, err := range c.Records(ctx) {
				if err != nil {
					done <- err
					return
				}
				got <- string(rec.Value)
			}
			close(done)
		}()
		for _, want := range []string{"a", "b", "c"} {
			require.Equal(t, want, <-got)
		}
		synctest.Wait() // the loop waits for more
		cancel()
		require.NoError(t, <-done, "the loop ends without an error")
		require.Equal(t, int64(3), position(t, c, tp("t", 0)))
	})
}

func TestRecordsLoopEndsOnClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t)
		createTopic(t, n, "t", 1, nil)
		c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest))
		done := make(chan int)
		go func() {
			seen := 0
			for _, err := range c.Records(context.Background()) {
				require.NoError(t, err)
				seen++
			}
			done <- seen
		}()
		produceValues(t, n.Client(), "t", 0, "a")
		synctest.Wait()
		require.NoError(t, c.Close())
		require.Equal(t, 1, <-done)
	})
}

func TestRecordsBreakKeepsThePosition(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 2, nil)
	produceValues(t, n.Client(), "t", 0, seq("a", 10)...)
	produceValues(t, n.Client(), "t", 1, seq("b", 10)...)
	c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0), tp("t", 1)), consumer.AutoOffsetReset(consumer.Earliest))
	var seen []string
	for rec, err := range c.Records(context.Background()) {
		require.NoError(t, err)
		seen = append(seen, string(rec.Value))
		if len(seen) == 13 {
			break
		}
	}
	// Whatever the order of the partitions, each goes on from the record
	// after the last one the loop saw.
	rest := values(pollN(t, c, 20-len(seen)))
	require.ElementsMatch(t, append(seq("a", 10), seq("b", 10)...), append(seen, rest...))
	for _, p := range []int32{0, 1} {
		require.Equal(t, int64(10), position(t, c, tp("t", p)))
	}
}

func TestRecordsBreakThenLoopAgain(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 1, nil)
	produceValues(t, n.Client(), "t", 0, seq("v", 10)...)
	c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest))
	var seen []string
	for range 4 {
		for rec, err := range c.Records(context.Background()) {
			require.NoError(t, err)
			seen = append(seen, string(rec.Value))
			if len(seen)%3 == 0 || len(seen) == 10 {
				break
			}
		}
	}
	require.Equal(t, seq("v", 10), seen)
}

func TestSeekInsideTheLoop(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 1, nil)
	produceValues(t, n.Client(), "t", 0, seq("v", 10)...)
	c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest))
	var seen []string
	seeked := false
	for rec, err := range c.Records(context.Background()) {
		require.NoError(t, err)
		seen = append(seen, string(rec.Value))
		if rec.Offset == 2 && !seeked {
			seeked = true
			require.NoError(t, c.Seek(rec.TopicPartition(), 8))
		}
		if rec.Offset == 9 {
			break
		}
	}
	require.Equal(t, []string{"v0", "v1", "v2", "v8", "v9"}, seen)
}

func TestRecordsYieldsErrorsAndGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t)
		createTopic(t, n, "t", 1, nil)
		produceValues(t, n.Client(), "t", 0, "a", "b")
		c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.None))
		var seen []string
		errs := 0
		for rec, err := range c.Records(context.Background()) {
			if err != nil {
				requireFetchError(t, err, tp("t", 0), consumer.ErrNoOffset)
				errs++
				require.NoError(t, c.Seek(tp("t", 0), 1))
				continue
			}
			seen = append(seen, string(rec.Value))
			break
		}
		require.Equal(t, 1, errs)
		require.Equal(t, []string{"b"}, seen)
	})
}

func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t)
		createTopic(t, n, "t", 1, nil)
		c, err := consumer.New(n.Client(), consumer.Partitions(tp("t", 0)), consumer.FetchMaxWait(time.Hour))
		require.NoError(t, err)
		done := make(chan error)
		go func() {
			_, err := c.Poll(context.Background(), time.Hour)
			done <- err
		}()
		synctest.Wait() // Poll waits, and the fetcher in the node
		require.NoError(t, c.Close())
		require.ErrorIs(t, <-done, consumer.ErrClosed)
		// The bubble ends only when every goroutine has: Close stopped the
		// fetcher, which was waiting in the node for an hour.

		require.ErrorIs(t, c.Close(), consumer.ErrClosed)
		_, err = c.Poll(context.Background(), 0)
		require.ErrorIs(t, err, consumer.ErrClosed)
		require.ErrorIs(t, c.Seek(tp("t", 0), 0), consumer.ErrClosed)
		_, err = c.Position(context.Background(), tp("t", 0))
		require.ErrorIs(t, err, consumer.ErrClosed)
		for rec := range c.Records(context.Background()) {
			t.Fatalf("a record after Close: %v", rec)
		}
	})
}

func TestCloseBeforePoll(t *testing.T) {
	n := openNode(t)
	c, err := consumer.New(n.Client(), consumer.Topics("t"))
	require.NoError(t, err)
	require.NoError(t, c.Close())
}

func TestPauseInsideTheLoopLosesNothing(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 1, nil)
	produceValues(t, n.Client(), "t", 0, seq("v", 10)...)
	c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest))
	var seen []string
	for rec, err := range c.Records(context.Background()) {
		require.NoError(t, err)
		seen = append(seen, string(rec.Value))
		if len(seen) == 4 {
			require.NoError(t, c.Pause())
			break
		}
	}
	require.Equal(t, int64(4), position(t, c, tp("t", 0)))
	fs, err := c.Poll(context.Background(), 0)
	require.NoError(t, err)
	require.True(t, fs.Empty(), "paused")
	require.NoError(t, c.Resume())
	require.Equal(t, seq("v", 10)[4:], values(pollN(t, c, 6)))
}
