package compat

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// saramaDriver is IBM/sarama with its default protocol version (Kafka
// 2.8), as a user who does not set Config.Version has it.
type saramaDriver struct{}

func (saramaDriver) name() string              { return "sarama" }
func (saramaDriver) label() string             { return "sarama 1.61.1" }
func (saramaDriver) transactionVersion() int16 { return 0 }
func (d saramaDriver) admin() admin            { return d }

// config returns sarama's default config with tg's TLS and SASL settings and short
// backoffs, so that a check does not wait out Kafka's defaults.
func (saramaDriver) config(tg *target) *sarama.Config {
	cfg := sarama.NewConfig()
	if c := tg.sec; c != nil {
		if c.tlsConfig != nil {
			cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, c.tlsConfig
		}
		if c.mechanism != "" {
			// SaslHandshake v1, sarama's default.
			cfg.Net.SASL.Enable, cfg.Net.SASL.Mechanism = true, sarama.SASLTypeSCRAMSHA512
			cfg.Net.SASL.User, cfg.Net.SASL.Password = c.user, c.password
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{} }
		}
	}
	cfg.ClientID = "partlog-compat"
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Retry.Backoff = 50 * time.Millisecond
	cfg.Consumer.Retry.Backoff = 50 * time.Millisecond
	cfg.Admin.Retry.Backoff = 50 * time.Millisecond
	cfg.Admin.Timeout = 10 * time.Second
	return cfg
}

