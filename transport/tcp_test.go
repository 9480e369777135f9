package transport

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeNode answers requests with what the test sets, and keeps what came.
type fakeNode struct {
	mu       sync.Mutex
	produces []*ProduceRequest
	fetches  []*FetchRequest
	lists    []*ListOffsetsRequest
	metas    []*MetadataRequest
	// fetchGate, when set, holds every Fetch until it is closed.
	fetchGate chan struct{}
	// fetchArrived, when set, gets a value as each Fetch arrives.
	fetchArrived chan struct{}
}

func (f *fakeNode) Produce(ctx context.Context, req *ProduceRequest) (*ProduceResponse, error) {
	f.mu.Lock()
	f.produces = append(f.produces, req)
	f.mu.Unlock()
	resp := &ProduceResponse{}
	for _, t := range req.Topics {
		tr := ProduceTopicResponse{Topic: t.Topic}
		for _, p := range t.Partitions {
			pr := ProducePartitionResponse{Partition: p.Partition, BaseOffset: int64(len(p.Records)), LogAppendTime: -1, LogStartOffset: 7}
			if t.Topic == "bad" {
				pr.Err = fmt.Errorf("%w: partition %d", kafka.ErrNotLeaderOrFollower, p.Partition)
			}
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

func (f *fakeNode) Fetch(ctx context.Context, req *FetchRequest) (*FetchResponse, error) {
	f.mu.Lock()
	f.fetches = append(f.fetches, req)
	gate, arrived := f.fetchGate, f.fetchArrived
	f.mu.Unlock()
	if arrived != nil {
		arrived <- struct{}{}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	resp := &FetchResponse{}
	for _, t := range req.Topics {
		tr := FetchTopicResponse{Topic: t.Topic}
		for _, p := range t.Partitions {
			tr.Partitions = append(tr.Partitions, FetchPartitionResponse{
				Partition: p.Partition, HighWatermark: 100, LastStableOffset: 90, LogStartOffset: 3,
				Records: []byte(fmt.Sprintf("records of %s-%d from %d", t.Topic, p.Partition, p.FetchOffset)),
			})
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

func (f *fakeNode) ListOffsets(ctx context.Context, req *ListOffsetsRequest) (*ListOffsetsResponse, error) {
	f.mu.Lock()
	f.lists = append(f.lists, req)
	f.mu.Unlock()
	return &ListOffsetsResponse{Topics: []ListOffsetsTopicResponse{{Topic: "t", Partitions: []ListOffsetsPartitionResponse{
		{Partition: 0, Timestamp: 1234, Offset: 42, LeaderEpoch: 3},
		{Partition: 1, Err: kafka.ErrOffsetOutOfRange, Timestamp: -1, Offset: -1, LeaderEpoch: -1},
	}}}}, nil
}

func (f *fakeNode) Metadata(ctx context.Context, req *MetadataRequest) (*MetadataResponse, error) {
	f.mu.Lock()
	f.metas = append(f.metas, req)
	f.mu.Unlock()
	return &MetadataResponse{
		ClusterID: "cluster-1", ControllerID: 1,
		Brokers: []Broker{{NodeID: 1}, {NodeID: 2, Host: "elsewhere", Port: 9093, Rack: "r2"}},
		Topics: []TopicMetadata{
			{Topic: "t", TopicID: [16]byte{1, 2, 3}, Partitions: []PartitionMetadata{
				{Partition: 0, Leader: 1, LeaderEpoch: 5, Replicas: []int32{1, 2}, ISR: []int32{1}},
			}},
			{Topic: "missing", Err: kafka.ErrUnknownTopicOrPartition},
		},
	}, nil
}

// serve starts a server for h on a loopback port and returns its address.
func serve(t *testing.T, h Client, opts ServerOptions) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := NewServer(h, opts)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		require.ErrorIs(t, <-done, ErrServerClosed)
	})
	return s, ln.Addr().String()
}

func dial(t *testing.T, addr string) *TCPClient {
	t.Helper()
	c, err := Dial(context.Background(), addr, DialOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestTCPRoundTrip(t *testing.T) {
	f := &fakeNode{}
	_, addr := serve(t, f, ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()

	presp, err := c.Produce(ctx, &ProduceRequest{Acks: kafka.AcksAll, Timeout: 1500 * time.Millisecond, Topics: []ProduceTopic{
		{Topic: "t", Partitions: []ProducePartition{{Partition: 0, Records: []byte("abc")}, {Partition: 2, Records: []byte("defgh")}}},
		{Topic: "bad", Partitions: []ProducePartition{{Partition: 1, Records: []byte("x")}}},
	}})
	require.NoError(t, err)
	require.Len(t, f.produces, 1)
	got := f.produces[0]
	require.Equal(t, kafka.AcksAll, got.Acks)
	require.Equal(t, 1500*time.Millisecond, got.Timeout)
	require.Equal(t, []byte("defgh"), got.Topics[0].Partitions[1].Records)
	require.Equal(t, int32(2), got.Topics[0].Partitions[1].Partition)
	require.Equal(t, int64(5), presp.Topics[0].Partitions[1].BaseOffset)
	require.Equal(t, int64(7), presp.Topics[0].Partitions[1].LogStartOffset)
	require.NoError(t, presp.Topics[0].Partitions[0].Err)
	perr := presp.Topics[1].Partitions[0].Err
	require.ErrorIs(t, perr, kafka.ErrNotLeaderOrFollower)
	require.True(t, kafka.IsRetriable(perr))
	require.Contains(t, perr.Error(), "partition 1", "the node's message travels with the code")

	fresp, err := c.Fetch(ctx, &FetchRequest{ReplicaID: kafka.ConsumerReplicaID, MaxWait: 250 * time.Millisecond, MinBytes: 1, MaxBytes: 1 << 20,
		Isolation: kafka.ReadCommitted, Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{
			{Partition: 3, CurrentLeaderEpoch: 4, FetchOffset: 17, LastFetchedEpoch: 2, LogStartOffset: -1, MaxBytes: 4096},
		}}}})
	require.NoError(t, err)
	require.Equal(t, &FetchRequest{ReplicaID: kafka.ConsumerReplicaID, MaxWait: 250 * time.Millisecond, MinBytes: 1, MaxBytes: 1 << 20,
		Isolation: kafka.ReadCommitted, Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{
			{Partition: 3, CurrentLeaderEpoch: 4, FetchOffset: 17, LastFetchedEpoch: 2, LogStartOffset: -1, MaxBytes: 4096},
		}}}, FileRecords: true}, f.fetches[0], "a server on a socket asks for records in files")
	fp := fresp.Topics[0].Partitions[0]
	require.Equal(t, FetchPartitionResponse{Partition: 3, HighWatermark: 100, LastStableOffset: 90, LogStartOffset: 3,
		Records: []byte("records of t-3 from 17")}, fp)

	lresp, err := c.ListOffsets(ctx, &ListOffsetsRequest{ReplicaID: kafka.ConsumerReplicaID, Topics: []ListOffsetsTopic{{Topic: "t",
		Partitions: []ListOffsetsPartition{{Partition: 0, CurrentLeaderEpoch: -1, Timestamp: kafka.LatestTimestamp}}}}})
	require.NoError(t, err)
	require.Equal(t, kafka.LatestTimestamp, f.lists[0].Topics[0].Partitions[0].Timestamp)
	require.Equal(t, ListOffsetsPartitionResponse{Partition: 0, Timestamp: 1234, Offset: 42, LeaderEpoch: 3}, lresp.Topics[0].Partitions[0])
	require.ErrorIs(t, lresp.Topics[0].Partitions[1].Err, kafka.ErrOffsetOutOfRange)

	mresp, err := c.Metadata(ctx, &MetadataRequest{})
	require.NoError(t, err)
	require.Nil(t, f.metas[0].Topics, "no topics named asks for all")
	_, err = c.Metadata(ctx, &MetadataRequest{Topics: []string{"t", "missing"}})
	require.NoError(t, err)
	require.Equal(t, []string{"t", "missing"}, f.metas[1].Topics)
	require.Equal(t, "cluster-1", mresp.ClusterID)
	host, port, _ := net.SplitHostPort(addr)
	require.Equal(t, host, mresp.Brokers[0].Host, "a broker without an address gets the listener's")
	require.Equal(t, port, fmt.Sprint(mresp.Brokers[0].Port))
	require.Equal(t, Broker{NodeID: 2, Host: "elsewhere", Port: 9093, Rack: "r2"}, mresp.Brokers[1])
	require.Equal(t, [16]byte{1, 2, 3}, mresp.Topics[0].TopicID)
	require.Equal(t, PartitionMetadata{Partition: 0, Leader: 1, LeaderEpoch: 5, Replicas: []int32{1, 2}, ISR: []int32{1}},
		mresp.Topics[0].Partitions[0])
	require.ErrorIs(t, mresp.Topics[1].Err, kafka.ErrUnknownTopicOrPartition)
}

func TestTCPAdvertised(t *testing.T) {
	_, addr := serve(t, &fakeNode{}, ServerOptions{Advertised: "node1.example:9092"})
	mresp, err := dial(t, addr).Metadata(context.Background(), &MetadataRequest{})
	require.NoError(t, err)
	require.Equal(t, Broker{NodeID: 1, Host: "node1.example", Port: 9092}, mresp.Brokers[0])
}

// TestTCPAcksZero checks that an acks=0 produce gets no answer on the
// wire, and that requests after it on the connection still match theirs.
func TestTCPAcksZero(t *testing.T) {
	f := &fakeNode{}
	_, addr := serve(t, f, ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()
	for i := range 3 {
		resp, err := c.Produce(ctx, &ProduceRequest{Acks: kafka.AcksNone, Topics: []ProduceTopic{{Topic: "t",
			Partitions: []ProducePartition{{Partition: int32(i), Records: []byte("r")}}}}})
		require.NoError(t, err)
		require.Equal(t, int64(-1), resp.Topics[0].Partitions[0].BaseOffset)
	}
	resp, err := c.Produce(ctx, &ProduceRequest{Acks: kafka.AcksLeader, Topics: []ProduceTopic{{Topic: "t",
		Partitions: []ProducePartition{{Partition: 9, Records: []byte("four")}}}}})
	require.NoError(t, err)
	require.Equal(t, int32(9), resp.Topics[0].Partitions[0].Partition)
	require.Equal(t, int64(4), resp.Topics[0].Partitions[0].BaseOffset)
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Len(t, f.produces, 4)
	for i := range 3 {
		require.Equal(t, int32(i), f.produces[i].Topics[0].Partitions[0].Partition, "handled in the order sent")
	}
}

// TestTCPPipelining sends many requests from many goroutines at once:
// each gets its own answer.
func TestTCPPipelining(t *testing.T) {
	_, addr := serve(t, &fakeNode{}, ServerOptions{})
	c := dial(t, addr)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Go(func() {
			for i := range 50 {
				n := g*1000 + i
				resp, err := c.Produce(context.Background(), &ProduceRequest{Acks: kafka.AcksLeader, Topics: []ProduceTopic{{Topic: "t",
					Partitions: []ProducePartition{{Partition: int32(n), Records: make([]byte, n%97)}}}}})
				if err != nil {
					errs <- err
					return
				}
				p := resp.Topics[0].Partitions[0]
				if p.Partition != int32(n) || p.BaseOffset != int64(n%97) {
					errs <- fmt.Errorf("request %d got the answer of partition %d, offset %d", n, p.Partition, p.BaseOffset)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestTCPFetchDoesNotHoldUpProduce checks that a long-polling fetch,
// which the node answers late, does not delay a produce.
func TestTCPFetchDoesNotHoldUpProduce(t *testing.T) {
	gate := make(chan struct{})
	f := &fakeNode{fetchGate: gate}
	_, addr := serve(t, f, ServerOptions{})
	c := dial(t, addr)
	fetched := make(chan error, 1)
	go func() {
		_, err := c.Fetch(context.Background(), &FetchRequest{MaxWait: time.Minute, Topics: []FetchTopic{{Topic: "t",
			Partitions: []FetchPartition{{Partition: 0}}}}})
		fetched <- err
	}()
	_, err := c.Produce(context.Background(), &ProduceRequest{Acks: kafka.AcksLeader, Topics: []ProduceTopic{{Topic: "t",
		Partitions: []ProducePartition{{Partition: 0, Records: []byte("r")}}}}})
	require.NoError(t, err)
	_, err = c.Metadata(context.Background(), &MetadataRequest{})
	require.NoError(t, err)
	select {
	case err := <-fetched:
		t.Fatalf("fetch answered before the node let it: %v", err)
	default:
	}
	close(gate)
	require.NoError(t, <-fetched)
}

// TestTCPContextEnds checks that a request whose context ends returns at
// once, and that the connection goes on with the next request.
func TestTCPContextEnds(t *testing.T) {
	gate, arrived := make(chan struct{}), make(chan struct{}, 2)
	f := &fakeNode{fetchGate: gate, fetchArrived: arrived}
	_, addr := serve(t, f, ServerOptions{})
	c := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Fetch(ctx, &FetchRequest{Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{{Partition: 0}}}}})
		errc <- err
	}()
	<-arrived
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	close(gate)
	resp, err := c.Fetch(context.Background(), &FetchRequest{Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{{Partition: 0, FetchOffset: 5}}}}})
	require.NoError(t, err)
	require.Equal(t, []byte("records of t-0 from 5"), resp.Topics[0].Partitions[0].Records, "the late answer to the cancelled fetch was dropped")
}

// TestTCPReconnect checks that a client whose server went away fails its
// requests with a retriable kafka.ErrNetwork, and reconnects when a server is
// back on the address.
func TestTCPReconnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	s := NewServer(&fakeNode{}, ServerOptions{})
	go s.Serve(ln)
	c, err := Dial(context.Background(), addr, DialOptions{ReconnectBackoff: time.Millisecond})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	_, err = c.Metadata(ctx, &MetadataRequest{})
	require.NoError(t, err)

	require.NoError(t, s.Close())
	for {
		// The first request after the close may still be written into the
		// dying connection; it fails, and so do the dials after it.
		_, err = c.Metadata(ctx, &MetadataRequest{})
		if err != nil {
			break
		}
	}
	require.ErrorIs(t, err, kafka.ErrNetwork)
	require.True(t, kafka.IsRetriable(err))

	ln2, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	s2 := NewServer(&fakeNode{}, ServerOptions{})
	go s2.Serve(ln2)
	defer s2.Close()
	require.Eventually(t, func() bool {
		_, err := c.Metadata(ctx, &MetadataRequest{})
		return err == nil
	}, 10*time.Second, time.Millisecond)
}

func TestTCPClientClose(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	arrived := make(chan struct{}, 1)
	_, addr := serve(t, &fakeNode{fetchGate: gate, fetchArrived: arrived}, ServerOptions{})
	c := dial(t, addr)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Fetch(context.Background(), &FetchRequest{Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{{Partition: 0}}}}})
		errc <- err
	}()
	<-arrived // the fetch is in flight on the server
	require.NoError(t, c.Close())
	require.ErrorIs(t, <-errc, kafka.ErrClosed)
	_, err := c.Metadata(context.Background(), &MetadataRequest{})
	require.ErrorIs(t, err, kafka.ErrClosed)
}

