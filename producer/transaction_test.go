package producer_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// fakeTxn is a transport.TxnClient with one topic "t" of two partitions
// that logs every request as a line and answers each kind of request with
// the errors queued for it, one per call, then with success. Its
// coordinator gives producer id 7, and, as transaction version 2 does,
// answers EndTxn with the next epoch (unless tv0).
type fakeTxn struct {
	mu    sync.Mutex
	calls []string
	errs  map[string][]error
	tv0   bool
	epoch int16
	next  map[int32]int64
}

func newFakeTxn() *fakeTxn { return &fakeTxn{errs: map[string][]error{}, next: map[int32]int64{}} }

// fail queues errs as the answers to the next calls of kind.
func (f *fakeTxn) fail(kind string, errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[kind] = append(f.errs[kind], errs...)
}

// answer logs a call and pops its error.
func (f *fakeTxn) answer(kind, line string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, kind+" "+line)
	if q := f.errs[kind]; len(q) > 0 {
		f.errs[kind] = q[1:]
		return q[0]
	}
	return nil
}

// log returns the calls so far, and forgets them.
func (f *fakeTxn) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func (f *fakeTxn) Metadata(ctx context.Context, req *transport.MetadataRequest) (*transport.MetadataResponse, error) {
	return &transport.MetadataResponse{Topics: []transport.TopicMetadata{{Topic: "t",
		Partitions: []transport.PartitionMetadata{{Partition: 0}, {Partition: 1}}}}}, nil
}