var saramaCodecs = map[string]sarama.CompressionCodec{"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP,
	"snappy": sarama.CompressionSnappy, "lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD}

var saramaAcks = map[int]sarama.RequiredAcks{0: sarama.NoResponse, 1: sarama.WaitForLocal, -1: sarama.WaitForAll}

// bytesOrNilEncoder keeps a null key or value null.
func bytesOrNilEncoder(b []byte) sarama.Encoder {
	if b == nil {
		return nil
	}
	return sarama.ByteEncoder(b)
}

// saramaMessages converts records to produce, each to its Partition.
func saramaMessages(topic string, recs []rec) []*sarama.ProducerMessage {
	var msgs []*sarama.ProducerMessage
	for _, r := range recs {
		m := &sarama.ProducerMessage{Topic: topic, Partition: r.Partition, Key: bytesOrNilEncoder(r.Key), Value: bytesOrNilEncoder(r.Value)}
		if r.Timestamp != 0 {
			m.Timestamp = time.UnixMilli(r.Timestamp)
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		msgs = append(msgs, m)
	}
	return msgs
}

func (d saramaDriver) produce(ctx context.Context, tg *target, spec produceSpec) ([]rec, error) {
	cfg := d.config(tg)
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.RequiredAcks = saramaAcks[spec.Acks]
	cfg.Producer.Compression = saramaCodecs[spec.Compression]
	if spec.Idempotent {
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
	}
	p, err := sarama.NewSyncProducer(tg.addrs(), cfg)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	msgs := saramaMessages(spec.Topic, spec.Records)
	if err := withContext(ctx, func() error { return p.SendMessages(msgs) }); err != nil {
		return nil, err
	}
	var out []rec
	for _, m := range msgs {
		offset := m.Offset
		if spec.Acks == 0 {
			offset = -1 // there is no answer to carry one
		}
		out = append(out, rec{Partition: m.Partition, Offset: offset})
	}
	return out, nil
}

// withContext runs fn, a sarama call that takes no context, and returns
// its error, or ctx's if ctx is done first (fn is left to finish).
func withContext(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func saramaRec(m *sarama.ConsumerMessage) rec {
	x := rec{Partition: m.Partition, Offset: m.Offset, Timestamp: m.Timestamp.UnixMilli(), Key: m.Key, Value: m.Value}
	for _, h := range m.Headers {
		x.Headers = append(x.Headers, hdr{Key: string(h.Key), Value: h.Value})
	}
	return x
}

// startOffset resolves where a consumer starts: sarama's consumer takes
// an offset, OffsetOldest or OffsetNewest, and a timestamp becomes an
// offset through the client's GetOffset (ListOffsets).
func (d saramaDriver) startOffset(client sarama.Client, topic string, partition int32, from start) (int64, error) {
	switch from.Kind {
	case "beginning":
		return sarama.OffsetOldest, nil
	case "end":
		return sarama.OffsetNewest, nil
	case "timestamp":
		return client.GetOffset(topic, partition, from.At)
	}
	return from.At, nil
}

func (d saramaDriver) consume(ctx context.Context, tg *target, spec consumeSpec) ([]rec, error) {
	cfg := d.config(tg)
	if spec.Isolation == "read_committed" {
		cfg.Consumer.IsolationLevel = sarama.ReadCommitted // else sarama's default, ReadUncommitted
	}
	client, err := sarama.NewClient(tg.addrs(), cfg)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	offset, err := d.startOffset(client, spec.Topic, spec.Partition, spec.From)
	if err != nil {
		return nil, err
	}
	c, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	pc, err := c.ConsumePartition(spec.Topic, spec.Partition, offset)
	if err != nil {
		return nil, err
	}
	defer pc.Close()
	var out []rec
	for len(out) < spec.Count {
		select {
		case m := <-pc.Messages():
			out = append(out, saramaRec(m))
		case err := <-pc.Errors():
			return out, err
		case <-ctx.Done():
			return out, fmt.Errorf("read %d of %d records: %w", len(out), spec.Count, ctx.Err())
		}
	}
	return out, nil
}

// consumeToEnd reads until the partition consumer's HighWaterMarkOffset
// (the high watermark of the last fetch) is past the last record read.
func (d saramaDriver) consumeToEnd(ctx context.Context, tg *target, topic string, partition int32) ([]rec, int64, error) {
	c, err := sarama.NewConsumer(tg.addrs(), d.config(tg))
	if err != nil {
		return nil, 0, err
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, partition, sarama.OffsetOldest)
	if err != nil {
		return nil, 0, err
	}
	defer pc.Close()
	var out []rec
	for {
		select {
		case m := <-pc.Messages():
			out = append(out, saramaRec(m))
			if hw := pc.HighWaterMarkOffset(); m.Offset+1 >= hw {
				return out, hw, nil
			}
		case err := <-pc.Errors():
			return out, 0, err
		case <-ctx.Done():
			return out, 0, fmt.Errorf("read %d records, high watermark %d: %w", len(out), pc.HighWaterMarkOffset(), ctx.Err())
		}
	}
}

// saramaMember is a group member: it marks and commits (synchronously)
// every message it consumes, and reports its claims in Setup and their
// end in Cleanup.
type saramaMember struct {
	group  sarama.ConsumerGroup
	events chan memberEvent
	cancel context.CancelFunc
	done   chan struct{}
	topic  string
}

func (d saramaDriver) join(ctx context.Context, tg *target, group, topic string) (member, error) {
	cfg := d.config(tg)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 10 * time.Second
	g, err := sarama.NewConsumerGroup(tg.addrs(), group, cfg)
	if err != nil {
		return nil, err
	}
	m := &saramaMember{group: g, events: make(chan memberEvent, 1024), done: make(chan struct{}), topic: topic}
	runCtx, cancel := context.WithCancel(ctx)
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for runCtx.Err() == nil {
			if err := g.Consume(runCtx, []string{topic}, m); err != nil && runCtx.Err() == nil {
				m.events <- memberEvent{Err: err.Error()}
				return
			}
		}
	}()
	return m, nil
}

func (m *saramaMember) Setup(s sarama.ConsumerGroupSession) error {
	m.events <- memberEvent{Assigned: append([]int32{}, s.Claims()[m.topic]...)}
	return nil
}

func (m *saramaMember) Cleanup(s sarama.ConsumerGroupSession) error {
	s.Commit()
	m.events <- memberEvent{Assigned: []int32{}}
	return nil
}

func (m *saramaMember) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			x := saramaRec(msg)
			m.events <- memberEvent{Record: &x}
			s.MarkMessage(msg, "")
			s.Commit()
		case <-s.Context().Done():
			return nil
		}
	}
}

func (m *saramaMember) Events() <-chan memberEvent { return m.events }

// Leave ends the session (Cleanup commits) and closes the group, which
// sends LeaveGroup.
func (m *saramaMember) Leave() error {
	if m.cancel == nil {
		return nil
	}
	m.cancel()
	m.cancel = nil
	<-m.done
	err := m.group.Close()
	close(m.events)
	return err
}