// rawConn connects to addr and returns the connection with a reader.
func rawConn(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return nc, bufio.NewReader(nc)
}

// TestTCPBadRequests checks that the server closes a connection whose
// request it cannot take — oversized, garbage, an unsupported version —
// without answering, and keeps serving others.
func TestTCPBadRequests(t *testing.T) {
	_, addr := serve(t, &fakeNode{}, ServerOptions{MaxRequestBytes: 1 << 10})
	f := kmsg.NewRequestFormatter()
	oldProduce := kmsg.NewPtrProduceRequest()
	oldProduce.Version = 2 // message sets, not record batches
	for name, frame := range map[string][]byte{
		"oversized":           binary.BigEndian.AppendUint32(nil, 1<<20),
		"negative size":       binary.BigEndian.AppendUint32(nil, 1<<31),
		"short header":        append(binary.BigEndian.AppendUint32(nil, 3), 0, 0, 0),
		"unknown api":         f.AppendRequest(nil, &unknownRequest{}, 1),
		"unsupported version": f.AppendRequest(nil, oldProduce, 1),
		"truncated body": func() []byte {
			b := f.AppendRequest(nil, kmsg.NewPtrMetadataRequest(), 1)
			b = append(b, 0xff, 0xff, 0xff) // an array count that runs past the end
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			return b
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			nc, r := rawConn(t, addr)
			_, err := nc.Write(frame)
			require.NoError(t, err)
			_, err = r.ReadByte()
			require.ErrorIs(t, err, io.EOF, "the server closes the connection without an answer")
		})
	}
	_, err := dial(t, addr).Metadata(context.Background(), &MetadataRequest{})
	require.NoError(t, err)
}

