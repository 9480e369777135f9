package compat

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
)

// kgoDriver is franz-go: kgo for producing and consuming, kadm for the
// admin calls (and kmsg for DescribeCluster, which kadm does not wrap).
type kgoDriver struct{}

func (kgoDriver) name() string              { return "kgo" }
func (kgoDriver) label() string             { return "franz-go kgo/kadm 1.22.3/1.20.0" }
func (kgoDriver) transactionVersion() int16 { return 2 }
func (d kgoDriver) admin() admin            { return d }

// client returns a kgo client bootstrapped from tg's nodes, closed when
// ctx's check ends by the caller.
func (d kgoDriver) client(tg *target, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(d.opts(tg, opts...)...)
}

// opts returns the options of every client: tg's nodes as seeds, its TLS
// and SASL settings, and a short retry backoff; then opts.
func (kgoDriver) opts(tg *target, opts ...kgo.Opt) []kgo.Opt {
	base := []kgo.Opt{kgo.SeedBrokers(tg.addrs()...), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond })}
	if c := tg.sec; c != nil {
		if c.tlsConfig != nil {
			base = append(base, kgo.DialTLSConfig(c.tlsConfig))
		}
		if c.mechanism != "" {
			base = append(base, kgo.SASL(kscram.Auth{User: c.user, Pass: c.password}.AsSha512Mechanism()))
		}
	}
	return append(base, opts...)
}

// kgoIsolation is kgo's option for a consumeSpec's Isolation.
func kgoIsolation(isolation string) kgo.Opt {
	if isolation == "read_committed" {
		return kgo.FetchIsolationLevel(kgo.ReadCommitted())
	}
	return kgo.FetchIsolationLevel(kgo.ReadUncommitted()) // kgo's default
}

var kgoCodecs = map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
	"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}

// kgoRecords converts records to produce, each to its Partition.
func kgoRecords(topic string, recs []rec) []*kgo.Record {
	var krs []*kgo.Record
	for _, r := range recs {
		kr := &kgo.Record{Topic: topic, Partition: r.Partition, Key: r.Key, Value: r.Value}
		if r.Timestamp != 0 {
			kr.Timestamp = time.UnixMilli(r.Timestamp)
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		krs = append(krs, kr)
	}
	return krs
}

func (d kgoDriver) produce(ctx context.Context, tg *target, spec produceSpec) ([]rec, error) {
	opts := []kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgoCodecs[spec.Compression])}
	switch spec.Acks {
	case 0:
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	case 1:
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if !spec.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := d.client(tg, opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	krs := kgoRecords(spec.Topic, spec.Records)
	results := cl.ProduceSync(ctx, krs...)
	if err := results.FirstErr(); err != nil {
		return nil, err
	}
	// The results come partition by partition, not in the records' order.
	index := map[*kgo.Record]int{}
	for i, kr := range krs {
		index[kr] = i
	}
	out := make([]rec, len(krs))
	for _, res := range results {
		offset := res.Record.Offset
		if spec.Acks == 0 {
			offset = -1 // kgo leaves it zero: there is no answer
		}
		out[index[res.Record]] = rec{Partition: res.Record.Partition, Offset: offset}
	}
	return out, nil
}

// kgoRec converts a consumed record.
func kgoRec(r *kgo.Record) rec {
	x := rec{Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(), Key: r.Key, Value: r.Value}
	for _, h := range r.Headers {
		x.Headers = append(x.Headers, hdr{Key: h.Key, Value: h.Value})
	}
	return x
}

func (d kgoDriver) consume(ctx context.Context, tg *target, spec consumeSpec) ([]rec, error) {
	var at kgo.Offset
	switch spec.From.Kind {
	case "beginning":
		at = kgo.NewOffset().AtStart()
	case "offset":
		at = kgo.NewOffset().At(spec.From.At)
	case "timestamp":
		at = kgo.NewOffset().AfterMilli(spec.From.At)
	case "end":
		at = kgo.NewOffset().AtEnd()
	}
	cl, err := d.client(tg, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{spec.Topic: {spec.Partition: at}}), kgoIsolation(spec.Isolation))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []rec
	for len(out) < spec.Count {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("read %d of %d records: %w", len(out), spec.Count, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return out, errs[0].Err
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, kgoRec(r)) })
	}
	return out, nil
}

