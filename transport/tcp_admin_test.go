package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeAdminNode is a fakeNode that is also an AdminClient and an
// EpochClient: it keeps the last request of each call and answers with the
// response set for it.
type fakeAdminNode struct {
	fakeNode
	amu   sync.Mutex
	got   map[string]any
	answr map[string]any
}

func (f *fakeAdminNode) take(name string, req any) any {
	f.amu.Lock()
	defer f.amu.Unlock()
	f.got[name] = req
	return f.answr[name]
}

func (f *fakeAdminNode) CreateTopics(ctx context.Context, req *CreateTopicsRequest) (*CreateTopicsResponse, error) {
	return f.take("CreateTopics", req).(*CreateTopicsResponse), nil
}

func (f *fakeAdminNode) DeleteTopics(ctx context.Context, req *DeleteTopicsRequest) (*DeleteTopicsResponse, error) {
	return f.take("DeleteTopics", req).(*DeleteTopicsResponse), nil
}

func (f *fakeAdminNode) CreatePartitions(ctx context.Context, req *CreatePartitionsRequest) (*CreatePartitionsResponse, error) {
	return f.take("CreatePartitions", req).(*CreatePartitionsResponse), nil
}

func (f *fakeAdminNode) DescribeConfigs(ctx context.Context, req *DescribeConfigsRequest) (*DescribeConfigsResponse, error) {
	return f.take("DescribeConfigs", req).(*DescribeConfigsResponse), nil
}

func (f *fakeAdminNode) AlterConfigs(ctx context.Context, req *AlterConfigsRequest) (*AlterConfigsResponse, error) {
	return f.take("AlterConfigs", req).(*AlterConfigsResponse), nil
}

func (f *fakeAdminNode) DeleteRecords(ctx context.Context, req *DeleteRecordsRequest) (*DeleteRecordsResponse, error) {
	return f.take("DeleteRecords", req).(*DeleteRecordsResponse), nil
}

func (f *fakeAdminNode) DescribeLogDirs(ctx context.Context, req *DescribeLogDirsRequest) (*DescribeLogDirsResponse, error) {
	return f.take("DescribeLogDirs", req).(*DescribeLogDirsResponse), nil
}

func (f *fakeAdminNode) ElectLeaders(ctx context.Context, req *ElectLeadersRequest) (*ElectLeadersResponse, error) {
	return f.take("ElectLeaders", req).(*ElectLeadersResponse), nil
}

func (f *fakeAdminNode) DescribeProducers(ctx context.Context, req *DescribeProducersRequest) (*DescribeProducersResponse, error) {
	return f.take("DescribeProducers", req).(*DescribeProducersResponse), nil
}

func (f *fakeAdminNode) OffsetsForLeaderEpoch(ctx context.Context, req *kafka.OffsetsForLeaderEpochRequest) (*kafka.OffsetsForLeaderEpochResponse, error) {
	return f.take("OffsetsForLeaderEpoch", req).(*kafka.OffsetsForLeaderEpochResponse), nil
}

