// This is the project's copy of ../shared/bench/adapter_partlog.go, kept
// compiling as partlog's API moves (run.sh uses it when it exists), with the
// same settings: a node's requests are n.Client(), acks are kafka's, and a
// partition's log is partlogtest.Log's.

package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/quota"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/twmb/franz-go/pkg/kgo"
)

// partlog (github.com/partlog/partlog, replaced by the project checkout in
// go.mod): the library under test, three ways.
//
// partlog-log: the storage layer alone (package log, one partition
// directory). Each Append builds one RecordBatch v2 of the 1000 records with
// a reused record.Builder (Finish: no copy) and hands it to log.Append
// (page cache; CRC check of the batch). Sync = log.Flush (fdatasync of the
// segment, the recovery point moves). ReadAll = log.Read of 1 MiB of whole
// batches from offset 0, each batch decoded with record.DecodeInto
// (CRC-32C verified).
//
// partlog-producer: the embedded node as an application uses it:
// partlog.Open(dir), topic "bench" with 1 partition, producer.New(node)
// with acks=1 (AcksLeader: idempotence off), batch.size 1 MiB, linger 5 ms,
// buffer.memory 8 MiB (the settings of the project's own perf produce),
// Produce of each record with a promise; Flush = producer.Flush.
// pagecache mode: topic flush.messages=max (Kafka's default, "flush off");
// end Sync = producer Flush + node.Log("bench",0).Flush() (fdatasync).
// fsync1000 mode: topic flush.messages=1 (partlog's default: sync before
// ack), so Sync = producer Flush = every batch fsynced before its ack.
// ReadAll = consumer.New assigned bench-0 at offset 0, Records iterator,
// default buffers (each fetch's memory kept).
//
// partlog-tcp: as kfake-disk, but the broker is a partlog node served over
// loopback TCP in this process (transport.NewServer(node).Serve): franz-go
// client, acks=all, idempotent, linger 10 ms, no compression, batch max
// 2 MiB (topic max.message.bytes 8 MiB); pagecache: flush.messages=max, end
// Sync = client Flush + node.Log(...).Flush(); fsync1000: flush.messages=1
// (sync before ack, as kfake.SyncWrites) + client Flush per 1000 records.
// Read = franz-go consumer from the start (the node sends records with
// sendfile).
func init() {
	register(Contender{
		Name:  "partlog-log",
		Notes: "partlog package log direct: 1 RecordBatch (record.Builder) per 1000 records -> log.Append; Sync = log.Flush (fdatasync); read = log.Read 1 MiB + record.DecodeInto (CRC checked)",
		Open:  openPartlogLog,
	})
	register(Contender{
		Name:  "partlog-producer",
		Notes: "partlog.Open + producer.New(node) acks=1, batch.size 1 MiB, linger 5ms, buffer.memory 8 MiB, Produce+promise per record; pagecache: flush.messages=max, end Sync = Flush + log.Flush; fsync1000: flush.messages=1 (sync before ack); read = consumer.New(PartitionsAt 0).Records",
		Open:  openPartlogProducer,
	})
	register(Contender{
		Name:  "partlog-tcp",
		Notes: "franz-go v1.22.3 client -> partlog node served on loopback TCP in process, as kfake-disk: acks=all, idempotent, linger 10ms, no compression, 2 MiB batches; fsync1000 = flush.messages=1 + client Flush per 1000",
		Open:  openPartlogTCP,
	})
	register(Contender{
		Name:  "partlog-tcp-metrics",
		Notes: "partlog-tcp served as partlog serve --metrics serves it: ServerOptions.Observer = node.Metrics() (requests and their time per API), Quotas = the node's (none set), and the registry gathered (a Prometheus scrape) every second",
		Open:  func(dir string, o Options) (Log, error) { return openPartlogTCPWith(dir, o, true) },
	})
}

const plTopic = "bench"

// ------------------------------------------------------------ partlog-log

type partlogLog struct {
	l    *plog.Log
	b    *record.Builder
	recs []record.Record
	buf  []byte
}

func openPartlogLog(dir string, o Options) (Log, error) {
	l, err := plog.Open(dir+"/bench-0", plog.Options{RetentionMs: -1, MaxMessageBytes: 8 << 20})
	if err != nil {
		return nil, err
	}
	b := record.NewBuilder(record.DefaultBatchOptions())
	b.Grow(o.Batch * (o.RecordSize + 16))
	return &partlogLog{l: l, b: b}, nil
}