// unknownRequest is a request with an api key no one knows.
type unknownRequest struct{ kmsg.MetadataRequest }

func (*unknownRequest) Key() int16 { return 9999 }

// TestTCPApiVersions checks the server's ApiVersions answers: its ranges,
// and UNSUPPORTED_VERSION in a v0 answer to a version it does not know,
// listing only ApiVersions' own range.
func TestTCPApiVersions(t *testing.T) {
	_, addr := serve(t, &fakeNode{}, ServerOptions{})
	nc, r := rawConn(t, addr)
	f := kmsg.NewRequestFormatter()
	for _, tc := range []struct {
		version, answered, code int16
	}{{3, 3, 0}, {0, 0, 0}, {9, 0, 35}} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = tc.version
		_, err := nc.Write(f.AppendRequest(nil, req, int32(tc.version)))
		require.NoError(t, err)
		frame, err := readFrame(r, nil, 1<<20)
		require.NoError(t, err)
		require.Equal(t, int32(tc.version), int32(binary.BigEndian.Uint32(frame)))
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = tc.answered
		require.NoError(t, resp.ReadFrom(frame[4:]))
		require.Equal(t, tc.code, resp.ErrorCode)
		got := map[int16][2]int16{}
		for _, k := range resp.ApiKeys {
			got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		if tc.code != 0 {
			require.Equal(t, map[int16][2]int16{18: {0, 3}}, got, "KIP-511: the versions of ApiVersions to ask again in, alone")
			continue
		}
		require.Equal(t, map[int16][2]int16{0: {0, 12}, 1: {4, 12}, 2: {1, 7}, 3: {1, 12}, 18: {0, 3}, 60: {0, 1}}, got,
			"a plain Client answers the data calls, and DescribeCluster from its Metadata; Produce from v0, as Kafka 4 lists it for librdkafka (v0-2 are refused)")
		require.Empty(t, resp.SupportedFeatures, "a Client that reports no features")
		require.Empty(t, resp.FinalizedFeatures)
		require.EqualValues(t, -1, resp.FinalizedFeaturesEpoch)
	}
}

