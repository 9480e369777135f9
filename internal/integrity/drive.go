package integrity

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/transport"
)

// Mode is how a workload's records are handed to partlog's producer.
type Mode int

const (
	// Async produces each record with Produce and a promise, from one
	// goroutine per workload producer, reusing one key and value buffer
	// per goroutine as soon as Produce returns (which its doc allows).
	Async Mode = iota
	// Sync produces runs of 1 to 16 records with ProduceSync, from one
	// goroutine per workload producer.
	Sync
)

func (m Mode) String() string {
	if m == Sync {
		return "sync"
	}
	return "async"
}

// Produce runs w on ps — workload producer pr on ps[pr % len(ps)] — to
// topic, and records every acknowledgement in l. It returns once every
// record was acknowledged, with the first error otherwise.
func Produce(ctx context.Context, ps []*producer.Producer, topic string, w Workload, mode Mode, l *Ledger) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	for pr := range w.Producers {
		p := ps[pr%len(ps)]
		wg.Go(func() {
			if mode == Sync {
				produceSync(ctx, p, topic, w, pr, l, fail)
			} else {
				produceAsync(ctx, p, topic, w, pr, l, fail)
			}
		})
	}
	wg.Wait()
	for _, p := range ps {
		if err := p.Flush(ctx); err != nil {
			fail(fmt.Errorf("flush: %w", err))
		}
	}
	return firstErr
}

// produceAsync produces producer pr's records one by one, each with a
// promise that records its acknowledgement. The promise acknowledges the
// record as generated, not as r holds it: r's key and value are this
// goroutine's reused buffers by then.
func produceAsync(ctx context.Context, p *producer.Producer, topic string, w Workload, pr int, l *Ledger, fail func(error)) {
	var key, value []byte
	for i := range w.Records {
		want := w.Record(pr, i)
		r := &producer.Record{Topic: topic, Headers: want.Headers}
		if want.Timestamp != 0 {
			r.Timestamp = time.UnixMilli(want.Timestamp)
		}
		key, r.Key = reuse(key, want.Key)
		value, r.Value = reuse(value, want.Value)
		p.Produce(ctx, r, func(r *producer.Record, err error) {
			if err != nil {
				fail(fmt.Errorf("producer %d record %d: %w", pr, i, err))
				return
			}
			want.Partition, want.Offset, want.Timestamp = r.Partition, r.Offset, r.Timestamp.UnixMilli()
			l.Ack(want)
		})
		scribble(key)
		scribble(value)
	}
}

// reuse copies b into buf, growing it as needed, and returns buf and the
// copy: nil for a nil b, an empty slice for an empty one.
func reuse(buf, b []byte) ([]byte, []byte) {
	if b == nil {
		return buf, nil
	}
	if buf == nil {
		buf = make([]byte, 0, len(b))
	}
	buf = append(buf[:0], b...)
	return buf, buf
}

// scribble overwrites b, as the caller's next use of a buffer would.
func scribble(b []byte) {
	for i := range b {
		b[i] = '#'
	}
}

// produceSync produces producer pr's records in runs with ProduceSync.
func produceSync(ctx context.Context, p *producer.Producer, topic string, w Workload, pr int, l *Ledger, fail func(error)) {
	for i := 0; i < w.Records; {
		n := min(1+(i*7+pr)%16, w.Records-i)
		wants := make([]Record, n)
		rs := make([]*producer.Record, n)
		for j := range rs {
			wants[j] = w.Record(pr, i+j)
			rs[j] = &producer.Record{Topic: topic, Key: wants[j].Key, Value: wants[j].Value, Headers: wants[j].Headers}
			if wants[j].Timestamp != 0 {
				rs[j].Timestamp = time.UnixMilli(wants[j].Timestamp)
			}
		}
		for j, res := range p.ProduceSync(ctx, rs...) {
			if res.Err != nil {
				fail(fmt.Errorf("producer %d record %d: %w", pr, i+j, res.Err))
				return
			}
			wants[j].Partition, wants[j].Offset, wants[j].Timestamp = res.Record.Partition, res.Record.Offset, res.Record.Timestamp.UnixMilli()
			l.Ack(wants[j])
		}
		i += n
	}
}

// Consume reads topic through client from the start of each partition
// until it has read up to ends[p] in every partition p, with partlog's
// consumer assigned every partition in ends, and returns what it read in
// the order read. With reuse the consumer reuses its fetch buffers
// (consumer.FetchBuffers(consumer.ReuseBuffers)), and records are copied
// in the loop body, where they are valid.
func Consume(ctx context.Context, client transport.Client, topic string, ends map[int32]int64, reuse bool, opts ...consumer.Option) ([]Record, error) {
	var tps []kafka.TopicPartition
	left := 0
	for p, end := range ends {
		if end > 0 {
			tps = append(tps, kafka.TopicPartition{Topic: topic, Partition: p})
			left++
		}
	}
	if left == 0 {
		return nil, nil
	}
	opts = append([]consumer.Option{consumer.Partitions(tps...), consumer.AutoOffsetReset(consumer.Earliest)}, opts...)
	if reuse {
		opts = append(opts, consumer.FetchBuffers(consumer.ReuseBuffers))
	}
	c, err := consumer.New(client, opts...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []Record
	for rec, err := range c.Records(ctx) {
		if err != nil {
			return out, fmt.Errorf("integrity: consume: %w", err)
		}
		out = append(out, copied(rec))
		if rec.Offset+1 == ends[rec.Partition] {
			if left--; left == 0 {
				return out, nil
			}
		}
	}
	return out, fmt.Errorf("integrity: consume: %w with %d partitions not read to their end", errors.Join(ctx.Err(), consumer.ErrClosed), left)
}

// copied returns rec as a Record that owns its bytes.
func copied(rec consumer.Record) Record {
	r := Record{Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp.UnixMilli(),
		Key: clone(rec.Key), Value: clone(rec.Value)}
	for _, h := range rec.Headers {
		r.Headers = append(r.Headers, h)
		r.Headers[len(r.Headers)-1].Value = clone(h.Value)
	}
	return r
}

// ConsumeGroup reads topic with members consumers of one group, each made
// by newMember and read on a goroutine of its own, until together they
// have read total records, and returns what they read. The first error a
// member's loop yields stops every member. The members leave the group
// (Close) when done.
func ConsumeGroup(ctx context.Context, members int, total int, newMember func() (*consumer.Consumer, error)) ([]Record, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu   sync.Mutex
		out  []Record
		errs []error
		wg   sync.WaitGroup
	)
	for range members {
		c, err := newMember()
		if err != nil {
			return nil, err
		}
		wg.Go(func() {
			defer c.Close()
			for rec, err := range c.Records(ctx) {
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("integrity: a group member: %w", err))
				} else {
					out = append(out, copied(rec))
				}
				done := len(out) >= total || err != nil
				mu.Unlock()
				if done {
					cancel()
				}
			}
		})
	}
	wg.Wait()
	if len(out) < total && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("integrity: the group read %d of %d records: %w", len(out), total, context.Cause(ctx)))
	}
	return out, errors.Join(errs...)
}