// txnConfig is the config of a transactional producer: idempotent (which
// sarama requires of one), acks=all, one request in flight, records to
// the partition they name.
func (d saramaDriver) txnConfig(tg *target, transactionalID string) *sarama.Config {
	cfg := d.config(tg)
	cfg.Producer.Transaction.ID = transactionalID
	cfg.Producer.Transaction.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Net.MaxOpenRequests = 1
	return cfg
}

// transact runs the transactions with one SyncProducer of spec's
// transactional id: BeginTxn, SendMessages (every record acknowledged),
// and CommitTxn or AbortTxn.
func (d saramaDriver) transact(ctx context.Context, tg *target, spec txnSpec) ([]rec, error) {
	p, err := sarama.NewSyncProducer(tg.addrs(), d.txnConfig(tg, spec.TransactionalID))
	if err != nil {
		return nil, err
	}
	defer p.Close()
	var out []rec
	for i, t := range spec.Transactions {
		if err := p.BeginTxn(); err != nil {
			return nil, fmt.Errorf("transaction %d: begin: %w", i+1, err)
		}
		msgs := saramaMessages(spec.Topic, t.Records)
		if err := withContext(ctx, func() error { return p.SendMessages(msgs) }); err != nil {
			p.AbortTxn()
			return nil, fmt.Errorf("transaction %d: send: %w", i+1, err)
		}
		for _, m := range msgs {
			out = append(out, rec{Partition: m.Partition, Offset: m.Offset})
		}
		end := p.AbortTxn
		if t.Commit {
			end = p.CommitTxn
		}
		if err := withContext(ctx, end); err != nil {
			return nil, fmt.Errorf("transaction %d: end (commit %v): %w", i+1, t.Commit, err)
		}
	}
	return out, nil
}

// transform consumes in a ConsumerGroup (read_committed, no auto commit)
// and, for what a claim has at hand, runs a transaction of a SyncProducer:
// SendMessages of the transforms, AddOffsetsToTxnWithGroupMetadata with
// the session's member and generation (KIP-447), CommitTxn — or AbortTxn,
// and the end, in the run that aborts.
func (d saramaDriver) transform(ctx context.Context, tg *target, spec transformSpec) (int, error) {
	p, err := sarama.NewSyncProducer(tg.addrs(), d.txnConfig(tg, spec.TransactionalID))
	if err != nil {
		return 0, err
	}
	defer p.Close()
	cfg := d.config(tg)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	cfg.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 10 * time.Second
	g, err := sarama.NewConsumerGroup(tg.addrs(), spec.Group, cfg)
	if err != nil {
		return 0, err
	}
	defer g.Close()
	h := &saramaTransform{spec: spec, p: p, finished: make(chan struct{})}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	consumed := make(chan error, 1)
	go func() {
		for runCtx.Err() == nil {
			if err := g.Consume(runCtx, []string{spec.Input}, h); err != nil && runCtx.Err() == nil {
				consumed <- err
				return
			}
		}
		consumed <- nil
	}()
	// Consume returns when ctx is done, or when runCtx is cancelled at
	// the end.
	var consumeErr error
	select {
	case <-h.finished:
		cancel()
		consumeErr = <-consumed
	case consumeErr = <-consumed:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.over:
		return h.done, h.err
	case consumeErr != nil:
		return h.done, consumeErr
	}
	return h.done, fmt.Errorf("%d of %d records carried over: %w", h.done, spec.Count, ctx.Err())
}

// saramaTransform is transform's ConsumerGroupHandler. Claims run side by
// side; their transactions, one producer's, take turns.
type saramaTransform struct {
	spec     transformSpec
	p        sarama.SyncProducer
	finished chan struct{} // closed at the end: Count carried over, the abort, or a failure

	mu   sync.Mutex
	done int // records in committed (or, in the run that aborts, the aborted) transactions
	over bool
	err  error
}

func (h *saramaTransform) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaTransform) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim takes a message, and those that came with it, and carries
// them over in a transaction.
func (h *saramaTransform) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		var msgs []*sarama.ConsumerMessage
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			msgs = append(msgs, m)
		case <-s.Context().Done():
			return nil
		}
	more:
		for {
			select {
			case m, ok := <-claim.Messages():
				if !ok {
					break more
				}
				msgs = append(msgs, m)
			default:
				break more
			}
		}
		if !h.carry(s, msgs) {
			return nil
		}
	}
}

