package partlog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// Transaction version 2 (KIP-890 part 2): the client adds no partition to
// its transaction; a transactional Produce of version 12 and up, and a
// TxnOffsetCommit of version 5 and up, have the broker add it, and every
// EndTxn moves the producer to the next epoch.

// markerEpochs returns the epochs of producerID's markers in the leader's
// replica of tp, in log order.
func (c *testCluster) markerEpochs(t *testing.T, tp kafka.TopicPartition, producerID int64) []int16 {
	var out []int16
	c.eachBatch(t, tp, func(h record.Header, _ *record.Batch) {
		if h.Attributes.IsControl() && h.ProducerID == producerID {
			out = append(out, h.ProducerEpoch)
		}
	})
	return out
}

// produceRetrying sends the transaction's next batch for tp while the
// leader answers NOT_ENOUGH_REPLICAS, as a Kafka producer retries it: the
// answer to a transaction whose coordinator is still ending the one
// before.
func (r *rawTxn) produceRetrying(tp kafka.TopicPartition, value string) {
	b := r.batchFor(tp, value)
	for range 100 {
		err := r.produceTo(tp, b)
		if !errors.Is(err, kafka.ErrNotEnoughReplicas) {
			require.NoError(r.t, err, "%s", tp)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.t.Fatalf("%s: the leader kept answering NOT_ENOUGH_REPLICAS", tp)
}

// TestTxnVersion2AcrossNodes (on a virtual clock): on three nodes, with
// the partitions' leaders apart from the transaction's coordinator, a
// transaction of a client speaking transaction version 2 writes three
// partitions and commits offsets without adding any of them: each leader
// adds its partition through AddPartitionsToTxn version 5 to the
// coordinator on another node, the group coordinator adds the offsets'
// partition, and every one gets the outcome's marker at the next epoch. A
// late batch of the committed transaction is then fenced by that epoch.
//
// The negative control is the protocol before it: the same requests in
// Produce versions below 12 and TxnOffsetCommit 4, with nothing added, are
// refused (KIP-890 part 1).
func TestTxnVersion2AcrossNodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, ctx, client := newTxnCluster(t)
		r := newRawTxn(t, ctx, client, "tx", 5)
		coordinator := c.leader(kafka.TransactionStateTopic, kafka.CoordinatorPartition("tx", kafka.DefaultCoordinatorPartitions))
		var tps []kafka.TopicPartition
		remote := 0
		for p := range int32(3) {
			tps = append(tps, kafka.TopicPartition{Topic: "t", Partition: p})
			if c.leader("t", p) != coordinator {
				remote++
			}
		}
		require.GreaterOrEqual(t, remote, 2, "partitions led away from the coordinator")

		// Before transaction version 2, a partition must have been added.
		for _, v := range []struct {
			version int16
			want    error
		}{{0, kafka.ErrInvalidTxnState}, {9, kafka.ErrInvalidTxnState}, {11, kafka.ErrTransactionAbortable}} {
			r.produceVersion = v.version
			for _, tp := range tps {
				require.ErrorIs(t, r.produceTo(tp, r.batchFor(tp, "refused")), v.want, "Produce v%d to %s", v.version, tp)
				r.sequence[tp] = 0
			}
		}
		r.offsetCommitVersion = 4
		require.ErrorIs(t, r.commitOffsetsOnce("g", "in", 0, 7), kafka.ErrInvalidTxnState,
			"TxnOffsetCommit v4 before AddOffsetsToTxn")

		// Transaction version 2: nothing added by the client.
		r.produceVersion, r.offsetCommitVersion = 12, 5
		first := r.producerEpoch
		for _, tp := range tps {
			r.produceRetrying(tp, fmt.Sprintf("v%d", tp.Partition))
		}
		r.commitOffsets("g", "in", 0, 7)
		r.end(transport.TxnCommit)
		require.Equal(t, first+1, r.producerEpoch, "EndTxn v5 moves the producer to the next epoch")
		offsetsTP := kafka.TopicPartition{Topic: kafka.OffsetsTopic, Partition: kafka.CoordinatorPartition("g", c.offsetsPartitions(t))}
		for _, tp := range append(tps, offsetsTP) {
			waitUntil(t, fmt.Sprintf("%s's marker", tp), func() bool {
				return len(c.markersOf(t, tp, r.producerID)) == 1 && c.stable(t, ctx, client, tp)
			})
			require.Equal(t, []record.ControlType{record.ControlCommit}, c.markersOf(t, tp, r.producerID), "%s", tp)
			require.Equal(t, []int16{first + 1}, c.markerEpochs(t, tp, r.producerID), "%s: the marker at the next epoch", tp)
		}
		for _, tp := range tps {
			require.Equal(t, []string{fmt.Sprintf("v%d", tp.Partition)}, c.readCommitted(t, tp), "%s", tp)
		}
		require.EqualValues(t, 7, fetchOffset(t, ctx, client, "g", "in", 0), "the offsets the broker added are committed")

		// The next transaction aborts, at the epoch after.
		r.produceRetrying(tps[0], "aborted")
		r.end(transport.TxnAbort)
		waitUntil(t, "the ABORT marker", func() bool { return len(c.markersOf(t, tps[0], r.producerID)) == 2 })
		require.Equal(t, []record.ControlType{record.ControlCommit, record.ControlAbort}, c.markersOf(t, tps[0], r.producerID))
		require.Equal(t, []int16{first + 1, first + 2}, c.markerEpochs(t, tps[0], r.producerID))

		// A late batch of the first transaction, at its epoch: fenced by
		// the marker's.
		late := &rawTxn{t: t, ctx: ctx, client: client, id: "tx", producerID: r.producerID, producerEpoch: first,
			produceVersion: 12, sequence: map[kafka.TopicPartition]int32{tps[2]: 1}}
		require.ErrorIs(t, late.produceTo(tps[2], late.batchFor(tps[2], "late")), kafka.ErrInvalidProducerEpoch)
		require.Equal(t, []string{"v2"}, c.readCommitted(t, tps[2]))
	})
}

