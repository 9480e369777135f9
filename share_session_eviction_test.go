package partlog_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/transport"
)

// TestShareSessionEviction: a share session unused for two minutes by the
// node's clock — its member gone without closing it — is evicted, and its
// member's next request finds SHARE_SESSION_NOT_FOUND (and may open a new
// one); a session used within the two minutes is kept, though its
// records' locks expired meanwhile.
func TestShareSessionEviction(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixMilli())
	advance := func(d time.Duration) { now.Add(d.Milliseconds()) }
	n, err := partlog.Open(t.TempDir(), partlog.OffsetsTopicPartitions(3), partlog.ShareStateTopicPartitions(3),
		partlog.Clock(func() time.Time { return time.UnixMilli(now.Load()) }))
	require.NoError(t, err)
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "jobs", Partitions: 1}))
	addr := serveWith(t, n.Client(), transport.ServerOptions{})

	a, b := newShareMember(t, addr, "workers", "member-a"), newShareMember(t, addr, "workers", "member-b")
	id := a.join(ctx, "jobs")[0].TopicID
	b.join(ctx, "jobs")
	got, _ := a.fetch(ctx, id, 0)
	require.Empty(t, got)
	for i := range 10 {
		require.NoError(t, produce(t, n, "jobs", 0, fmt.Sprintf("job-%d", i)).Err)
	}
	counts := func(got []fetched) []int16 {
		var out []int16
		for _, f := range got {
			out = append(out, f.count)
		}
		return out
	}
	got, _ = a.fetch(ctx, id, time.Second)
	require.Len(t, got, 10)
	got, _ = b.fetch(ctx, id, 0)
	require.Empty(t, got, "a holds every record")

	// 90 s on, the locks (30 s) expired; both sessions are kept, and a
	// fetches the records again.
	advance(90 * time.Second)
	partlogtest.TickShares(n)
	got, _ = a.fetch(ctx, id, time.Second)
	require.Equal(t, []int16{2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, counts(got))
	got, _ = b.fetch(ctx, id, 0)
	require.Empty(t, got)

	// 150 s: b fetches them once a's locks expired.
	advance(60 * time.Second)
	partlogtest.TickShares(n)
	got, _ = b.fetch(ctx, id, time.Second)
	require.Equal(t, []int16{3, 3, 3, 3, 3, 3, 3, 3, 3, 3}, counts(got))

	// 211 s: a's session, unused for 121 s, is evicted; b's, used 61 s
	// ago, is kept.
	advance(61 * time.Second)
	partlogtest.TickShares(n)
	resp, err := a.cl.ShareFetch(ctx, &transport.ShareFetchRequest{Group: "workers", MemberID: "member-a", ShareSessionEpoch: a.session,
		MaxRecords: 100, MaxBytes: 1 << 20, Topics: []transport.ShareFetchTopic{{TopicID: id, Partitions: []transport.ShareFetchPartition{{Partition: 0}}}}})
	require.NoError(t, err)
	require.True(t, errors.Is(resp.Err, kafka.ErrShareSessionNotFound), "a's idle session: %v", resp.Err)
	got, _ = b.fetch(ctx, id, time.Second)
	require.Equal(t, []int16{4, 4, 4, 4, 4, 4, 4, 4, 4, 4}, counts(got), "b's session goes on")

	// a opens a new session.
	a.session = 0
	got, _ = a.fetch(ctx, id, 0)
	require.Empty(t, got, "b holds every record")
}