// carry runs the transaction of msgs, one partition's, and reports
// whether to go on.
func (h *saramaTransform) carry(s sarama.ConsumerGroupSession, msgs []*sarama.ConsumerMessage) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.over {
		return false
	}
	fail := func(what string, err error) bool {
		h.p.AbortTxn()
		h.end(fmt.Errorf("%s: %w", what, err))
		return false
	}
	if err := h.p.BeginTxn(); err != nil {
		return fail("begin", err)
	}
	var out []rec
	for _, m := range msgs {
		out = append(out, transformed(saramaRec(m)))
	}
	if err := h.p.SendMessages(saramaMessages(h.spec.Output, out)); err != nil {
		return fail("send", err)
	}
	last := msgs[len(msgs)-1]
	offsets := map[string][]*sarama.PartitionOffsetMetadata{last.Topic: {{Partition: last.Partition, Offset: last.Offset + 1}}}
	if err := h.p.AddOffsetsToTxnWithGroupMetadata(offsets, sarama.NewConsumerGroupMetadataFromSession(s, h.spec.Group, nil)); err != nil {
		return fail("add offsets", err)
	}
	if h.spec.Abort {
		h.done = len(msgs)
		h.end(h.p.AbortTxn())
		return false
	}
	if err := h.p.CommitTxn(); err != nil {
		h.end(fmt.Errorf("commit: %w", err))
		return false
	}
	h.done += len(msgs)
	if h.done >= h.spec.Count {
		h.end(nil)
		return false
	}
	return true
}

// end ends the transform with err (nil for success); h.mu is held.
func (h *saramaTransform) end(err error) {
	h.over, h.err = true, err
	close(h.finished)
}

// saramaStream is an idempotent async producer at acks=all.
type saramaStream struct {
	p    sarama.AsyncProducer
	acks chan streamAck
	stop chan struct{}
	sent chan int // the number of records sent, once the sender stops
	done chan struct{}
	once sync.Once
}

func (d saramaDriver) produceStream(ctx context.Context, tg *target, topic string) (stream, error) {
	cfg := d.config(tg)
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Retry.Max = 1000
	p, err := sarama.NewAsyncProducer(tg.addrs(), cfg)
	if err != nil {
		return nil, err
	}
	s := &saramaStream{p: p, acks: make(chan streamAck, 1024), stop: make(chan struct{}), sent: make(chan int, 1), done: make(chan struct{})}
	inFlight := make(chan struct{}, 100)
	go func() { // send
		seq := 0
		defer func() { s.sent <- seq }()
		for ; ; seq++ {
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			case inFlight <- struct{}{}:
			}
			p.Input() <- &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("key-%d", seq%30)),
				Value: sarama.StringEncoder(strconv.Itoa(seq)), Metadata: seq}
		}
	}()
	go func() { // collect
		defer close(s.done)
		sent, outcomes := -1, 0
		for sent < 0 || outcomes < sent {
			select {
			case m := <-p.Successes():
				s.acks <- streamAck{Seq: m.Metadata.(int), Partition: m.Partition, Offset: m.Offset}
			case e := <-p.Errors():
				s.acks <- streamAck{Seq: e.Msg.Metadata.(int), Partition: e.Msg.Partition, Offset: -1, Err: e.Err.Error()}
			case n := <-s.sent:
				sent = n
				continue
			}
			outcomes++
			<-inFlight
		}
	}()
	return s, nil
}

func (s *saramaStream) Acks() <-chan streamAck { return s.acks }

func (s *saramaStream) Stop() error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		select {
		case <-s.done:
		case <-time.After(60 * time.Second):
			err = errors.New("records sent had no outcome within 60 s")
		}
		s.p.Close()
		close(s.acks)
	})
	return err
}

// The admin calls, through sarama's ClusterAdmin.

func withSaramaAdmin[T any](d saramaDriver, tg *target, fn func(sarama.ClusterAdmin) (T, error)) (T, error) {
	adm, err := sarama.NewClusterAdmin(tg.addrs(), d.config(tg))
	if err != nil {
		var zero T
		return zero, err
	}
	defer adm.Close()
	return fn(adm)
}

