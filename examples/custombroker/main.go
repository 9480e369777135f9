// Custombroker assembles a Kafka broker of its own from partlog's packages —
// log for the partition directories, partition for each partition's high
// watermark and idempotent producers, transport for Kafka's wire protocol —
// with no partlog.Node: the broker decides itself which topics exist (one,
// "events", with a fixed number of partitions, created on first use) and
// answers Metadata, Produce, Fetch and ListOffsets. It serves on loopback,
// and a Kafka client (franz-go's kgo, idempotent, acks=all) produces keyed
// records to it and reads them back; the program exits non-zero unless
// every record comes back once, exactly, at the offset its produce was
// acknowledged with.
//
//	go run ./examples/custombroker [-dir DIR] [-records N] [-serve ADDR]
//
// With -serve the broker stays up on ADDR for any Kafka client, until
// interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/transport"
)

// topic is the one topic the broker has, and partitions its partition count.
const (
	topic      = "events"
	partitions = 3
	nodeID     = 1
)

func main() {
	dir := flag.String("dir", "", "data directory (a new temporary one by default)")
	records := flag.Int("records", 3000, "records the self-check produces and reads back")
	serve := flag.String("serve", "", "serve on this host:port until interrupted, instead of the self-check")
	flag.Parse()
	if err := run(*dir, *records, *serve); err != nil {
		fmt.Fprintln(os.Stderr, "custombroker:", err)
		os.Exit(1)
	}
}

func run(dir string, records int, serve string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "custombroker")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	b, err := openBroker(dir)
	if err != nil {
		return err
	}
	defer b.Close()
	addr := serve
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := transport.NewServer(b, transport.ServerOptions{})
	go srv.Serve(ln)
	defer srv.Close()
	if serve != "" {
		fmt.Printf("serving topic %q (%d partitions) from %s on %s\n", topic, partitions, dir, ln.Addr())
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		<-ctx.Done()
		return nil
	}
	if err := selfCheck(ln.Addr().String(), records); err != nil {
		return err
	}
	// kgo is idempotent by default: every partition keeps its one producer.
	for _, p := range b.parts {
		states, err := p.ProducerStates()
		if err != nil {
			return err
		}
		if len(states) != 1 {
			return fmt.Errorf("%s-%d keeps state for %d producers, want kgo's one", topic, p.ID(), len(states))
		}
	}
	return nil
}

// broker is the whole broker: a directory of partition logs and the
// partitions of its one topic. It implements transport.Client, which is
// what transport.Server needs of a broker, and transport.ProducerIDClient,
// which idempotent producers need.
type broker struct {
	dir   *log.Dir
	parts [partitions]*partition.Partition
	// nextProducerID is the next producer id to hand out. It starts from
	// the clock at open (ms << 16), so that a restarted broker does not
	// hand out an id it gave before; a broker of several nodes would
	// allocate blocks from its controller, as partlog's nodes do.
	nextProducerID atomic.Int64
}

// openBroker opens (creating as needed) the directory and the topic's
// partitions: every record is synced before it is acknowledged.
func openBroker(dir string) (*broker, error) {
	d, err := log.OpenDir(dir, log.DirOptions{})
	if err != nil {
		return nil, err
	}
	b := &broker{dir: d}
	b.nextProducerID.Store(time.Now().UnixMilli() << 16)
	for i := range partitions {
		l, err := d.Open(kafka.TopicPartition{Topic: topic, Partition: int32(i)}, log.Options{SyncBeforeAck: true})
		if err != nil {
			b.Close()
			return nil, err
		}
		b.parts[i] = partition.New(topic, int32(i), nodeID, 0, l, partition.Options{DurableHighWatermark: true})
	}
	return b, nil
}

// Close closes the partitions and the directory, which checkpoints them.
func (b *broker) Close() error {
	for _, p := range b.parts {
		if p != nil {
			p.Close()
		}
	}
	return b.dir.Close()
}

// part returns a partition of the topic, or UNKNOWN_TOPIC_OR_PARTITION.
func (b *broker) part(name string, id int32) (*partition.Partition, error) {
	if name != topic || id < 0 || id >= partitions {
		return nil, fmt.Errorf("%w: %s-%d", kafka.ErrUnknownTopicOrPartition, name, id)
	}
	return b.parts[id], nil
}

// Metadata names this broker, the leader of every partition of the topic.
// The server fills in the broker's address.
func (b *broker) Metadata(ctx context.Context, req *transport.MetadataRequest) (*transport.MetadataResponse, error) {
	resp := &transport.MetadataResponse{ClusterID: "custombroker", ControllerID: nodeID, Brokers: []transport.Broker{{NodeID: nodeID}}}
	names := req.Topics
	if names == nil {
		names = []string{topic}
	}
	for _, name := range names {
		tm := transport.TopicMetadata{Topic: name}
		if name != topic {
			tm.Err = fmt.Errorf("%w: %q", kafka.ErrUnknownTopicOrPartition, name)
		}
		for i := range partitions {
			if name == topic {
				tm.Partitions = append(tm.Partitions, transport.PartitionMetadata{Partition: int32(i), Leader: nodeID,
					LeaderEpoch: 0, Replicas: []int32{nodeID}, ISR: []int32{nodeID}})
			}
		}
		resp.Topics = append(resp.Topics, tm)
	}
	return resp, nil
}

