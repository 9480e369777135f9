package partlog_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/quota"
	"github.com/partlog/partlog/transport"
)

// throttles counts the throttles a franz-go client was told of.
type throttles struct{ n, total atomic.Int64 }

func (t *throttles) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		t.n.Add(1)
		t.total.Add(int64(d))
	}
}

// TestQuotas sets client quotas with franz-go's kadm (Kafka's
// AlterClientQuotas) on a node served with a quota.Manager over the
// node's quotas, and produces 256 KiB and consumes twice that with the
// client id they are for: a 128 KiB/s produce quota and fetch quota slow
// each to a second and three (a second's worth goes at once), the client is told
// throttle_time_ms and honours it, and every record arrives intact. A
// client id without a quota, on the same node at the same time, is never
// throttled (the negative control). DescribeClientQuotas gives the quotas
// back; removed, they throttle no more.
func TestQuotas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := partlog.Open(t.TempDir())
	require.NoError(t, err)
	defer n.Close()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "metered", Partitions: 1}))
	addr := serveWith(t, n.Client(), transport.ServerOptions{Quotas: &quota.Manager{Config: n.ClientQuotas, Window: time.Second}})
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer admin.Close()
	adm := kadm.NewClient(admin)

	const rate = 128 << 10
	slow := "slow"
	altered, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &slow}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: quota.ProducerByteRate, Value: rate}, {Key: quota.ConsumerByteRate, Value: rate}},
	}})
	require.NoError(t, err)
	require.NoError(t, altered[0].Err)
	described, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: &slow}})
	require.NoError(t, err)
	require.Len(t, described, 1)
	require.ElementsMatch(t, kadm.ClientQuotaValues{{Key: quota.ProducerByteRate, Value: rate}, {Key: quota.ConsumerByteRate, Value: rate}}, described[0].Values)

	value := bytes.Repeat([]byte("q"), 1000)
	// produce produces count records as clientID and returns the
	// throttles it was told of, how long it took, and the first error.
	// It runs on other goroutines than the test's: it reports, and the
	// test asserts.
	produce := func(clientID string, count int) (*throttles, time.Duration, error) {
		var th throttles
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(clientID), kgo.DefaultProduceTopic("metered"),
			kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.WithHooks(&th))
		if err != nil {
			return nil, 0, err
		}
		defer cl.Close()
		var failed atomic.Value
		began := time.Now()
		for i := range count {
			cl.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "%s-%d", clientID, i), Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.CompareAndSwap(nil, err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			return nil, 0, err
		}
		if err, _ := failed.Load().(error); err != nil {
			return nil, 0, err
		}
		return &th, time.Since(began), nil
	}
	const records = 256
	type produced struct {
		th  *throttles
		err error
	}
	fast := make(chan produced, 1)
	go func() { th, _, err := produce("fast", records); fast <- produced{th, err} }()
	th, took, err := produce(slow, records)
	require.NoError(t, err)
	t.Logf("slow produced 256 KiB in %v, told of %d throttles (%v)", took, th.n.Load(), time.Duration(th.total.Load()))
	require.Greater(t, th.n.Load(), int64(0), "no throttle_time_ms in the answers")
	require.GreaterOrEqual(t, took, 800*time.Millisecond, "256 KiB at 128 KiB/s with a second's burst")
	f := <-fast
	require.NoError(t, f.err)
	require.Zero(t, f.th.n.Load(), "a client id without a quota was throttled")

	// Both clients' records, each once, intact; slow reads them under its
	// fetch quota.
	var fth throttles
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(slow), kgo.ConsumeTopics("metered"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(32<<10), kgo.FetchMaxPartitionBytes(32<<10), kgo.WithHooks(&fth))
	require.NoError(t, err)
	defer cons.Close()
	seen := map[string]bool{}
	began := time.Now()
	for len(seen) < 2*records {
		fs := cons.PollFetches(ctx)
		require.NoError(t, fs.Err0())
		fs.EachRecord(func(r *kgo.Record) {
			require.Equal(t, value, r.Value)
			require.False(t, seen[string(r.Key)], "record %s twice", r.Key)
			seen[string(r.Key)] = true
		})
	}
	took = time.Since(began)
	t.Logf("slow fetched 512 KiB in %v, told of %d throttles", took, fth.n.Load())
	require.Greater(t, fth.n.Load(), int64(0))
	require.GreaterOrEqual(t, took, 2500*time.Millisecond, "512 KiB at 128 KiB/s with a second's burst")

	altered, err = adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &slow}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: quota.ProducerByteRate, Remove: true}, {Key: quota.ConsumerByteRate, Remove: true}},
	}})
	require.NoError(t, err)
	require.NoError(t, altered[0].Err)
	th, _, err = produce(slow, records)
	require.NoError(t, err)
	require.Zero(t, th.n.Load(), "throttled after the quota was removed")
}

// TestRequestQuota: a client id with request_percentage=0.1 (0.1% of a core)
// sending requests back to back is throttled once its second's burst of
// request time is spent, and told so; a client id without the quota,
// sending as many, is not.
func TestRequestQuota(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := partlog.Open(t.TempDir())
	require.NoError(t, err)
	defer n.Close()
	addr := serveWith(t, n.Client(), transport.ServerOptions{Quotas: &quota.Manager{Config: n.ClientQuotas, Window: time.Second}})
	qc, err := transport.Dial(ctx, addr, transport.DialOptions{})
	require.NoError(t, err)
	defer qc.Close()
	errs, err := qc.AlterClientQuotas(ctx, []transport.QuotaAlteration{{Entity: quota.Entity{ClientID: "busy"},
		Set: map[string]float64{quota.RequestPercentage: 0.1}}}, false)
	require.NoError(t, err)
	require.NoError(t, errs[0])

	send := func(clientID string, upTo int) (requests int, th *throttles) {
		th = &throttles{}
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(clientID), kgo.WithHooks(th))
		require.NoError(t, err)
		defer cl.Close()
		for requests < upTo && th.n.Load() == 0 {
			req := kmsg.NewPtrMetadataRequest()
			_, err := req.RequestWith(ctx, cl)
			require.NoError(t, err)
			requests++
		}
		return requests, th
	}
	busy, th := send("busy", 100000)
	t.Logf("busy: throttled after %d requests", busy)
	require.Greater(t, th.n.Load(), int64(0), "request_percentage=0.1: never throttled in %d requests", busy)
	calm, th := send("calm", busy)
	require.Equal(t, busy, calm)
	require.Zero(t, th.n.Load(), "a client id without the quota was throttled")
}