func (a *partlogLog) Append(batch [][]byte) error {
	a.b.Reset(record.DefaultBatchOptions())
	ts := time.Now().UnixMilli()
	for _, v := range batch {
		a.b.Append(record.Record{Timestamp: ts, Value: v})
	}
	bb, ok := a.b.Finish()
	if !ok {
		return errors.New("partlog-log: Finish refused an uncompressed batch")
	}
	_, err := a.l.Append(bb)
	return err
}

func (a *partlogLog) Flush() error { return nil } // Append returns once the batch is in the page cache
func (a *partlogLog) Sync() error  { return a.l.Flush() }

func (a *partlogLog) ReadAll(fn func(rec []byte)) error {
	if cap(a.buf) == 0 {
		a.buf = make([]byte, 0, 2<<20)
	}
	end := a.l.LogEndOffset()
	for off := a.l.LogStartOffset(); off < end; {
		got, err := a.l.Read(a.buf[:0], off, end, 1<<20)
		if err != nil {
			return err
		}
		if cap(got) > cap(a.buf) {
			a.buf = got[:0] // a batch larger than the buffer: keep the larger one
		}
		data := got
		if len(data) == 0 {
			return fmt.Errorf("partlog-log: empty read at offset %d of %d", off, end)
		}
		for len(data) > 0 {
			h, err := record.ParseHeader(data)
			if err != nil {
				return err
			}
			bt, err := record.DecodeInto(a.recs, data[:h.Size()], record.VerifyCRC)
			if err != nil {
				return err
			}
			a.recs = bt.Records
			for i := range bt.Records {
				if bt.Records[i].Offset >= off {
					fn(bt.Records[i].Value)
				}
			}
			off = h.NextOffset()
			data = data[h.Size():]
		}
	}
	return nil
}

func (a *partlogLog) Close() error { return a.l.Close() }

// ------------------------------------------------------- partlog-producer