// featuredNode is a fakeNode with features.
type featuredNode struct {
	fakeNode
	features []Feature
}

func (n *featuredNode) Features() []Feature { return n.features }

// TestTCPApiVersionsFeatures: ApiVersions v3 reports a FeatureReporter's
// features, supported and finalized, and leaves a feature at level 0 out
// of the finalized ones; kgo reads transaction.version from there.
func TestTCPApiVersionsFeatures(t *testing.T) {
	for _, finalized := range []int16{2, 0} {
		node := &featuredNode{features: []Feature{{Name: FeatureTransactionVersion, MinLevel: 0, MaxLevel: 2, Finalized: finalized}}}
		_, addr := serve(t, node, ServerOptions{})
		nc, r := rawConn(t, addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		_, err := nc.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1))
		require.NoError(t, err)
		frame, err := readFrame(r, nil, 1<<20)
		require.NoError(t, err)
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 3
		require.NoError(t, resp.ReadFrom(frame[4:]))
		require.Len(t, resp.SupportedFeatures, 1)
		sf := resp.SupportedFeatures[0]
		require.Equal(t, []any{"transaction.version", int16(0), int16(2)}, []any{sf.Name, sf.MinVersion, sf.MaxVersion})
		if finalized == 0 {
			require.Empty(t, resp.FinalizedFeatures, "level 0 is not finalized")
			require.EqualValues(t, -1, resp.FinalizedFeaturesEpoch)
			continue
		}
		require.Len(t, resp.FinalizedFeatures, 1)
		ff := resp.FinalizedFeatures[0]
		require.Equal(t, []any{"transaction.version", int16(2), int16(2)}, []any{ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel})
		require.GreaterOrEqual(t, resp.FinalizedFeaturesEpoch, int64(0), "Kafka's clients ignore finalized features at epoch -1")
	}
}

func TestTCPDialFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	_, err = Dial(context.Background(), addr, DialOptions{})
	require.ErrorIs(t, err, kafka.ErrNetwork)
	require.True(t, errors.Is(err, kafka.ErrNetwork) && kafka.IsRetriable(err))
}