// TestTCPAdminRoundTrip sends each admin call through a TCPClient, Kafka's
// wire encoding and the Server to a handler: the handler gets the request
// the client was given, and the client the answer the handler gave.
func TestTCPAdminRoundTrip(t *testing.T) {
	f := &fakeAdminNode{got: map[string]any{}, answr: map[string]any{}}
	_, addr := serve(t, f, ServerOptions{})
	c := dial(t, addr)
	ctx := context.Background()
	tp := func(topic string, p int32) kafka.TopicPartition {
		return kafka.TopicPartition{Topic: topic, Partition: p}
	}
	orders := ConfigResource{Type: ConfigTopic, Name: "orders"}

	for _, tc := range []struct {
		name      string
		req, resp any
		call      func() (any, error)
	}{
		{"CreatePartitions",
			&CreatePartitionsRequest{Topics: []PartitionCount{{"orders", 6}, {"audit", 2}}, Timeout: 3 * time.Second, ValidateOnly: true},
			&CreatePartitionsResponse{Topics: []TopicResult{{Name: "orders"}, {Name: "audit", Err: kafka.ErrInvalidPartitions}}}, nil},
		{"AlterConfigs", // incremental
			&AlterConfigsRequest{Resources: []ConfigAlteration{{ConfigResource: orders, Changes: []ConfigChange{
				{Name: "retention.ms", Op: ConfigSet, Value: "1000"}, {Name: "segment.ms", Op: ConfigDelete},
				{Name: "cleanup.policy", Op: ConfigAppend, Value: "compact"}}}}},
			&AlterConfigsResponse{Resources: []ConfigResult{{ConfigResource: orders, Err: kafka.ErrInvalidConfig}}}, nil},
		{"AlterConfigs", // Kafka's older call: the whole set
			&AlterConfigsRequest{ValidateOnly: true, Resources: []ConfigAlteration{{ConfigResource: orders, Replace: true,
				Changes: []ConfigChange{{Name: "retention.ms", Op: ConfigSet, Value: "1000"}}}}},
			&AlterConfigsResponse{Resources: []ConfigResult{{ConfigResource: orders}}}, nil},
		{"DescribeConfigs",
			&DescribeConfigsRequest{Resources: []ConfigResource{orders, {Type: ConfigBroker, Name: "1"}}},
			&DescribeConfigsResponse{Resources: []ResourceConfigs{
				{ConfigResource: orders, Configs: []ConfigEntry{{Name: "retention.ms", Value: "1000"}, {Name: "segment.ms", Value: "604800000", IsDefault: true}}},
				{ConfigResource: ConfigResource{Type: ConfigBroker, Name: "1"}, Configs: []ConfigEntry{{Name: "log.dirs", Value: "/d", ReadOnly: true}}}}}, nil},
		{"DeleteRecords",
			&DeleteRecordsRequest{Timeout: time.Second, Partitions: []DeleteRecordsPartition{{tp("orders", 0), 4}, {tp("audit", 1), -1}, {tp("orders", 2), 7}}},
			&DeleteRecordsResponse{Partitions: []DeleteRecordsResult{{TopicPartition: tp("orders", 0), LowWatermark: 4},
				{TopicPartition: tp("orders", 2), LowWatermark: -1, Err: kafka.ErrOffsetOutOfRange}, {TopicPartition: tp("audit", 1), LowWatermark: 9}}}, nil},
		{"DescribeLogDirs",
			&DescribeLogDirsRequest{Partitions: []kafka.TopicPartition{tp("orders", 0), tp("orders", 1)}},
			&DescribeLogDirsResponse{Dirs: []LogDir{{Path: "/d", TotalBytes: 100, UsableBytes: 50,
				Partitions: []LogDirPartition{{TopicPartition: tp("orders", 0), Size: 42, OffsetLag: 1}}}}}, nil},
		{"DescribeLogDirs", // nil: every partition
			&DescribeLogDirsRequest{}, &DescribeLogDirsResponse{Dirs: []LogDir{{Path: "/d", Err: kafka.ErrKafkaStorage, TotalBytes: -1, UsableBytes: -1}}}, nil},
		{"ElectLeaders",
			&ElectLeadersRequest{Type: PreferredElection, Partitions: []kafka.TopicPartition{tp("orders", 0)}, Timeout: time.Second},
			&ElectLeadersResponse{Partitions: []ElectionResult{{tp("orders", 0), kafka.ErrElectionNotNeeded}}}, nil},
		{"DescribeProducers",
			&DescribeProducersRequest{Partitions: []kafka.TopicPartition{tp("orders", 0)}},
			&DescribeProducersResponse{Partitions: []PartitionProducers{{TopicPartition: tp("orders", 0), Producers: []ProducerState{
				{ProducerID: 7, ProducerEpoch: 1, LastSequence: 9, LastTimestamp: 1700, CurrentTxnStartOffset: -1}}}}}, nil},
		{"OffsetsForLeaderEpoch",
			&kafka.OffsetsForLeaderEpochRequest{ReplicaID: kafka.ConsumerReplicaID, Partitions: []kafka.OffsetForLeaderEpochPartition{{Topic: "orders", Partition: 0, CurrentLeaderEpoch: 3, LeaderEpoch: 2}}},
			&kafka.OffsetsForLeaderEpochResponse{Partitions: []kafka.OffsetForLeaderEpochPartitionResponse{{Topic: "orders", Partition: 0, EpochEndOffset: kafka.EpochEndOffset{LeaderEpoch: 2, EndOffset: 40}}}}, nil},
	} {
		f.answr[tc.name] = tc.resp
		var got any
		var err error
		switch req := tc.req.(type) {
		case *CreatePartitionsRequest:
			got, err = c.CreatePartitions(ctx, req)
		case *AlterConfigsRequest:
			got, err = c.AlterConfigs(ctx, req)
		case *DescribeConfigsRequest:
			got, err = c.DescribeConfigs(ctx, req)
		case *DeleteRecordsRequest:
			got, err = c.DeleteRecords(ctx, req)
		case *DescribeLogDirsRequest:
			got, err = c.DescribeLogDirs(ctx, req)
		case *ElectLeadersRequest:
			got, err = c.ElectLeaders(ctx, req)
		case *DescribeProducersRequest:
			got, err = c.DescribeProducers(ctx, req)
		case *kafka.OffsetsForLeaderEpochRequest:
			got, err = c.OffsetsForLeaderEpoch(ctx, req)
		}
		require.NoError(t, err, tc.name)
		f.amu.Lock()
		sent := f.got[tc.name]
		f.amu.Unlock()
		if dr, ok := tc.req.(*DeleteRecordsRequest); ok {
			// The wire groups partitions by topic.
			dr.Partitions = []DeleteRecordsPartition{dr.Partitions[0], dr.Partitions[2], dr.Partitions[1]}
		}
		require.Equal(t, tc.req, sent, "%s: the request the handler got", tc.name)
		require.Equal(t, errorCodes(tc.resp), errorCodes(got), "%s: the answer the client got", tc.name)
	}
}