// consumeToEnd reads until a fetch's high watermark says there is no more.
func (d kgoDriver) consumeToEnd(ctx context.Context, tg *target, topic string, partition int32) ([]rec, int64, error) {
	cl, err := d.client(tg, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return nil, 0, err
	}
	defer cl.Close()
	var out []rec
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return out, 0, err
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return out, 0, errs[0].Err
		}
		var hw int64 = -1
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				out = append(out, kgoRec(r))
			}
			hw = p.HighWatermark
		})
		if hw >= 0 && len(out) > 0 && out[len(out)-1].Offset+1 >= hw {
			return out, hw, nil
		}
	}
}

// kgoMember is a group member: it commits what each poll returned before
// the next, and what it holds when partitions are revoked or it leaves.
type kgoMember struct {
	cl     *kgo.Client
	events chan memberEvent
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	assigned map[int32]bool
}

func (d kgoDriver) join(ctx context.Context, tg *target, group, topic string) (member, error) {
	m := &kgoMember{events: make(chan memberEvent, 1024), done: make(chan struct{}), assigned: map[int32]bool{}}
	report := func(add, remove map[string][]int32) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, p := range add[topic] {
			m.assigned[p] = true
		}
		for _, p := range remove[topic] {
			delete(m.assigned, p)
		}
		var now []int32
		for p := range m.assigned {
			now = append(now, p)
		}
		m.events <- memberEvent{Assigned: now}
	}
	cl, err := d.client(tg, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.HeartbeatInterval(300*time.Millisecond), kgo.SessionTimeout(10*time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, added map[string][]int32) { report(added, nil) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				m.events <- memberEvent{Err: "commit on revoke: " + err.Error()}
			}
			report(nil, revoked)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) { report(nil, lost) }))
	if err != nil {
		return nil, err
	}
	m.cl = cl
	pollCtx, cancel := context.WithCancel(ctx)
	m.cancel = cancel
	go m.run(pollCtx)
	return m, nil
}

func (m *kgoMember) run(ctx context.Context) {
	defer close(m.done)
	for {
		fs := m.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		var fatal error
		for _, e := range fs.Errors() {
			// kgo reports a lost group session — a join answered
			// UNKNOWN_MEMBER_ID after the coordinator moved, as a Kafka
			// coordinator moves while __consumer_offsets settles — and
			// joins again by itself: not this member's end. The check
			// still asserts every record consumed once.
			var session *kgo.ErrGroupSession
			if !errors.As(e.Err, &session) {
				fatal = e.Err
				break
			}
		}
		if fatal != nil {
			m.events <- memberEvent{Err: fatal.Error()}
			return
		}
		fs.EachRecord(func(r *kgo.Record) {
			x := kgoRec(r)
			m.events <- memberEvent{Record: &x}
		})
		if err := m.cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
			m.events <- memberEvent{Err: "commit: " + err.Error()}
			return
		}
	}
}

func (m *kgoMember) Events() <-chan memberEvent { return m.events }

// Leave stops polling, commits what was polled, and closes the client,
// which leaves the group.
func (m *kgoMember) Leave() error {
	if m.cancel == nil {
		return nil
	}
	m.cancel()
	m.cancel = nil
	<-m.done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := m.cl.CommitUncommittedOffsets(ctx)
	m.cl.Close()
	close(m.events)
	return err
}

// transact runs the transactions with one client of spec's transactional
// id: BeginTransaction, ProduceSync (every record acknowledged), and
// EndTransaction with TryCommit or TryAbort.
func (d kgoDriver) transact(ctx context.Context, tg *target, spec txnSpec) ([]rec, error) {
	cl, err := d.client(tg, kgo.TransactionalID(spec.TransactionalID), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []rec
	for i, t := range spec.Transactions {
		if err := cl.BeginTransaction(); err != nil {
			return nil, fmt.Errorf("transaction %d: begin: %w", i+1, err)
		}
		krs := kgoRecords(spec.Topic, t.Records)
		if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
			cl.EndTransaction(ctx, kgo.TryAbort)
			return nil, fmt.Errorf("transaction %d: produce: %w", i+1, err)
		}
		for _, kr := range krs { // ProduceSync sets each record's offset
			out = append(out, rec{Partition: kr.Partition, Offset: kr.Offset})
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(t.Commit)); err != nil {
			return nil, fmt.Errorf("transaction %d: end (commit %v): %w", i+1, t.Commit, err)
		}
	}
	return out, nil
}