// Produce appends each batch to its partition. The partition borrows the
// request's bytes until Append returns (it stamps offsets in place).
func (b *broker) Produce(ctx context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	resp := &transport.ProduceResponse{}
	for _, t := range req.Topics {
		tr := transport.ProduceTopicResponse{Topic: t.Topic}
		for _, rp := range t.Partitions {
			pr := transport.ProducePartitionResponse{Partition: rp.Partition, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
			p, err := b.part(t.Topic, rp.Partition)
			if err == nil {
				var res partition.AppendResult
				res, err = p.Append(rp.Records, req.Acks)
				pr.BaseOffset, pr.LogAppendTime, pr.LogStartOffset = res.FirstOffset, res.LogAppendTime, p.LogStartOffset()
			}
			pr.Err = err
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

// Fetch reads each partition from its fetch offset, below the high
// watermark; when nothing is there it waits, up to the request's MaxWait,
// for a partition to be written (a long poll on the partitions' notices).
func (b *broker) Fetch(ctx context.Context, req *transport.FetchRequest) (*transport.FetchResponse, error) {
	wake := make(chan struct{}, 1)
	for _, p := range b.parts {
		p.Notify(wake)
		defer p.Stop(wake)
	}
	deadline := time.NewTimer(req.MaxWait)
	defer deadline.Stop()
	for {
		resp, n := b.read(req)
		if n > 0 || req.MaxWait <= 0 {
			return resp, nil
		}
		select {
		case <-wake:
		case <-deadline.C:
			return resp, nil
		case <-ctx.Done():
			return resp, nil
		}
	}
}

// read answers a fetch from what the partitions hold now, and says how
// many bytes of records it found.
func (b *broker) read(req *transport.FetchRequest) (*transport.FetchResponse, int) {
	resp := &transport.FetchResponse{}
	total := 0
	for _, t := range req.Topics {
		tr := transport.FetchTopicResponse{Topic: t.Topic}
		for _, fp := range t.Partitions {
			pr := transport.FetchPartitionResponse{Partition: fp.Partition, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
			p, err := b.part(t.Topic, fp.Partition)
			if err == nil {
				var res partition.FetchResult
				// Records are fresh bytes, the response's to keep.
				res, err = p.Fetch(nil, fp.FetchOffset, int(fp.MaxBytes))
				pr.Records, pr.HighWatermark, pr.LastStableOffset, pr.LogStartOffset = res.Records, res.HighWatermark, res.HighWatermark, res.LogStartOffset
				total += len(res.Records)
			}
			pr.Err = err
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, total
}

// InitProducerID gives an idempotent producer an id of its own, in epoch 0.
// Transactions are not this broker's business.
func (b *broker) InitProducerID(ctx context.Context, req *transport.InitProducerIDRequest) (*transport.InitProducerIDResponse, error) {
	if req.TransactionalID != "" {
		return &transport.InitProducerIDResponse{Err: fmt.Errorf("%w: no transactions here", kafka.ErrInvalidRequest), ProducerID: -1, ProducerEpoch: -1}, nil
	}
	return &transport.InitProducerIDResponse{ProducerID: b.nextProducerID.Add(1), ProducerEpoch: 0}, nil
}

// ListOffsets answers the earliest, the latest or a time's offset.
func (b *broker) ListOffsets(ctx context.Context, req *transport.ListOffsetsRequest) (*transport.ListOffsetsResponse, error) {
	resp := &transport.ListOffsetsResponse{}
	for _, t := range req.Topics {
		tr := transport.ListOffsetsTopicResponse{Topic: t.Topic}
		for _, lp := range t.Partitions {
			pr := transport.ListOffsetsPartitionResponse{Partition: lp.Partition, Timestamp: -1, Offset: -1, LeaderEpoch: -1}
			p, err := b.part(t.Topic, lp.Partition)
			if err == nil {
				pr.Offset, pr.Timestamp, err = p.ListOffset(lp.Timestamp)
				pr.LeaderEpoch = p.LeaderEpoch()
			}
			pr.Err = err
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

// selfCheck produces n keyed records to the broker at addr with kgo,
// idempotent and acks=all, and reads them all back with another kgo
// client: each must come back once, with its key and value, at the offset
// its produce was acknowledged with.
func selfCheck(addr string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pcl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return err
	}
	defer pcl.Close()
	type at struct {
		partition int32
		offset    int64
	}
	var mu sync.Mutex
	acked := map[at]string{}
	var failed error
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		r := &kgo.Record{Key: fmt.Appendf(nil, "key-%d", i%50), Value: fmt.Appendf(nil, "record %d", i)}
		pcl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = errors.Join(failed, err)
				return
			}
			acked[at{r.Partition, r.Offset}] = string(r.Key) + "=" + string(r.Value)
		})
	}
	wg.Wait()
	if failed != nil {
		return fmt.Errorf("produce: %w", failed)
	}

	ccl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer ccl.Close()
	got := map[at]string{}
	for len(got) < n {
		fs := ccl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read back %d of %d records: %w", len(got), n, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return fmt.Errorf("fetch: %w", errs[0].Err)
		}
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			k := at{r.Partition, r.Offset}
			if _, dup := got[k]; dup {
				bad = fmt.Errorf("%s-%d offset %d read twice", topic, r.Partition, r.Offset)
			}
			got[k] = string(r.Key) + "=" + string(r.Value)
			if want, ok := acked[k]; !ok || want != got[k] {
				bad = fmt.Errorf("%s-%d offset %d holds %q; acknowledged there: %q", topic, r.Partition, r.Offset, got[k], want)
			}
		})
		if bad != nil {
			return bad
		}
	}
	perPartition := map[int32]int{}
	for k := range got {
		perPartition[k.partition]++
	}
	fmt.Printf("custombroker: %d records produced by kgo (idempotent, acks=all) and read back exactly, at their acknowledged offsets; per partition: %v\n", n, perPartition)
	return nil
}