func (f *fakeTxn) Produce(ctx context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	resp := &transport.ProduceResponse{}
	for _, tp := range req.Topics {
		tr := transport.ProduceTopicResponse{Topic: tp.Topic}
		for _, pp := range tp.Partitions {
			h, err := record.ParseHeader(pp.Records)
			if err != nil {
				return nil, err
			}
			err = f.answer("Produce", fmt.Sprintf("%s-%d %d/%d seq %d txn %v", tp.Topic, pp.Partition, h.ProducerID, h.ProducerEpoch,
				h.BaseSequence, h.Attributes.IsTransactional()))
			pr := transport.ProducePartitionResponse{Partition: pp.Partition, Err: err, BaseOffset: -1, LogAppendTime: -1}
			if err == nil {
				f.mu.Lock()
				pr.BaseOffset = f.next[pp.Partition]
				f.next[pp.Partition] += int64(h.NumRecords)
				f.mu.Unlock()
			}
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

func (f *fakeTxn) ListOffsets(ctx context.Context, req *transport.ListOffsetsRequest) (*transport.ListOffsetsResponse, error) {
	return nil, fmt.Errorf("fakeTxn: no ListOffsets")
}

func (f *fakeTxn) Fetch(ctx context.Context, req *transport.FetchRequest) (*transport.FetchResponse, error) {
	return nil, fmt.Errorf("fakeTxn: no Fetch")
}

func (f *fakeTxn) FindCoordinator(ctx context.Context, req *transport.FindCoordinatorRequest) (*transport.FindCoordinatorResponse, error) {
	err := f.answer("FindCoordinator", fmt.Sprintf("%s %d", req.Key, req.KeyType))
	return &transport.FindCoordinatorResponse{Err: err, NodeID: 0}, nil
}

func (f *fakeTxn) InitProducerID(ctx context.Context, req *transport.InitProducerIDRequest) (*transport.InitProducerIDResponse, error) {
	err := f.answer("InitProducerId", fmt.Sprintf("%s %d/%d timeout %v", req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.TransactionTimeout))
	if err != nil {
		return &transport.InitProducerIDResponse{Err: err, ProducerID: -1, ProducerEpoch: -1}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.ProducerID >= 0 {
		f.epoch++
	}
	return &transport.InitProducerIDResponse{ProducerID: 7, ProducerEpoch: f.epoch}, nil
}

func (f *fakeTxn) AddPartitionsToTxn(ctx context.Context, req *transport.AddPartitionsToTxnRequest) (*transport.AddPartitionsToTxnResponse, error) {
	t := req.Transactions[0]
	var names []string
	for _, tp := range t.Partitions {
		names = append(names, fmt.Sprintf("%s-%d", tp.Topic, tp.Partition))
	}
	slices.Sort(names)
	err := f.answer("AddPartitionsToTxn", fmt.Sprintf("%s %d/%d %v", t.TransactionalID, t.ProducerID, t.ProducerEpoch, names))
	res := transport.AddPartitionsToTxnResult{TransactionalID: t.TransactionalID}
	for _, tp := range t.Partitions {
		res.Partitions = append(res.Partitions, transport.TxnPartitionResult{TopicPartition: tp, Err: err})
	}
	return &transport.AddPartitionsToTxnResponse{Transactions: []transport.AddPartitionsToTxnResult{res}}, nil
}

func (f *fakeTxn) AddOffsetsToTxn(ctx context.Context, req *transport.AddOffsetsToTxnRequest) (*transport.AddOffsetsToTxnResponse, error) {
	err := f.answer("AddOffsetsToTxn", fmt.Sprintf("%s %d/%d %s", req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group))
	return &transport.AddOffsetsToTxnResponse{Err: err}, nil
}

func (f *fakeTxn) EndTxn(ctx context.Context, req *transport.EndTxnRequest) (*transport.EndTxnResponse, error) {
	err := f.answer("EndTxn", fmt.Sprintf("v%d %s %d/%d %v", req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Result))
	if err != nil || f.tv0 {
		return &transport.EndTxnResponse{Err: err, ProducerID: -1, ProducerEpoch: -1}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epoch++
	return &transport.EndTxnResponse{ProducerID: 7, ProducerEpoch: f.epoch}, nil
}

func (f *fakeTxn) WriteTxnMarkers(ctx context.Context, req *transport.WriteTxnMarkersRequest) (*transport.WriteTxnMarkersResponse, error) {
	return nil, fmt.Errorf("fakeTxn: no WriteTxnMarkers")
}

func (f *fakeTxn) TxnOffsetCommit(ctx context.Context, req *transport.TxnOffsetCommitRequest) (*transport.TxnOffsetCommitResponse, error) {
	var offs []string
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			offs = append(offs, fmt.Sprintf("%s-%d=%d", t.Topic, p.Partition, p.Offset))
		}
	}
	err := f.answer("TxnOffsetCommit", fmt.Sprintf("%s %d/%d %s gen %d member %q instance %q %v", req.TransactionalID, req.ProducerID,
		req.ProducerEpoch, req.Group, req.GenerationID, req.MemberID, req.GroupInstanceID, offs))
	resp := &transport.TxnOffsetCommitResponse{}
	for _, t := range req.Topics {
		tr := transport.OffsetCommitTopicResponse{Topic: t.Topic}
		for _, p := range t.Partitions {
			tr.Partitions = append(tr.Partitions, transport.OffsetCommitPartitionResponse{Partition: p.Partition, Err: err})
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

func (f *fakeTxn) DescribeTransactions(ctx context.Context, req *transport.DescribeTransactionsRequest) (*transport.DescribeTransactionsResponse, error) {
	return nil, fmt.Errorf("fakeTxn: no DescribeTransactions")
}

func (f *fakeTxn) ListTransactions(ctx context.Context, req *transport.ListTransactionsRequest) (*transport.ListTransactionsResponse, error) {
	return nil, fmt.Errorf("fakeTxn: no ListTransactions")
}

var _ transport.TxnClient = (*fakeTxn)(nil)

// newTxnProducer returns a transactional producer "tx" on f, with a short
// retry backoff, and forgets the calls New made.
func newTxnProducer(t *testing.T, f *fakeTxn, opts ...producer.Option) *producer.Producer {
	t.Helper()
	p := newProducer(t, f, append([]producer.Option{producer.TransactionalID("tx"), producer.RetryBackoff(time.Millisecond),
		producer.Linger(0)}, opts...)...)
	require.Equal(t, producer.StateReady, p.TransactionState())
	return p
}

// to returns a record for partition i of "t".
func to(i int32, v string) *producer.Record {
	r := &producer.Record{Topic: "t", Value: []byte(v)}
	r.SetPartition(i)
	return r
}

// produceAll produces rs without waiting, and returns a function that
// waits for their results.
func produceAll(p *producer.Producer, rs ...*producer.Record) func() []error {
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		p.Produce(context.Background(), r, func(_ *producer.Record, err error) { errs[i] = err; wg.Done() })
	}
	return func() []error { wg.Wait(); return errs }
}

// TestTransactionRequests: the requests of a transactional producer's
// life, in order — FindCoordinator and InitProducerId in New; one
// AddPartitionsToTxn for the new partitions of a drain before their
// transactional batches; EndTxn v5, whose answered epoch the next
// transaction takes, with sequences from 0 again.
func TestTransactionRequests(t *testing.T) {
	f := newFakeTxn()
	p := newTxnProducer(t, f, producer.TransactionTimeout(30*time.Second), producer.Linger(time.Hour))
	require.Equal(t, []string{
		"FindCoordinator tx 1",
		"InitProducerId tx -1/-1 timeout 30s",
	}, f.log())

	ctx := context.Background()
	require.NoError(t, p.BeginTransaction())
	require.Empty(t, f.log(), "BeginTransaction sends nothing")
	wait := produceAll(p, to(0, "a"), to(0, "b"), to(1, "c"))
	require.NoError(t, p.CommitTransaction(ctx))
	require.Equal(t, []error{nil, nil, nil}, wait())
	calls := f.log()
	require.Equal(t, "AddPartitionsToTxn tx 7/0 [t-0 t-1]", calls[0], "both partitions in one request, before any batch")
	require.ElementsMatch(t, []string{"Produce t-0 7/0 seq 0 txn true", "Produce t-1 7/0 seq 0 txn true"}, calls[1:3])
	require.Equal(t, []string{"EndTxn v5 tx 7/0 COMMIT"}, calls[3:])
	require.Equal(t, producer.StateReady, p.TransactionState())

	require.NoError(t, p.BeginTransaction())
	wait = produceAll(p, to(0, "d"))
	require.NoError(t, p.CommitTransaction(ctx))
	require.Equal(t, []error{nil}, wait())
	require.Equal(t, []string{
		"AddPartitionsToTxn tx 7/1 [t-0]",
		"Produce t-0 7/1 seq 0 txn true",
		"EndTxn v5 tx 7/1 COMMIT",
	}, f.log(), "the epoch EndTxn answered, sequences from 0")

	require.NoError(t, p.BeginTransaction())
	require.NoError(t, p.CommitTransaction(ctx))
	require.Empty(t, f.log(), "an empty transaction ends with no request")
}

// TestTransactionRetries: CONCURRENT_TRANSACTIONS, NOT_COORDINATOR and
// COORDINATOR_LOAD_IN_PROGRESS are retried, each request on its own.
func TestTransactionRetries(t *testing.T) {
	f := newFakeTxn()
	f.fail("FindCoordinator", kafka.ErrCoordinatorNotAvailable)
	f.fail("InitProducerId", kafka.ErrCoordinatorLoadInProgress, kafka.ErrConcurrentTransactions)
	f.fail("AddPartitionsToTxn", kafka.ErrConcurrentTransactions, kafka.ErrNotCoordinator)
	f.fail("AddOffsetsToTxn", kafka.ErrConcurrentTransactions)
	f.fail("TxnOffsetCommit", kafka.ErrCoordinatorLoadInProgress)
	f.fail("EndTxn", kafka.ErrConcurrentTransactions, kafka.ErrConcurrentTransactions)
	p := newTxnProducer(t, f)
	ctx := context.Background()
	require.NoError(t, p.BeginTransaction())
	wait := produceAll(p, to(0, "a"))
	require.NoError(t, p.SendOffsetsToTransaction(ctx, map[kafka.TopicPartition]int64{{Topic: "in", Partition: 0}: 5},
		producer.GroupMetadata{Group: "g", GenerationID: 3, MemberID: "m", GroupInstanceID: "i"}))
	require.NoError(t, p.CommitTransaction(ctx))
	require.Equal(t, []error{nil}, wait())
	count := map[string]int{}
	for _, c := range f.log() {
		count[strings.Fields(c)[0]]++
	}
	require.Equal(t, map[string]int{"FindCoordinator": 2, "InitProducerId": 3, "AddPartitionsToTxn": 3, "Produce": 1,
		"AddOffsetsToTxn": 2, "TxnOffsetCommit": 2, "EndTxn": 3}, count)
}

// TestSendOffsetsToTransaction: the group's partition joins the
// transaction, then the offsets go with the member's identity (KIP-447).
func TestSendOffsetsToTransaction(t *testing.T) {
	f := newFakeTxn()
	p := newTxnProducer(t, f)
	f.log()
	ctx := context.Background()
	require.NoError(t, p.BeginTransaction())
	require.NoError(t, p.SendOffsetsToTransaction(ctx, map[kafka.TopicPartition]int64{{Topic: "in", Partition: 0}: 5},
		producer.GroupMetadata{Group: "g", GenerationID: 3, MemberID: "m", GroupInstanceID: "i"}))
	require.NoError(t, p.CommitTransaction(ctx))
	require.Equal(t, []string{
		"AddOffsetsToTxn tx 7/0 g",
		`TxnOffsetCommit tx 7/0 g gen 3 member "m" instance "i" [in-0=5]`,
		"EndTxn v5 tx 7/0 COMMIT",
	}, f.log())

	// A rebalance moved on: the offsets are refused, the transaction is
	// abortable.
	f.fail("TxnOffsetCommit", kafka.ErrIllegalGeneration)
	require.NoError(t, p.BeginTransaction())
	err := p.SendOffsetsToTransaction(ctx, map[kafka.TopicPartition]int64{{Topic: "in", Partition: 0}: 6}, producer.GroupMetadata{Group: "g"})
	require.ErrorIs(t, err, producer.ErrAbortable)
	require.ErrorIs(t, err, kafka.ErrIllegalGeneration)
	require.Equal(t, producer.StateAbortableError, p.TransactionState())
	require.ErrorIs(t, p.CommitTransaction(ctx), producer.ErrAbortable)
	require.NoError(t, p.AbortTransaction(ctx))
	require.Equal(t, producer.StateReady, p.TransactionState())
}

// TestFencedProducerIsFatal: a produce answer of PRODUCER_FENCED fails
// the producer for good; so does one from EndTxn.
func TestFencedProducerIsFatal(t *testing.T) {
	for _, where := range []string{"Produce", "EndTxn", "AddPartitionsToTxn"} {
		t.Run(where, func(t *testing.T) {
			f := newFakeTxn()
			p := newTxnProducer(t, f)
			f.fail(where, kafka.ErrProducerFenced)
			ctx := context.Background()
			require.NoError(t, p.BeginTransaction())
			wait := produceAll(p, to(0, "a"))
			err := p.CommitTransaction(ctx)
			require.ErrorIs(t, err, producer.ErrFatal)
			require.ErrorIs(t, err, kafka.ErrProducerFenced)
			if where != "EndTxn" {
				require.ErrorIs(t, wait()[0], producer.ErrFatal)
			}
			require.Equal(t, producer.StateFatalError, p.TransactionState())
			require.ErrorIs(t, p.BeginTransaction(), producer.ErrFatal)
			require.ErrorIs(t, p.AbortTransaction(ctx), producer.ErrFatal)
			require.ErrorIs(t, p.ProduceSync(ctx, to(0, "b")).FirstErr(), producer.ErrFatal)
		})
	}
}

// TestFailedRecordMakesTheTransactionAbortable: a record that fails makes
// the commit fail as abortable; Produce fails until AbortTransaction,
// after which the next transaction goes on in the new epoch.
func TestFailedRecordMakesTheTransactionAbortable(t *testing.T) {
	f := newFakeTxn()
	p := newTxnProducer(t, f)
	f.log()
	f.fail("Produce", kafka.ErrInvalidRecord)
	ctx := context.Background()
	require.NoError(t, p.BeginTransaction())
	wait := produceAll(p, to(0, "a"))
	err := p.CommitTransaction(ctx)
	require.ErrorIs(t, err, producer.ErrAbortable)
	require.ErrorIs(t, err, kafka.ErrInvalidRecord)
	require.ErrorIs(t, wait()[0], kafka.ErrInvalidRecord)
	require.Equal(t, producer.StateAbortableError, p.TransactionState())
	require.ErrorIs(t, p.ProduceSync(ctx, to(1, "b")).FirstErr(), producer.ErrAbortable)
	require.ErrorIs(t, p.BeginTransaction(), producer.ErrTransactionState)

	require.NoError(t, p.AbortTransaction(ctx))
	require.Equal(t, producer.StateReady, p.TransactionState())
	require.NoError(t, p.BeginTransaction())
	require.NoError(t, p.ProduceSync(ctx, to(0, "c")).FirstErr())
	require.NoError(t, p.CommitTransaction(ctx))
	require.Equal(t, []string{
		"AddPartitionsToTxn tx 7/0 [t-0]",
		"Produce t-0 7/0 seq 0 txn true",
		"EndTxn v5 tx 7/0 ABORT",
		"AddPartitionsToTxn tx 7/1 [t-0]",
		"Produce t-0 7/1 seq 0 txn true",
		"EndTxn v5 tx 7/1 COMMIT",
	}, f.log())
}

// TestAddPartitionsFailureIsAbortable: a partition the coordinator
// refuses fails its records, abortably.
func TestAddPartitionsFailureIsAbortable(t *testing.T) {
	f := newFakeTxn()
	p := newTxnProducer(t, f)
	f.fail("AddPartitionsToTxn", kafka.ErrTransactionAbortable)
	ctx := context.Background()
	require.NoError(t, p.BeginTransaction())
	wait := produceAll(p, to(0, "a"))
	require.ErrorIs(t, p.CommitTransaction(ctx), producer.ErrAbortable)
	require.ErrorIs(t, wait()[0], producer.ErrAbortable)
	require.NoError(t, p.AbortTransaction(ctx))
	require.Equal(t, producer.StateReady, p.TransactionState())
}

// TestAbortFailsUnsentRecords: records not sent when AbortTransaction is
// called fail with ErrTransactionAborted, and are never sent.
func TestAbortFailsUnsentRecords(t *testing.T) {
	f := newFakeTxn()
	p := newTxnProducer(t, f, producer.Linger(time.Hour))
	f.log()
	ctx := context.Background()
	require.NoError(t, p.BeginTransaction())
	wait := produceAll(p, to(0, "a")) // lingers an hour
	require.NoError(t, p.AbortTransaction(ctx))
	require.ErrorIs(t, wait()[0], producer.ErrTransactionAborted)
	for _, c := range f.log() {
		require.NotContains(t, c, "Produce")
	}
}

// TestAbortOnTransactionVersion0BumpsTheEpoch: a coordinator that answers
// EndTxn with no epoch keeps the producer's after a commit, and after an
// abort the producer bumps it with InitProducerId (KIP-360).
func TestAbortOnTransactionVersion0BumpsTheEpoch(t *testing.T) {
	f := newFakeTxn()
	f.tv0 = true
	p := newTxnProducer(t, f)
	f.log()
	ctx := context.Background()
	for _, end := range []func(context.Context) error{p.CommitTransaction, p.AbortTransaction, p.CommitTransaction} {
		require.NoError(t, p.BeginTransaction())
		require.NoError(t, p.ProduceSync(ctx, to(0, "a")).FirstErr())
		require.NoError(t, end(ctx))
	}
	require.Equal(t, []string{
		"AddPartitionsToTxn tx 7/0 [t-0]",
		"Produce t-0 7/0 seq 0 txn true",
		"EndTxn v5 tx 7/0 COMMIT",
		"AddPartitionsToTxn tx 7/0 [t-0]",
		"Produce t-0 7/0 seq 1 txn true",
		"EndTxn v5 tx 7/0 ABORT",
		"FindCoordinator tx 1",
		"InitProducerId tx 7/0 timeout 1m0s",
		"AddPartitionsToTxn tx 7/1 [t-0]",
		"Produce t-0 7/1 seq 0 txn true",
		"EndTxn v5 tx 7/1 COMMIT",
	}, f.log())
}

// TestTransactionStateTransitions: each call allowed only in its states.
func TestTransactionStateTransitions(t *testing.T) {
	f := newFakeTxn()
	p := newTxnProducer(t, f)
	ctx := context.Background()
	// Ready
	require.ErrorIs(t, p.CommitTransaction(ctx), producer.ErrTransactionState)
	require.ErrorIs(t, p.AbortTransaction(ctx), producer.ErrTransactionState)
	require.ErrorIs(t, p.SendOffsetsToTransaction(ctx, nil, producer.GroupMetadata{Group: "g"}), producer.ErrTransactionState)
	require.ErrorIs(t, p.ProduceSync(ctx, to(0, "a")).FirstErr(), producer.ErrTransactionState, "no record outside a transaction")
	// Ready -> InTransaction
	require.NoError(t, p.BeginTransaction())
	require.Equal(t, producer.StateInTransaction, p.TransactionState())
	require.ErrorIs(t, p.BeginTransaction(), producer.ErrTransactionState)
	// InTransaction -> Aborting -> Ready
	require.NoError(t, p.AbortTransaction(ctx))
	require.Equal(t, producer.StateReady, p.TransactionState())

	// A commit whose ctx ends stays Committing, and goes on when called
	// again; an abort is refused meanwhile.
	require.NoError(t, p.BeginTransaction())
	require.NoError(t, p.ProduceSync(ctx, to(0, "a")).FirstErr())
	f.fail("EndTxn", kafka.ErrConcurrentTransactions)
	short, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, p.CommitTransaction(short), context.Canceled)
	require.Equal(t, producer.StateCommitting, p.TransactionState())
	require.ErrorIs(t, p.AbortTransaction(ctx), producer.ErrTransactionState)
	require.ErrorIs(t, p.ProduceSync(ctx, to(0, "b")).FirstErr(), producer.ErrTransactionState)
	require.NoError(t, p.CommitTransaction(ctx))
	require.Equal(t, producer.StateReady, p.TransactionState())

	// So does an abort: it stays Aborting, and goes on when called again.
	require.NoError(t, p.BeginTransaction())
	require.NoError(t, p.ProduceSync(ctx, to(0, "c")).FirstErr())
	f.fail("EndTxn", kafka.ErrConcurrentTransactions)
	require.ErrorIs(t, p.AbortTransaction(short), context.Canceled)
	require.Equal(t, producer.StateAborting, p.TransactionState())
	require.ErrorIs(t, p.CommitTransaction(ctx), producer.ErrTransactionState)
	require.ErrorIs(t, p.BeginTransaction(), producer.ErrTransactionState)
	require.NoError(t, p.AbortTransaction(ctx))
	require.Equal(t, producer.StateReady, p.TransactionState())

	// A producer without TransactionalID has no transactions.
	plain := newProducer(t, f)
	require.Equal(t, producer.StateUninitialized, plain.TransactionState())
	require.ErrorIs(t, plain.BeginTransaction(), producer.ErrTransactionState)
}

// TestTransactionalOptions: TransactionalID needs idempotence and a
// TxnClient.
func TestTransactionalOptions(t *testing.T) {
	f := newFakeTxn()
	_, err := producer.New(f, producer.TransactionalID("tx"), producer.Idempotent(false))
	require.ErrorContains(t, err, "Idempotent")
	_, err = producer.New(f, producer.TransactionalID("tx"), producer.Acks(kafka.AcksLeader))
	require.ErrorContains(t, err, "Acks")
	_, err = producer.New(f, producer.TransactionalID("tx"), producer.TransactionTimeout(0))
	require.ErrorContains(t, err, "TransactionTimeout")
	_, err = producer.New(struct{ transport.Client }{f}, producer.TransactionalID("tx"))
	require.ErrorContains(t, err, "TxnClient")

	// A fatal InitProducerId fails New.
	f.fail("InitProducerId", kafka.ErrInvalidTransactionTimeout)
	_, err = producer.New(f, producer.TransactionalID("tx"))
	require.ErrorIs(t, err, kafka.ErrInvalidTransactionTimeout)
}

// TestConcurrentTransactionsRetriedSoon: while the coordinator still
// completes the last transaction (CONCURRENT_TRANSACTIONS), an add to the
// next one retries after 20 ms, as Kafka's producer does, not after
// retry.backoff.ms; other retriable errors wait the whole backoff.
func TestConcurrentTransactionsRetriedSoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeTxn()
		p := newTxnProducer(t, f, producer.RetryBackoff(time.Second))
		ctx := context.Background()
		f.fail("AddPartitionsToTxn", kafka.ErrConcurrentTransactions, kafka.ErrConcurrentTransactions, kafka.ErrConcurrentTransactions)
		f.fail("AddOffsetsToTxn", kafka.ErrConcurrentTransactions)
		start := time.Now()
		require.NoError(t, p.BeginTransaction())
		wait := produceAll(p, to(0, "a"))
		require.Equal(t, []error{nil}, wait())
		require.NoError(t, p.SendOffsetsToTransaction(ctx, map[kafka.TopicPartition]int64{{Topic: "in", Partition: 0}: 5},
			producer.GroupMetadata{Group: "g", GenerationID: 3, MemberID: "m"}))
		require.Equal(t, 80*time.Millisecond, time.Since(start), "four retries 20 ms apart")
		require.NoError(t, p.CommitTransaction(ctx))

		f.fail("AddPartitionsToTxn", kafka.ErrNotCoordinator)
		start = time.Now()
		require.NoError(t, p.BeginTransaction())
		require.Equal(t, []error{nil}, produceAll(p, to(0, "b"))())
		require.Equal(t, time.Second, time.Since(start), "NOT_COORDINATOR waits retry.backoff.ms")
		require.NoError(t, p.CommitTransaction(ctx))
	})
}
