package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// rec is a record as the checks compare them, whoever wrote or read it:
// a client's driver, partlog's producer, or the harness reading a
// partition's batches.
type rec struct {
	Partition int32
	// Offset is the record's offset; -1 where it is not known (a record
	// to produce, or one acknowledged without an offset).
	Offset int64
	// Timestamp is in milliseconds since the epoch; 0 to produce means
	// "now", and in a comparison "not compared".
	Timestamp int64
	// Key and Value: nil is null.
	Key, Value []byte
	Headers    []hdr
}

// hdr is one of a record's headers.
type hdr struct {
	Key   string
	Value []byte
}

func (r rec) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "p%d@%d key=%s value=%s", r.Partition, r.Offset, quote(r.Key), quote(r.Value))
	if r.Timestamp != 0 {
		fmt.Fprintf(&b, " ts=%d", r.Timestamp)
	}
	for _, h := range r.Headers {
		fmt.Fprintf(&b, " %s:%s", h.Key, quote(h.Value))
	}
	return b.String()
}

func quote(b []byte) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprintf("%q", b)
}

// sameRecords reports how got differs from want, record by record, or
// "" when they agree: partition, offset, key, value and headers exactly
// (null apart from empty), and timestamps where both have one.
func sameRecords(what string, got, want []rec) error {
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			return fmt.Errorf("%s: %d records, want %d; record %d missing: %v", what, len(got), len(want), i, want[i])
		case i >= len(want):
			return fmt.Errorf("%s: %d records, want %d; extra record %v", what, len(got), len(want), got[i])
		}
		if diff := recordDiff(got[i], want[i]); diff != "" {
			return fmt.Errorf("%s: record %d: %s\n  got  %v\n  want %v", what, i, diff, got[i], want[i])
		}
	}
	return nil
}

// recordDiff names the first field where got differs from want.
func recordDiff(got, want rec) string {
	switch {
	case got.Partition != want.Partition:
		return "partition"
	case got.Offset != want.Offset:
		return "offset"
	case (got.Key == nil) != (want.Key == nil) || !bytes.Equal(got.Key, want.Key):
		return "key"
	case (got.Value == nil) != (want.Value == nil) || !bytes.Equal(got.Value, want.Value):
		return "value"
	case got.Timestamp != 0 && want.Timestamp != 0 && got.Timestamp != want.Timestamp:
		return "timestamp"
	case len(got.Headers) != len(want.Headers):
		return "headers"
	}
	for i, h := range got.Headers {
		w := want.Headers[i]
		if h.Key != w.Key || (h.Value == nil) != (w.Value == nil) || !bytes.Equal(h.Value, w.Value) {
			return fmt.Sprintf("header %d", i)
		}
	}
	return ""
}

// jsonRec is a rec as the Python and JavaScript clients exchange them with
// the harness, one JSON object a line: keys, values and header values are
// UTF-8 text or null.
type jsonRec struct {
	Partition int32        `json:"partition"`
	Offset    int64        `json:"offset"`
	Timestamp int64        `json:"timestamp,omitempty"`
	Key       *string      `json:"key"`
	Value     *string      `json:"value"`
	Headers   [][2]*string `json:"headers"`
}