func (d saramaDriver) createTopic(ctx context.Context, tg *target, topic string, partitions int32, rf int16, configs map[string]string) error {
	_, err := withSaramaAdmin(d, tg, func(adm sarama.ClusterAdmin) (any, error) {
		entries := map[string]*string{}
		for k, v := range configs {
			entries[k] = &v
		}
		return nil, adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: rf, ConfigEntries: entries}, false)
	})
	return err
}

func (d saramaDriver) partitions(ctx context.Context, tg *target, topic string) (int, error) {
	return withSaramaAdmin(d, tg, func(adm sarama.ClusterAdmin) (int, error) {
		md, err := adm.DescribeTopics([]string{topic})
		if err != nil {
			return 0, err
		}
		if md[0].Err != sarama.ErrNoError {
			return 0, md[0].Err
		}
		return len(md[0].Partitions), nil
	})
}

func (d saramaDriver) deleteTopic(ctx context.Context, tg *target, topic string) error {
	_, err := withSaramaAdmin(d, tg, func(adm sarama.ClusterAdmin) (any, error) { return nil, adm.DeleteTopic(topic) })
	return err
}

func (d saramaDriver) createPartitions(ctx context.Context, tg *target, topic string, total int32) error {
	_, err := withSaramaAdmin(d, tg, func(adm sarama.ClusterAdmin) (any, error) {
		return nil, adm.CreatePartitions(topic, total, nil, false)
	})
	return err
}

func (d saramaDriver) incrementalAlterTopicConfig(ctx context.Context, tg *target, topic string, set map[string]string) error {
	_, err := withSaramaAdmin(d, tg, func(adm sarama.ClusterAdmin) (any, error) {
		entries := map[string]sarama.IncrementalAlterConfigsEntry{}
		for k, v := range set {
			entries[k] = sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v}
		}
		return nil, adm.IncrementalAlterConfig(sarama.TopicResource, topic, entries, false)
	})
	return err
}

func (d saramaDriver) alterTopicConfig(ctx context.Context, tg *target, topic string, configs map[string]string) error {
	_, err := withSaramaAdmin(d, tg, func(adm sarama.ClusterAdmin) (any, error) {
		entries := map[string]*string{}
		for k, v := range configs {
			entries[k] = &v
		}
		return nil, adm.AlterConfig(sarama.TopicResource, topic, entries, false)
	})
	return err
}

// describeConfig describes a resource: a config is a default when its
// source is DEFAULT_CONFIG (sarama's Default from a version 0 answer).
func (d saramaDriver) describeConfig(tg *target, typ sarama.ConfigResourceType, name string) (map[string]configValue, error) {
	return withSaramaAdmin(d, tg, func(adm sarama.ClusterAdmin) (map[string]configValue, error) {
		entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: typ, Name: name})
		if err != nil {
			return nil, err
		}
		out := map[string]configValue{}
		for _, e := range entries {
			isDefault := e.Source == sarama.SourceDefault
			if e.Source == sarama.SourceUnknown {
				isDefault = e.Default
			}
			out[e.Name] = configValue{Value: &e.Value, IsDefault: isDefault}
		}
		return out, nil
	})
}

func (d saramaDriver) describeTopicConfig(ctx context.Context, tg *target, topic string) (map[string]configValue, error) {
	return d.describeConfig(tg, sarama.TopicResource, topic)
}

func (d saramaDriver) describeBrokerConfig(ctx context.Context, tg *target, broker int32) (map[string]configValue, error) {
	return d.describeConfig(tg, sarama.BrokerResource, strconv.Itoa(int(broker)))
}

// deleteRecords: sarama's DeleteRecords returns only an error, not the
// low watermark.
func (d saramaDriver) deleteRecords(ctx context.Context, tg *target, topic string, partition int32, before int64) (int64, error) {
	_, err := withSaramaAdmin(d, tg, func(adm sarama.ClusterAdmin) (any, error) {
		return nil, adm.DeleteRecords(topic, map[int32]int64{partition: before})
	})
	return -1, err
}