func plTopicConfigs(durable bool, extra map[string]string) map[string]string {
	c := map[string]string{partlog.ConfigRetentionMs: "-1"}
	if durable {
		c[partlog.ConfigFlushMessages] = "1" // partlog's default: sync before ack
	} else {
		c[partlog.ConfigFlushMessages] = strconv.FormatInt(math.MaxInt64, 10) // Kafka's default: flush off
	}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

func openPartlogNode(dir string, durable bool, extra map[string]string) (*partlog.Node, error) {
	n, err := partlog.Open(dir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.CreateTopic(ctx, partlog.NewTopic{Name: plTopic, Partitions: 1, Configs: plTopicConfigs(durable, extra)}); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

type partlogProducer struct {
	node    *partlog.Node
	p       *producer.Producer
	durable bool
	n       int
	errs    atomic.Int64
	lastErr atomic.Value
	promise func(*producer.Record, error)
}

func openPartlogProducer(dir string, o Options) (Log, error) {
	n, err := openPartlogNode(dir, o.Durable, nil)
	if err != nil {
		return nil, err
	}
	p, err := producer.New(n.Client(),
		producer.Acks(kafka.AcksLeader),
		producer.BatchSize(1<<20),
		producer.Linger(5*time.Millisecond),
		producer.BufferMemory(8<<20),
	)
	if err != nil {
		n.Close()
		return nil, err
	}
	a := &partlogProducer{node: n, p: p, durable: o.Durable}
	a.promise = func(_ *producer.Record, err error) {
		if err != nil {
			a.errs.Add(1)
			a.lastErr.Store(err)
		}
	}
	return a, nil
}

func (a *partlogProducer) Append(batch [][]byte) error {
	ctx := context.Background()
	for _, v := range batch {
		a.p.Produce(ctx, &producer.Record{Topic: plTopic, Value: v}, a.promise)
	}
	a.n += len(batch)
	return nil
}

func (a *partlogProducer) Flush() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := a.p.Flush(ctx); err != nil {
		return err
	}
	if n := a.errs.Load(); n > 0 {
		return fmt.Errorf("%d produce errors, last: %v", n, a.lastErr.Load())
	}
	return nil
}

func (a *partlogProducer) Sync() error {
	if err := a.Flush(); err != nil {
		return err
	}
	if a.durable {
		return nil // flush.messages=1: acknowledged = fsynced
	}
	return plFlushLog(a.node)
}

// plFlushLog makes the partition's log durable: the log's fdatasync.
func plFlushLog(n *partlog.Node) error {
	l, err := partlogtest.Log(n, plTopic, 0)
	if err != nil {
		return err
	}
	return l.Flush()
}

func (a *partlogProducer) ReadAll(fn func(rec []byte)) error {
	c, err := consumer.New(a.node.Client(),
		consumer.PartitionsAt(map[kafka.TopicPartition]int64{{Topic: plTopic, Partition: 0}: 0}))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	got := 0
	if got >= a.n {
		return nil
	}
	for rec, err := range c.Records(ctx) {
		if err != nil {
			return err
		}
		fn(rec.Value)
		got++
		if got >= a.n {
			return nil
		}
	}
	if ctx.Err() != nil {
		return errors.New("timeout consuming")
	}
	return fmt.Errorf("consumer ended after %d of %d records", got, a.n)
}

func (a *partlogProducer) Close() error {
	a.p.Close()
	return a.node.Close()
}

// ------------------------------------------------------------ partlog-tcp

type partlogTCP struct {
	node    *partlog.Node
	srv     *transport.Server
	addr    string
	cl      *kgo.Client
	durable bool
	n       int
	errs    atomic.Int64
	lastErr atomic.Value
	promise func(*kgo.Record, error)
	// stopScrape ends partlog-tcp-metrics' scrapes.
	stopScrape func()
}

func openPartlogTCP(dir string, o Options) (Log, error) { return openPartlogTCPWith(dir, o, false) }

// openPartlogTCPWith opens partlog-tcp, or partlog-tcp-metrics with
// metered.
func openPartlogTCPWith(dir string, o Options, metered bool) (Log, error) {
	n, err := openPartlogNode(dir, o.Durable, map[string]string{partlog.ConfigMaxMessageBytes: strconv.Itoa(8 << 20)})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		n.Close()
		return nil, err
	}
	var sopts transport.ServerOptions
	stopScrape := func() {}
	if metered {
		sopts.Observer = n.Metrics()
		sopts.Quotas = &quota.Manager{Config: n.ClientQuotas}
		done := make(chan struct{})
		stopScrape = sync.OnceFunc(func() { close(done) })
		go func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					n.Metrics().Registry.Gather()
				}
			}
		}()
	}
	srv := transport.NewServer(n.Client(), sopts)
	go srv.Serve(ln)
	addr := ln.Addr().String()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic(plTopic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(10*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(2<<20),
	)
	if err != nil {
		srv.Close()
		n.Close()
		return nil, err
	}
	a := &partlogTCP{node: n, srv: srv, addr: addr, cl: cl, durable: o.Durable, stopScrape: stopScrape}
	a.promise = func(_ *kgo.Record, err error) {
		if err != nil {
			a.errs.Add(1)
			a.lastErr.Store(err)
		}
	}
	return a, nil
}

func (a *partlogTCP) Append(batch [][]byte) error {
	ctx := context.Background()
	for _, r := range batch {
		a.cl.Produce(ctx, &kgo.Record{Value: r}, a.promise)
	}
	a.n += len(batch)
	return nil
}

func (a *partlogTCP) Flush() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := a.cl.Flush(ctx); err != nil {
		return err
	}
	if n := a.errs.Load(); n > 0 {
		return fmt.Errorf("%d produce errors, last: %v", n, a.lastErr.Load())
	}
	return nil
}

func (a *partlogTCP) Sync() error {
	if err := a.Flush(); err != nil {
		return err
	}
	if a.durable {
		return nil // flush.messages=1: acknowledged = fsynced
	}
	return plFlushLog(a.node)
}

func (a *partlogTCP) ReadAll(fn func(rec []byte)) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(a.addr),
		kgo.ConsumeTopics(plTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	got := 0
	for got < a.n {
		fs := cl.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			return errs[0].Err
		}
		fs.EachRecord(func(r *kgo.Record) {
			fn(r.Value)
			got++
		})
		if ctx.Err() != nil {
			return errors.New("timeout consuming")
		}
	}
	return nil
}

func (a *partlogTCP) Close() error {
	a.stopScrape()
	a.cl.Close()
	a.srv.Close()
	return a.node.Close()
}