func textOrNull(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func bytesOrNil(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

func toJSON(r rec) jsonRec {
	j := jsonRec{Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp, Key: textOrNull(r.Key), Value: textOrNull(r.Value),
		Headers: [][2]*string{}}
	for _, h := range r.Headers {
		k := h.Key
		j.Headers = append(j.Headers, [2]*string{&k, textOrNull(h.Value)})
	}
	return j
}

func fromJSON(j jsonRec) rec {
	r := rec{Partition: j.Partition, Offset: j.Offset, Timestamp: j.Timestamp, Key: bytesOrNil(j.Key), Value: bytesOrNil(j.Value)}
	for _, h := range j.Headers {
		if h[0] == nil {
			continue
		}
		r.Headers = append(r.Headers, hdr{Key: *h[0], Value: bytesOrNil(h[1])})
	}
	return r
}

// MarshalJSON and UnmarshalJSON let specs holding recs go to the scripts
// as they are.
func (r rec) MarshalJSON() ([]byte, error) { return json.Marshal(toJSON(r)) }

func (r *rec) UnmarshalJSON(b []byte) error {
	var j jsonRec
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = fromJSON(j)
	return nil
}

// produceWithPartlog produces recs, each to its Partition, with partlog's
// own producer at acks=all and the given options, and returns them with
// the offsets and timestamps their acknowledgements gave.
func (tg *target) produceWithPartlog(ctx context.Context, topic string, recs []rec, opts ...producer.Option) ([]rec, error) {
	opts = append([]producer.Option{producer.Linger(0), producer.DeliveryTimeout(30 * time.Second)}, opts...)
	p, err := producer.New(tg.client, opts...)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	prs := make([]*producer.Record, len(recs))
	for i, r := range recs {
		pr := &producer.Record{Topic: topic, Key: r.Key, Value: r.Value}
		if r.Timestamp != 0 {
			pr.Timestamp = time.UnixMilli(r.Timestamp)
		}
		for _, h := range r.Headers {
			pr.Headers = append(pr.Headers, producer.Header{Key: h.Key, Value: h.Value})
		}
		pr.SetPartition(r.Partition)
		prs[i] = pr
	}
	out := slices.Clone(recs)
	for i, res := range p.ProduceSync(ctx, prs...) {
		if res.Err != nil {
			return nil, fmt.Errorf("harness: partlog's producer: record %d: %w", i, res.Err)
		}
		out[i].Offset, out[i].Timestamp = res.Record.Offset, res.Record.Timestamp.UnixMilli()
	}
	return out, nil
}

// readLog reads a partition's batches from its log start offset up to its
// high watermark, with the harness's own client, and returns them decoded.
// This is what the partition holds, whichever client wrote it.
func (tg *target) readLog(ctx context.Context, topic string, partition int32) ([]record.Batch, error) {
	start, err := tg.listOffset(ctx, topic, partition, kafka.EarliestTimestamp)
	if err != nil {
		return nil, err
	}
	var batches []record.Batch
	for offset := start; ; {
		pr, err := retrying(ctx, func() (transport.FetchPartitionResponse, error) {
			resp, err := tg.client.Fetch(ctx, &transport.FetchRequest{ReplicaID: kafka.ConsumerReplicaID, MaxBytes: 8 << 20,
				Topics: []transport.FetchTopic{{Topic: topic, Partitions: []transport.FetchPartition{
					{Partition: partition, CurrentLeaderEpoch: -1, FetchOffset: offset, LastFetchedEpoch: -1, LogStartOffset: -1, MaxBytes: 8 << 20}}}}})
			if err != nil {
				return transport.FetchPartitionResponse{}, err
			}
			pr := resp.Topics[0].Partitions[0]
			return pr, pr.Err
		})
		if err != nil {
			return nil, fmt.Errorf("harness: fetch %s-%d at %d: %w", topic, partition, offset, err)
		}
		b := pr.Records
		for len(b) > 0 {
			h, err := record.ParseHeader(b)
			if err != nil || h.Size() > len(b) {
				break // a partial batch at the end of the answer
			}
			batch, err := record.Decode(b[:h.Size()])
			if err != nil {
				return nil, fmt.Errorf("harness: %s-%d: batch at %d: %w", topic, partition, h.BaseOffset, err)
			}
			b = b[h.Size():]
			if batch.NextOffset() <= offset {
				continue
			}
			batches = append(batches, batch)
			offset = batch.NextOffset()
		}
		if offset >= pr.HighWatermark {
			return batches, nil
		}
		if len(pr.Records) == 0 {
			return nil, fmt.Errorf("harness: fetch %s-%d at %d: nothing below the high watermark %d", topic, partition, offset, pr.HighWatermark)
		}
	}
}

// logRecords returns the records of a partition, as readLog finds them.
func (tg *target) logRecords(ctx context.Context, topic string, partition int32) ([]rec, error) {
	batches, err := tg.readLog(ctx, topic, partition)
	if err != nil {
		return nil, err
	}
	return recordsOf(partition, batches), nil
}

// recordsOf flattens batches into recs of partition.
func recordsOf(partition int32, batches []record.Batch) []rec {
	var out []rec
	for _, b := range batches {
		for _, r := range b.Records {
			x := rec{Partition: partition, Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value}
			for _, h := range r.Headers {
				x.Headers = append(x.Headers, hdr{Key: h.Key, Value: h.Value})
			}
			out = append(out, x)
		}
	}
	return out
}

// retrying calls fn until it returns no error or one that
// kafka.IsRetriable says will not pass by itself, every pollInterval
// for at most 10 s: after a node is killed, the harness's client learns
// the new leaders as a Kafka client does, by failing and asking again.
func retrying[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		v, err := fn()
		if err == nil || !kafka.IsRetriable(err) {
			return v, err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return v, err
		}
	}
}

// listOffsets asks, with ListOffsets, for each of partitions' offset at
// timestamp (kafka.EarliestTimestamp, LatestTimestamp or a time in ms).
func (tg *target) listOffsets(ctx context.Context, topic string, partitions int32, timestamp int64) (map[int32]int64, error) {
	out := map[int32]int64{}
	for p := range partitions {
		o, err := tg.listOffset(ctx, topic, p, timestamp)
		if err != nil {
			return nil, err
		}
		out[p] = o
	}
	return out, nil
}

// listOffset asks for one partition's offset at timestamp.
func (tg *target) listOffset(ctx context.Context, topic string, partition int32, timestamp int64) (int64, error) {
	return tg.listOffsetAs(ctx, topic, partition, timestamp, kafka.ReadUncommitted)
}

// listOffsetAs asks for one partition's offset at timestamp, as a
// consumer of the given isolation level does: under kafka.ReadCommitted,
// kafka.LatestTimestamp is the last stable offset.
func (tg *target) listOffsetAs(ctx context.Context, topic string, partition int32, timestamp int64, isolation kafka.IsolationLevel) (int64, error) {
	req := &transport.ListOffsetsRequest{ReplicaID: kafka.ConsumerReplicaID, Isolation: isolation, Topics: []transport.ListOffsetsTopic{{Topic: topic,
		Partitions: []transport.ListOffsetsPartition{{Partition: partition, CurrentLeaderEpoch: -1, Timestamp: timestamp}}}}}
	offset, err := retrying(ctx, func() (int64, error) {
		resp, err := tg.client.ListOffsets(ctx, req)
		if err != nil {
			return 0, err
		}
		pr := resp.Topics[0].Partitions[0]
		return pr.Offset, pr.Err
	})
	if err != nil {
		return 0, fmt.Errorf("harness: list offsets of %s-%d: %w", topic, partition, err)
	}
	return offset, nil
}

// committed returns the offsets group has committed for topic's
// partitions (-1 where none).
func (tg *target) committed(ctx context.Context, group, topic string, partitions int32) (map[int32]int64, error) {
	req := &transport.OffsetFetchRequest{Group: group, Topics: []transport.OffsetFetchTopic{{Topic: topic}}}
	for p := range partitions {
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, p)
	}
	resp, err := tg.client.OffsetFetch(ctx, req)
	if err != nil {
		return nil, err
	}
	if resp.Err != nil {
		return nil, resp.Err
	}
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.Err != nil {
				return nil, fmt.Errorf("harness: offset fetch %s %s-%d: %w", group, topic, p.Partition, p.Err)
			}
			out[p.Partition] = p.Offset
		}
	}
	return out, nil
}