func (d saramaDriver) earliestOffset(ctx context.Context, tg *target, topic string, partition int32) (int64, error) {
	return withSaramaAdmin(d, tg, func(adm sarama.ClusterAdmin) (int64, error) {
		res, err := adm.ListOffsets(map[string]map[int32]int64{topic: {partition: sarama.OffsetOldest}}, nil)
		if err != nil {
			return 0, err
		}
		r := res[topic][partition]
		switch {
		case r == nil:
			return 0, fmt.Errorf("no answer for %s-%d", topic, partition)
		case r.Err != nil && !errors.Is(r.Err, sarama.ErrNoError): // a KError, ErrNoError when there is none
			return 0, r.Err
		}
		return r.Offset, nil
	})
}

// describeCluster: sarama's DescribeCluster sends Metadata, and gives no
// cluster id.
func (d saramaDriver) describeCluster(ctx context.Context, tg *target) (clusterInfo, error) {
	return withSaramaAdmin(d, tg, func(adm sarama.ClusterAdmin) (clusterInfo, error) {
		brokers, controller, err := adm.DescribeCluster()
		if err != nil {
			return clusterInfo{}, err
		}
		info := clusterInfo{ControllerID: controller}
		for _, b := range brokers {
			info.Brokers = append(info.Brokers, b.ID())
		}
		return info, nil
	})
}

func (d saramaDriver) describeLogDirs(ctx context.Context, tg *target, topic string) (map[int32]map[int32]int64, error) {
	return withSaramaAdmin(d, tg, func(adm sarama.ClusterAdmin) (map[int32]map[int32]int64, error) {
		all, err := adm.DescribeLogDirs(tg.ids())
		if err != nil {
			return nil, err
		}
		out := map[int32]map[int32]int64{}
		for broker, dirs := range all {
			for _, dir := range dirs {
				if dir.ErrorCode != sarama.ErrNoError {
					return nil, fmt.Errorf("broker %d dir %s: %w", broker, dir.Path, dir.ErrorCode)
				}
				for _, t := range dir.Topics {
					if t.Topic != topic {
						continue
					}
					for _, p := range t.Partitions {
						if out[broker] == nil {
							out[broker] = map[int32]int64{}
						}
						out[broker][p.PartitionID] += p.Size
					}
				}
			}
		}
		return out, nil
	})
}

func (d saramaDriver) reassign(ctx context.Context, tg *target, topic string, partition int32, replicas []int32) error {
	_, err := withSaramaAdmin(d, tg, func(adm sarama.ClusterAdmin) (any, error) {
		// Sarama takes one assignment per partition, from partition 0 on.
		if partition != 0 {
			return nil, fmt.Errorf("harness: sarama reassigns partitions from 0 on; asked for %d", partition)
		}
		return nil, adm.AlterPartitionReassignments(topic, [][]int32{replicas})
	})
	return err
}

func (d saramaDriver) reassigning(ctx context.Context, tg *target, topic string) (map[int32][]int32, error) {
	return withSaramaAdmin(d, tg, func(adm sarama.ClusterAdmin) (map[int32][]int32, error) {
		res, err := adm.ListPartitionReassignments(topic, []int32{0})
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

func (d saramaDriver) electPreferredLeaders(ctx context.Context, tg *target, topic string, partitions []int32) (map[int32]string, error) {
	return withSaramaAdmin(d, tg, func(adm sarama.ClusterAdmin) (map[int32]string, error) {
		res, err := adm.ElectLeaders(sarama.PreferredElection, map[string][]int32{topic: partitions})
		if err != nil {
			return nil, err
		}
		out := map[int32]string{}
		for _, p := range partitions {
			r := res[topic][p]
			switch {
			case r == nil:
				return nil, fmt.Errorf("no answer for %s-%d", topic, p)
			case r.ErrorCode == sarama.ErrNoError:
				out[p] = ""
			case r.ErrorCode == sarama.ErrElectionNotNeeded:
				out[p] = "ELECTION_NOT_NEEDED"
			default:
				out[p] = r.ErrorCode.Error()
			}
		}
		return out, nil
	})
}

func (saramaDriver) describeProducers(context.Context, *target, string, int32) ([]producerState, error) {
	return nil, na("sarama's ClusterAdmin has no DescribeProducers")
}

func (saramaDriver) offsetForLeaderEpoch(context.Context, *target, string, int32, int32) (int64, int32, error) {
	return 0, 0, na("sarama's ClusterAdmin has no OffsetForLeaderEpoch")
}