// requestCounter counts the requests a kgo client writes, by API key.
type requestCounter struct {
	mu sync.Mutex
	n  map[int16]int
}

func (c *requestCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.n[key]++
	}
}

func (c *requestCounter) count(key int16) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// TestTxnVersion2KafkaClient: franz-go's kgo, told by ApiVersions that
// transaction.version is 2, runs transactions and a consume-transform-
// produce loop against a served node without one AddPartitionsToTxn or
// AddOffsetsToTxn; each transaction ends at a new epoch; read_committed
// and the group's offsets come out as under the older protocol. With
// partlog.TransactionVersion2(false) — the negative control — the same
// client adds its partitions and keeps its epoch.
func TestTxnVersion2KafkaClient(t *testing.T) {
	for _, tv2 := range []bool{true, false} {
		t.Run("transaction.version="+map[bool]string{true: "2", false: "0"}[tv2], func(t *testing.T) {
			n := openNode(t, vfs.NewMem(), partlog.TransactionVersion2(tv2))
			t.Cleanup(func() { n.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, topic := range []string{"in", "out"} {
				require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: topic, Partitions: 2}))
			}
			addr := serveNode(t, n)
			counts := &requestCounter{n: map[int16]int{}}

			// Three transactions over both partitions: commit, abort,
			// commit.
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("in"),
				kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.WithHooks(counts))
			require.NoError(t, err)
			defer cl.Close()
			for i, commit := range []bool{true, false, true} {
				require.NoError(t, cl.BeginTransaction())
				for p := range int32(2) {
					require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d-%d", i, p)}).FirstErr())
				}
				require.NoError(t, cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
			}
			l, err := partlogtest.Log(n, "in", 0)
			require.NoError(t, err)
			var dataEpochs, markerEpochs []int16
			waitUntil(t, "the last marker", func() bool { return l.LogEndOffset() == 6 })
			eachLogBatch(t, l, func(h record.Header, _ *record.Batch) {
				if h.Attributes.IsControl() {
					markerEpochs = append(markerEpochs, h.ProducerEpoch)
				} else {
					dataEpochs = append(dataEpochs, h.ProducerEpoch)
				}
			})
			e := dataEpochs[0]
			if tv2 {
				require.Equal(t, []int16{e, e + 1, e + 2}, dataEpochs, "each transaction at the epoch the last EndTxn answered")
				require.Equal(t, []int16{e + 1, e + 2, e + 3}, markerEpochs, "each marker at the next epoch")
			} else {
				// An abort bumps the epoch at the client (KIP-360), not at the
				// coordinator: the markers keep their transaction's epoch.
				require.Equal(t, dataEpochs, markerEpochs, "each marker at its transaction's epoch")
			}

			// Consume the committed records, transform them, and write them
			// with the group's offsets in one transaction.
			sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(addr), kgo.TransactionalID("eos"), kgo.ConsumerGroup("g"),
				kgo.ConsumeTopics("in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.DefaultProduceTopic("out"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.WithHooks(counts))
			require.NoError(t, err)
			defer sess.Close()
			var read []string
			for len(read) < 4 {
				fs := sess.PollFetches(ctx)
				require.NoError(t, ctx.Err())
				require.NoError(t, sess.Begin())
				fs.EachRecord(func(r *kgo.Record) {
					read = append(read, string(r.Value))
					sess.Produce(ctx, &kgo.Record{Partition: r.Partition, Value: append([]byte("out:"), r.Value...)}, nil)
				})
				committed, err := sess.End(ctx, kgo.TryCommit)
				require.NoError(t, err)
				require.True(t, committed)
			}
			require.ElementsMatch(t, []string{"0-0", "0-1", "2-0", "2-1"}, read, "the committed transactions only")
			for p := range int32(2) {
				require.EqualValues(t, 5, fetchOffset(t, ctx, n.Client(), "g", "in", p), "in-%d: past the last committed record", p)
			}
			outCl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			require.NoError(t, err)
			defer outCl.Close()
			var out []string
			for len(out) < 4 {
				fs := outCl.PollFetches(ctx)
				require.NoError(t, ctx.Err())
				fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
			}
			require.ElementsMatch(t, []string{"out:0-0", "out:0-1", "out:2-0", "out:2-1"}, out)

			adds, addOffsets := counts.count(24), counts.count(25)
			if tv2 {
				require.Zero(t, adds, "AddPartitionsToTxn under transaction version 2")
				require.Zero(t, addOffsets, "AddOffsetsToTxn under transaction version 2")
			} else {
				require.Positive(t, adds, "AddPartitionsToTxn before transaction version 2")
				require.Positive(t, addOffsets, "AddOffsetsToTxn before transaction version 2")
			}
			t.Logf("AddPartitionsToTxn %d, AddOffsetsToTxn %d, EndTxn %d", adds, addOffsets, counts.count(26))
		})
	}
}