// transform is a GroupTransactSession: records polled (read_committed,
// stable offsets required) are transformed and produced between Begin and
// End, which sends the polled offsets to the transaction (AddOffsetsToTxn,
// TxnOffsetCommit) when it commits. A session ending with TryAbort sends
// no offsets at all: the run that aborts produces, then aborts.
func (d kgoDriver) transform(ctx context.Context, tg *target, spec transformSpec) (int, error) {
	s, err := kgo.NewGroupTransactSession(d.opts(tg, kgo.TransactionalID(spec.TransactionalID), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ConsumerGroup(spec.Group), kgo.ConsumeTopics(spec.Input), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.HeartbeatInterval(300*time.Millisecond), kgo.SessionTimeout(10*time.Second))...)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	done := 0
	for done < spec.Count {
		fs := s.PollRecords(ctx, spec.Count-done)
		if err := ctx.Err(); err != nil {
			return done, fmt.Errorf("%d of %d records carried over: %w", done, spec.Count, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return done, errs[0].Err
		}
		if fs.NumRecords() == 0 {
			continue
		}
		if err := s.Begin(); err != nil {
			return done, fmt.Errorf("begin: %w", err)
		}
		var krs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			t := transformed(kgoRec(r))
			krs = append(krs, kgoRecords(spec.Output, []rec{t})...)
		})
		if err := s.ProduceSync(ctx, krs...).FirstErr(); err != nil {
			s.End(ctx, kgo.TryAbort)
			return done, fmt.Errorf("produce: %w", err)
		}
		if spec.Abort {
			_, err := s.End(ctx, kgo.TryAbort)
			return len(krs), err
		}
		committed, err := s.End(ctx, kgo.TryCommit)
		if err != nil {
			return done, fmt.Errorf("end: %w", err)
		}
		if committed { // else the session aborted, and polls the records again
			done += len(krs)
		}
	}
	return done, nil
}

// kgoStream produces with kgo's defaults: idempotent, acks=all.
type kgoStream struct {
	cl   *kgo.Client
	acks chan streamAck
	stop chan struct{}
	done chan struct{}
	once sync.Once
	err  error
}

func (d kgoDriver) produceStream(ctx context.Context, tg *target, topic string) (stream, error) {
	cl, err := d.client(tg, kgo.RecordDeliveryTimeout(60*time.Second), kgo.MaxBufferedRecords(100))
	if err != nil {
		return nil, err
	}
	s := &kgoStream{cl: cl, acks: make(chan streamAck, 1024), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for seq := 0; ; seq++ {
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			r := &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "key-%d", seq%30), Value: fmt.Appendf(nil, "%d", seq)}
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				a := streamAck{Seq: seq, Partition: r.Partition, Offset: r.Offset}
				if err != nil {
					a.Err = err.Error()
				}
				s.acks <- a
			})
		}
	}()
	return s, nil
}

func (s *kgoStream) Acks() <-chan streamAck { return s.acks }

func (s *kgoStream) Stop() error {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		s.err = s.cl.Flush(ctx)
		s.cl.Close()
		close(s.acks)
	})
	return s.err
}

// The admin calls, through kadm.

func (d kgoDriver) adminClient(tg *target) (*kadm.Client, error) {
	cl, err := d.client(tg)
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// withAdmin runs fn with a kadm client that is closed after it.
func withAdmin[T any](d kgoDriver, tg *target, fn func(*kadm.Client) (T, error)) (T, error) {
	adm, err := d.adminClient(tg)
	if err != nil {
		var zero T
		return zero, err
	}
	defer adm.Close()
	return fn(adm)
}

func (d kgoDriver) createTopic(ctx context.Context, tg *target, topic string, partitions int32, rf int16, configs map[string]string) error {
	_, err := withAdmin(d, tg, func(adm *kadm.Client) (any, error) {
		cfg := map[string]*string{}
		for k, v := range configs {
			cfg[k] = kadm.StringPtr(v)
		}
		resp, err := adm.CreateTopic(ctx, partitions, rf, cfg, topic)
		if err != nil {
			return nil, err
		}
		return nil, resp.Err
	})
	return err
}

func (d kgoDriver) partitions(ctx context.Context, tg *target, topic string) (int, error) {
	return withAdmin(d, tg, func(adm *kadm.Client) (int, error) {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return 0, err
		}
		t, ok := md.Topics[topic]
		if !ok {
			return 0, fmt.Errorf("no metadata for %s", topic)
		}
		return len(t.Partitions), t.Err
	})
}

func (d kgoDriver) deleteTopic(ctx context.Context, tg *target, topic string) error {
	_, err := withAdmin(d, tg, func(adm *kadm.Client) (any, error) {
		resp, err := adm.DeleteTopic(ctx, topic)
		if err != nil {
			return nil, err
		}
		return nil, resp.Err
	})
	return err
}