// errorCodes replaces the errors of an answer by their codes, which is
// what crosses the wire, so that answers compare.
func errorCodes(resp any) any {
	switch r := resp.(type) {
	case *CreatePartitionsResponse:
		out := &CreatePartitionsResponse{}
		for _, t := range r.Topics {
			out.Topics = append(out.Topics, TopicResult{Name: t.Name, Err: codeErr(t.Err)})
		}
		return out
	case *AlterConfigsResponse:
		out := &AlterConfigsResponse{}
		for _, c := range r.Resources {
			out.Resources = append(out.Resources, ConfigResult{c.ConfigResource, codeErr(c.Err)})
		}
		return out
	case *DescribeConfigsResponse:
		out := &DescribeConfigsResponse{}
		for _, c := range r.Resources {
			c.Err = codeErr(c.Err)
			out.Resources = append(out.Resources, c)
		}
		return out
	case *DeleteRecordsResponse:
		out := &DeleteRecordsResponse{}
		for _, p := range r.Partitions {
			p.Err = codeErr(p.Err)
			out.Partitions = append(out.Partitions, p)
		}
		return out
	case *DescribeLogDirsResponse:
		out := &DescribeLogDirsResponse{}
		for _, d := range r.Dirs {
			d.Err = codeErr(d.Err)
			out.Dirs = append(out.Dirs, d)
		}
		return out
	case *ElectLeadersResponse:
		out := &ElectLeadersResponse{}
		for _, p := range r.Partitions {
			out.Partitions = append(out.Partitions, ElectionResult{p.TopicPartition, codeErr(p.Err)})
		}
		return out
	}
	return resp
}

// codeErr is the sentinel an error's code stands for.
func codeErr(err error) error {
	var e *kafka.Error
	if errors.As(err, &e) {
		return kafka.ErrorForCode(e.Code)
	}
	return err
}

// TestTCPAcksNoneFailureClosesConnection: an acks=0 produce gets no
// answer, so when it fails the server closes the connection, as Kafka
// does, and the producer learns to refresh its metadata; one that
// succeeds leaves the connection open.
func TestTCPAcksNoneFailureClosesConnection(t *testing.T) {
	_, addr := serve(t, &fakeNode{}, ServerOptions{})
	f := kmsg.NewRequestFormatter()
	produce := func(topic string) []byte {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 9, 0, 1000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = []byte("x")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return f.AppendRequest(nil, req, 1)
	}
	nc, r := rawConn(t, addr)
	_, err := nc.Write(produce("good"))
	require.NoError(t, err)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	_, err = nc.Write(f.AppendRequest(nil, md, 2))
	require.NoError(t, err)
	frame, err := readFrame(r, nil, 1<<20)
	require.NoError(t, err)
	require.Equal(t, int32(2), int32(binary.BigEndian.Uint32(frame)), "the Metadata after a good acks=0 produce is answered")

	_, err = nc.Write(produce("bad"))
	require.NoError(t, err)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second)) // without the close, a timeout
	_, err = r.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the server closed the connection of the failed acks=0 produce")
}
