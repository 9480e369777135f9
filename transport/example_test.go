package transport_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// A Server speaks Kafka's protocol on TCP for any transport.Client — here
// a handler over one partition — and a TCPClient sends it requests as a
// producer or consumer in another process would.
func ExampleServer() {
	l, err := log.Open("/data/greetings-0", log.Options{FS: vfs.NewMem()})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	p := partition.New("greetings", 0, 1, 0, l, partition.Options{})
	defer p.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := transport.NewServer(onePartition{p}, transport.ServerOptions{})
	go srv.Serve(ln)
	defer srv.Close() // closes the listener and waits for its connections

	// Every call is bounded: the example cannot hang.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, ln.Addr().String(), transport.DialOptions{DialTimeout: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	for _, values := range [][]string{{"hello", "world"}, {"again"}} {
		b := record.NewBuilder(record.DefaultBatchOptions())
		for _, v := range values {
			b.Append(record.Record{Timestamp: 1_700_000_000_000, Value: []byte(v)})
		}
		resp, err := c.Produce(ctx, &transport.ProduceRequest{Acks: kafka.AcksAll, Timeout: 5 * time.Second,
			Topics: []transport.ProduceTopic{{Topic: "greetings", Partitions: []transport.ProducePartition{{Partition: 0, Records: b.Build()}}}}})
		if err != nil {
			panic(err)
		}
		pr := resp.Topics[0].Partitions[0]
		fmt.Println("produced at base offset", pr.BaseOffset, "err", pr.Err)
	}

	resp, err := c.Fetch(ctx, &transport.FetchRequest{ReplicaID: kafka.ConsumerReplicaID, MaxBytes: 1 << 20,
		Topics: []transport.FetchTopic{{Topic: "greetings", Partitions: []transport.FetchPartition{
			{Partition: 0, CurrentLeaderEpoch: -1, FetchOffset: 0, LastFetchedEpoch: -1, LogStartOffset: -1, MaxBytes: 1 << 20}}}}})
	if err != nil {
		panic(err)
	}
	fp := resp.Topics[0].Partitions[0]
	fmt.Println("high watermark", fp.HighWatermark, "err", fp.Err)
	for rest := fp.Records; len(rest) > 0; { // whole batches, one after another
		h, err := record.ParseHeader(rest)
		if err != nil {
			panic(err)
		}
		batch, err := record.Decode(rest[:h.Size()])
		if err != nil {
			panic(err)
		}
		rest = rest[h.Size():]
		for _, r := range batch.Records {
			fmt.Printf("fetched offset %d: %s\n", r.Offset, r.Value)
		}
	}

	lo, err := c.ListOffsets(ctx, &transport.ListOffsetsRequest{ReplicaID: kafka.ConsumerReplicaID,
		Topics: []transport.ListOffsetsTopic{{Topic: "greetings", Partitions: []transport.ListOffsetsPartition{
			{Partition: 0, CurrentLeaderEpoch: -1, Timestamp: kafka.LatestTimestamp}}}}})
	if err != nil {
		panic(err)
	}
	fmt.Println("latest offset", lo.Topics[0].Partitions[0].Offset)
	// Output:
	// produced at base offset 0 err <nil>
	// produced at base offset 2 err <nil>
	// high watermark 3 err <nil>
	// fetched offset 0: hello
	// fetched offset 1: world
	// fetched offset 2: again
	// latest offset 3
}

// onePartition is a transport.Client over partition 0 of the topic
// "greetings": the least a Server needs to answer Kafka's Metadata,
// Produce, Fetch and ListOffsets.
type onePartition struct{ p *partition.Partition }

// find returns the partition a request names, or Kafka's
// UNKNOWN_TOPIC_OR_PARTITION.
func (h onePartition) find(topic string, id int32) (*partition.Partition, error) {
	if topic != "greetings" || id != 0 {
		return nil, fmt.Errorf("%w: %s-%d", kafka.ErrUnknownTopicOrPartition, topic, id)
	}
	return h.p, nil
}

// Metadata names node 1, the leader of the one partition, whatever the
// request asks; the Server fills in the node's address.
func (h onePartition) Metadata(ctx context.Context, req *transport.MetadataRequest) (*transport.MetadataResponse, error) {
	return &transport.MetadataResponse{ClusterID: "example", ControllerID: 1, Brokers: []transport.Broker{{NodeID: 1}},
		Topics: []transport.TopicMetadata{{Topic: "greetings", Partitions: []transport.PartitionMetadata{
			{Partition: 0, Leader: 1, LeaderEpoch: h.p.LeaderEpoch(), Replicas: []int32{1}, ISR: h.p.ISR()}}}}}, nil
}

// Produce appends each batch; the partition borrows the request's bytes
// until Append returns.
func (h onePartition) Produce(ctx context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	resp := &transport.ProduceResponse{}
	for _, t := range req.Topics {
		tr := transport.ProduceTopicResponse{Topic: t.Topic}
		for _, rp := range t.Partitions {
			pr := transport.ProducePartitionResponse{Partition: rp.Partition, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
			p, err := h.find(t.Topic, rp.Partition)
			if err == nil {
				var res partition.AppendResult
				if res, err = p.Append(rp.Records, req.Acks); err == nil {
					pr.BaseOffset, pr.LogAppendTime, pr.LogStartOffset = res.FirstOffset, res.LogAppendTime, res.LogStartOffset
				}
			}
			pr.Err = err
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

// Fetch reads each partition at once, without waiting for MinBytes: the
// records are read into new memory, which the answer owns.
func (h onePartition) Fetch(ctx context.Context, req *transport.FetchRequest) (*transport.FetchResponse, error) {
	resp := &transport.FetchResponse{}
	for _, t := range req.Topics {
		tr := transport.FetchTopicResponse{Topic: t.Topic}
		for _, fp := range t.Partitions {
			pr := transport.FetchPartitionResponse{Partition: fp.Partition, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
			p, err := h.find(t.Topic, fp.Partition)
			if err == nil {
				var res partition.FetchResult
				res, err = p.Fetch(nil, fp.FetchOffset, int(fp.MaxBytes))
				pr.HighWatermark, pr.LastStableOffset, pr.LogStartOffset = res.HighWatermark, res.HighWatermark, res.LogStartOffset
				pr.Records = res.Records
			}
			pr.Err = err
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

// ListOffsets looks each timestamp up in its partition.
func (h onePartition) ListOffsets(ctx context.Context, req *transport.ListOffsetsRequest) (*transport.ListOffsetsResponse, error) {
	resp := &transport.ListOffsetsResponse{}
	for _, t := range req.Topics {
		tr := transport.ListOffsetsTopicResponse{Topic: t.Topic}
		for _, lp := range t.Partitions {
			pr := transport.ListOffsetsPartitionResponse{Partition: lp.Partition, Timestamp: -1, Offset: -1, LeaderEpoch: -1}
			p, err := h.find(t.Topic, lp.Partition)
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