func (d kgoDriver) createPartitions(ctx context.Context, tg *target, topic string, total int32) error {
	_, err := withAdmin(d, tg, func(adm *kadm.Client) (any, error) {
		resps, err := adm.UpdatePartitions(ctx, int(total), topic)
		if err != nil {
			return nil, err
		}
		return nil, resps[topic].Err
	})
	return err
}

func alterConfigs(set map[string]string) []kadm.AlterConfig {
	var acs []kadm.AlterConfig
	for k, v := range set {
		acs = append(acs, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)})
	}
	return acs
}

func (d kgoDriver) incrementalAlterTopicConfig(ctx context.Context, tg *target, topic string, set map[string]string) error {
	_, err := withAdmin(d, tg, func(adm *kadm.Client) (any, error) {
		resps, err := adm.AlterTopicConfigs(ctx, alterConfigs(set), topic)
		if err != nil {
			return nil, err
		}
		return nil, resps[0].Err
	})
	return err
}

func (d kgoDriver) alterTopicConfig(ctx context.Context, tg *target, topic string, configs map[string]string) error {
	_, err := withAdmin(d, tg, func(adm *kadm.Client) (any, error) {
		resps, err := adm.AlterTopicConfigsState(ctx, alterConfigs(configs), topic)
		if err != nil {
			return nil, err
		}
		return nil, resps[0].Err
	})
	return err
}

// kadmConfigs converts described configs: a config is a default when its
// source is DEFAULT_CONFIG, as Java's ConfigEntry.isDefault says.
func kadmConfigs(rcs kadm.ResourceConfigs, err error) (map[string]configValue, error) {
	if err != nil {
		return nil, err
	}
	if len(rcs) != 1 {
		return nil, fmt.Errorf("%d resources described, want 1", len(rcs))
	}
	if rcs[0].Err != nil {
		return nil, rcs[0].Err
	}
	out := map[string]configValue{}
	for _, c := range rcs[0].Configs {
		out[c.Key] = configValue{Value: c.Value, IsDefault: c.Source == kmsg.ConfigSourceDefaultConfig}
	}
	return out, nil
}

func (d kgoDriver) describeTopicConfig(ctx context.Context, tg *target, topic string) (map[string]configValue, error) {
	return withAdmin(d, tg, func(adm *kadm.Client) (map[string]configValue, error) {
		return kadmConfigs(adm.DescribeTopicConfigs(ctx, topic))
	})
}

func (d kgoDriver) describeBrokerConfig(ctx context.Context, tg *target, broker int32) (map[string]configValue, error) {
	return withAdmin(d, tg, func(adm *kadm.Client) (map[string]configValue, error) {
		return kadmConfigs(adm.DescribeBrokerConfigs(ctx, broker))
	})
}

func (d kgoDriver) deleteRecords(ctx context.Context, tg *target, topic string, partition int32, before int64) (int64, error) {
	return withAdmin(d, tg, func(adm *kadm.Client) (int64, error) {
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: topic, Partition: partition, At: before})
		resps, err := adm.DeleteRecords(ctx, os)
		if err != nil {
			return 0, err
		}
		r, ok := resps.Lookup(topic, partition)
		if !ok {
			return 0, fmt.Errorf("no answer for %s-%d", topic, partition)
		}
		return r.LowWatermark, r.Err
	})
}

func (d kgoDriver) earliestOffset(ctx context.Context, tg *target, topic string, partition int32) (int64, error) {
	return withAdmin(d, tg, func(adm *kadm.Client) (int64, error) {
		los, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			return 0, err
		}
		o, ok := los.Lookup(topic, partition)
		if !ok {
			return 0, fmt.Errorf("no answer for %s-%d", topic, partition)
		}
		return o.Offset, o.Err
	})
}

// describeCluster sends DescribeCluster itself: kadm describes brokers
// with Metadata.
func (d kgoDriver) describeCluster(ctx context.Context, tg *target) (clusterInfo, error) {
	cl, err := d.client(tg)
	if err != nil {
		return clusterInfo{}, err
	}
	defer cl.Close()
	resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil {
		return clusterInfo{}, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return clusterInfo{}, err
	}
	info := clusterInfo{ClusterID: kmsg.StringPtr(resp.ClusterID), ControllerID: resp.ControllerID}
	for _, b := range resp.Brokers {
		info.Brokers = append(info.Brokers, b.NodeID)
	}
	return info, nil
}