// countingClient is a node's Client that counts the AddPartitionsToTxn
// and AddOffsetsToTxn requests through it, and reports the node's
// features.
type countingClient struct {
	partlog.Client
	adds, addOffsets atomic.Int32
}

func (c *countingClient) AddPartitionsToTxn(ctx context.Context, req *transport.AddPartitionsToTxnRequest) (*transport.AddPartitionsToTxnResponse, error) {
	c.adds.Add(1)
	return c.Client.AddPartitionsToTxn(ctx, req)
}

func (c *countingClient) AddOffsetsToTxn(ctx context.Context, req *transport.AddOffsetsToTxnRequest) (*transport.AddOffsetsToTxnResponse, error) {
	c.addOffsets.Add(1)
	return c.Client.AddOffsetsToTxn(ctx, req)
}

func (c *countingClient) Features() []transport.Feature {
	return c.Client.(transport.FeatureReporter).Features()
}

// TestTxnProducerVersion2: partlog's producer, on a node that finalizes
// transaction.version at 2, runs a transaction over two partitions with
// consumer offsets, and one it aborts, without an AddPartitionsToTxn or
// AddOffsetsToTxn: its Produce (v12) and TxnOffsetCommit (v5) have the
// partitions added. The outcome is the same as with the requests, which
// it sends on a node at transaction.version 0 (the negative control).
func TestTxnProducerVersion2(t *testing.T) {
	for _, tv2 := range []bool{true, false} {
		t.Run("transaction.version="+map[bool]string{true: "2", false: "0"}[tv2], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n, ctx, client := txnBubbleNode(t, nil, partlog.TransactionVersion2(tv2))
				require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: 2}))
				require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "in"}))
				cc := &countingClient{Client: client}
				p, err := producer.New(cc, producer.TransactionalID("tx"), producer.Linger(0))
				require.NoError(t, err)
				defer p.Close()

				require.NoError(t, p.BeginTransaction())
				for i := range 4 {
					r := &producer.Record{Topic: "t", Value: fmt.Appendf(nil, "c%d", i)}
					r.SetPartition(int32(i % 2))
					require.NoError(t, p.ProduceSync(ctx, r).FirstErr())
				}
				require.NoError(t, p.SendOffsetsToTransaction(ctx, map[kafka.TopicPartition]int64{{Topic: "in"}: 5},
					producer.GroupMetadata{Group: "g", GenerationID: transport.NoGeneration}))
				require.NoError(t, p.CommitTransaction(ctx))

				require.NoError(t, p.BeginTransaction())
				r := &producer.Record{Topic: "t", Value: []byte("aborted")}
				r.SetPartition(0)
				require.NoError(t, p.ProduceSync(ctx, r).FirstErr())
				require.NoError(t, p.AbortTransaction(ctx))

				if tv2 {
					require.Zero(t, cc.adds.Load(), "AddPartitionsToTxn under transaction version 2")
					require.Zero(t, cc.addOffsets.Load(), "AddOffsetsToTxn under transaction version 2")
				} else {
					require.Positive(t, cc.adds.Load())
					require.Positive(t, cc.addOffsets.Load())
				}
				require.Equal(t, []string{"c0", "c2"}, txnReadAll(t, ctx, n, "t", 5, consumer.ReadCommitted))
				require.EqualValues(t, 5, fetchOffset(t, ctx, client, "g", "in", 0))
				require.Equal(t, []string{"c0", "c2", "COMMIT", "aborted", "ABORT"}, txnLogEntries(t, n, "t", 0, 5))
			})
		})
	}
}