func (d kgoDriver) describeLogDirs(ctx context.Context, tg *target, topic string) (map[int32]map[int32]int64, error) {
	return withAdmin(d, tg, func(adm *kadm.Client) (map[int32]map[int32]int64, error) {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return nil, err
		}
		set := kadm.TopicsSet{}
		set.Add(topic, md.Topics[topic].Partitions.Numbers()...)
		all, err := adm.DescribeAllLogDirs(ctx, set)
		if err != nil {
			return nil, err
		}
		out := map[int32]map[int32]int64{}
		for broker, dirs := range all {
			for _, dir := range dirs {
				if dir.Err != nil {
					return nil, fmt.Errorf("broker %d dir %s: %w", broker, dir.Dir, dir.Err)
				}
				for _, p := range dir.Topics[topic] {
					if out[broker] == nil {
						out[broker] = map[int32]int64{}
					}
					out[broker][p.Partition] += p.Size
				}
			}
		}
		return out, nil
	})
}

// errName is the Kafka name of a kerr error, "" for nil.
func errName(err error) string {
	var ke *kerr.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ke):
		return ke.Message
	}
	return err.Error()
}

func (d kgoDriver) electPreferredLeaders(ctx context.Context, tg *target, topic string, partitions []int32) (map[int32]string, error) {
	return withAdmin(d, tg, func(adm *kadm.Client) (map[int32]string, error) {
		set := kadm.TopicsSet{}
		set.Add(topic, partitions...)
		res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
		if err != nil {
			return nil, err
		}
		out := map[int32]string{}
		for _, p := range partitions {
			r, ok := res[topic][p]
			if !ok {
				return nil, fmt.Errorf("no answer for %s-%d", topic, p)
			}
			out[p] = errName(r.Err)
		}
		return out, nil
	})
}

func (d kgoDriver) reassign(ctx context.Context, tg *target, topic string, partition int32, replicas []int32) error {
	_, err := withAdmin(d, tg, func(adm *kadm.Client) (any, error) {
		var req kadm.AlterPartitionAssignmentsReq
		req.Assign(topic, partition, replicas)
		res, err := adm.AlterPartitionAssignments(ctx, req)
		if err != nil {
			return nil, err
		}
		r, ok := res[topic][partition]
		if !ok {
			return nil, fmt.Errorf("no answer for %s-%d", topic, partition)
		}
		return nil, r.Err
	})
	return err
}

func (d kgoDriver) reassigning(ctx context.Context, tg *target, topic string) (map[int32][]int32, error) {
	return withAdmin(d, tg, func(adm *kadm.Client) (map[int32][]int32, error) {
		set := kadm.TopicsSet{}
		set.Add(topic, 0)
		res, err := adm.ListPartitionReassignments(ctx, set)
		if err != nil {
			return nil, err
		}
		out := map[int32][]int32{}
		for p, r := range res[topic] {
			out[p] = r.AddingReplicas
		}
		return out, nil
	})
}

func (d kgoDriver) describeProducers(ctx context.Context, tg *target, topic string, partition int32) ([]producerState, error) {
	return withAdmin(d, tg, func(adm *kadm.Client) ([]producerState, error) {
		set := kadm.TopicsSet{}
		set.Add(topic, partition)
		res, err := adm.DescribeProducers(ctx, set)
		if err != nil {
			return nil, err
		}
		p, ok := res[topic].Partitions[partition]
		if !ok {
			return nil, fmt.Errorf("no answer for %s-%d", topic, partition)
		}
		if p.Err != nil {
			return nil, p.Err
		}
		var out []producerState
		for _, dp := range p.ActiveProducers.Sorted() {
			out = append(out, producerState{ProducerID: dp.ProducerID, ProducerEpoch: int32(dp.ProducerEpoch), LastSequence: dp.LastSequence})
		}
		return out, nil
	})
}

func (d kgoDriver) offsetForLeaderEpoch(ctx context.Context, tg *target, topic string, partition, leaderEpoch int32) (int64, int32, error) {
	adm, err := d.adminClient(tg)
	if err != nil {
		return 0, 0, err
	}
	defer adm.Close()
	req := kadm.OffsetForLeaderEpochRequest{}
	req.Add(topic, partition, leaderEpoch)
	res, err := adm.OffsetForLeaderEpoch(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	r, ok := res[topic][partition]
	if !ok {
		return 0, 0, fmt.Errorf("no answer for %s-%d", topic, partition)
	}
	return r.EndOffset, r.LeaderEpoch, r.Err
}