// TestTxnVersion2BatchBeforeTheMarker (on a virtual clock): a producer's
// next transaction, at the epoch the last EndTxn answered, sends its first
// batch to a partition whose ABORT marker of the last one has not come
// yet. The leader must not let the batch join the transaction still open
// there — its marker would discard an acknowledged write — but ask the
// coordinator, which is busy ending the last one (NOT_ENOUGH_REPLICAS, a
// retry) until the marker is written. The negative control is the check
// that compares the open transaction's epoch with the batch's, switched
// off: the batch is acknowledged, then aborted.
func TestTxnVersion2BatchBeforeTheMarker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, ctx, client := txnBubbleNode(t, []string{"t"})
		var hold atomic.Bool
		hold.Store(true)
		partlogtest.FailTransactionSteps(n, func(s partlogtest.TxnStep) error {
			if s.IsMarker && hold.Load() {
				return errors.New("the marker is held back")
			}
			return nil
		})
		r := newRawTxn(t, ctx, client, "tx", 5)
		r.produceVersion = 12
		r.produceRetrying(t0, "c")
		r.end(transport.TxnAbort)

		require.ErrorIs(t, r.produceTo(t0, r.batchFor(t0, "d")), kafka.ErrNotEnoughReplicas,
			"the coordinator is still ending the last transaction")
		r.sequence[t0] = 0
		hold.Store(false)
		r.produceRetrying(t0, "d")
		r.end(transport.TxnCommit)
		waitUntil(t, "the COMMIT marker", func() bool { return len(txnLogEntries(t, n, "t", 0, 4)) == 4 })
		require.Equal(t, []string{"c", "ABORT", "d", "COMMIT"}, txnLogEntries(t, n, "t", 0, 4))
		require.Equal(t, []string{"d"}, txnReadAll(t, ctx, n, "t", 4, consumer.ReadCommitted))
	})
}
