package transport

import (
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/wire.golden")

// TestWireGolden pins the wire translation of every API partlog speaks,
// in every version: the bytes each *ToWire function sends for a set of
// requests and answers, and what each *FromWire function makes of those
// bytes and of messages as a Kafka peer may send them. A change to the
// translation shows up as a diff of testdata/wire.golden; go test -run
// TestWireGolden -rewrite writes the new one, to be read before it is
// committed.
func TestWireGolden(t *testing.T) {
	var out strings.Builder
	for _, api := range goldenAPIs {
		rng, ok := findRange(supportedAPIs, api.key)
		require.True(t, ok, "api %d", api.key)
		var prev string
		for v := rng.min; v <= rng.max; v++ {
			var g golden
			api.run(&g, v)
			if v > rng.min && g.b.String() == prev {
				fmt.Fprintf(&out, "== %s v%d: as v%d\n", kmsg.NameForKey(api.key), v, v-1)
				continue
			}
			prev = g.b.String()
			fmt.Fprintf(&out, "== %s v%d\n%s", kmsg.NameForKey(api.key), v, prev)
		}
	}
	path := filepath.Join("testdata", "wire.golden")
	if *rewrite {
		require.NoError(t, os.WriteFile(path, []byte(out.String()), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	if string(want) == out.String() {
		return
	}
	wantLines, gotLines := strings.Split(string(want), "\n"), strings.Split(out.String(), "\n")
	for i, shown := 0, 0; i < max(len(wantLines), len(gotLines)) && shown < 5; i++ {
		if w, g := lineAt(wantLines, i), lineAt(gotLines, i); w != g {
			t.Errorf("%s:%d:\nwant %s\n got %s", path, i+1, w, g)
			shown++
		}
	}
	t.Fatal("the wire translation changed: run with -rewrite and read the diff")
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "<end>"
}

// golden collects the lines of testdata/wire.golden.
type golden struct{ b strings.Builder }

// sent writes the bytes of a message as it goes on the wire.
func (g *golden) sent(what string, m interface{ AppendTo([]byte) []byte }) {
	fmt.Fprintf(&g.b, "%s %s\n", what, hex.EncodeToString(m.AppendTo(nil)))
}

// got writes a value as dump prints it.
func (g *golden) got(what string, v any) {
	var b strings.Builder
	dump(&b, reflect.ValueOf(v))
	fmt.Fprintf(&g.b, "%s %s\n", what, b.String())
}

// reqWire encodes a request and decodes it again, as a server gets it.
func reqWire[W kmsg.Request](w W) W {
	r := kmsg.RequestForKey(w.Key())
	r.SetVersion(w.GetVersion())
	if err := r.ReadFrom(w.AppendTo(nil)); err != nil {
		panic(err)
	}
	return r.(W)
}

// respWire encodes an answer and decodes it again, as a client gets it.
func respWire[W kmsg.Response](w W) W {
	r := kmsg.ResponseForKey(w.Key())
	r.SetVersion(w.GetVersion())
	if err := r.ReadFrom(w.AppendTo(nil)); err != nil {
		panic(err)
	}
	return r.(W)
}

// reqTrip records what toWire sends for r in version v, and what fromWire
// makes of it on the other side.
func reqTrip[R any, W kmsg.Request, F any](g *golden, r R, v int16, toWire func(R, int16) W, fromWire func(W) F) {
	w := toWire(r, v)
	g.sent("req", w)
	g.got("  from", fromWire(reqWire(w)))
}

// respTrip records what toWire sends for r in version v, and what
// fromWire makes of it on the other side.
func respTrip[R any, W kmsg.Response, F any](g *golden, r R, v int16, toWire func(R, int16) W, fromWire func(W) F) {
	w := toWire(r, v)
	g.sent("resp", w)
	g.got("  from", fromWire(respWire(w)))
}

// reqFrom records what fromWire makes of a request built as a Kafka
// client may send it, in version v.
func reqFrom[W kmsg.Request, F any](g *golden, w W, v int16, fromWire func(W) F) {
	w.SetVersion(v)
	g.got("kafka req", fromWire(reqWire(w)))
}

// respFrom records what fromWire makes of an answer built as a Kafka
// broker may send it, in version v.
func respFrom[W kmsg.Response, F any](g *golden, w W, v int16, fromWire func(W) F) {
	w.SetVersion(v)
	g.got("kafka resp", fromWire(respWire(w)))
}

// dump prints v deterministically, telling nil from empty slices and
// pointers, and errors by their text.
func dump(b *strings.Builder, v reflect.Value) {
	if !v.IsValid() {
		b.WriteString("<nil>")
		return
	}
	if v.Kind() == reflect.Interface {
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		if err, ok := v.Interface().(error); ok {
			fmt.Fprintf(b, "error(%q)", err.Error())
			return
		}
		v = v.Elem()
	}
	if err, ok := v.Interface().(error); ok && v.Kind() != reflect.Struct {
		fmt.Fprintf(b, "error(%q)", err.Error())
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		b.WriteString("&")
		dump(b, v.Elem())
	case reflect.Struct:
		fmt.Fprintf(b, "%s{", v.Type().Name())
		for i := range v.NumField() {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(b, "%s:", v.Type().Field(i).Name)
			dump(b, v.Field(i))
		}
		b.WriteString("}")
	case reflect.Slice:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			fmt.Fprintf(b, "%q", v.Bytes())
			return
		}
		b.WriteString("[")
		for i := range v.Len() {
			if i > 0 {
				b.WriteString(" ")
			}
			dump(b, v.Index(i))
		}
		b.WriteString("]")
	case reflect.Array:
		fmt.Fprintf(b, "%x", v.Interface())
	case reflect.Map:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		b.WriteString("map[")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(" ")
			}
			dump(b, k)
			b.WriteString(":")
			dump(b, v.MapIndex(k))
		}
		b.WriteString("]")
	case reflect.String:
		fmt.Fprintf(b, "%q", v.String())
	default:
		fmt.Fprintf(b, "%v", v)
	}
}

// goldenAPIs are the cases of TestWireGolden, by API key. Each error
// with a message checks errorMessage and wireError; each nil and empty
// slice, that the two stay apart where the wire tells them apart.
var goldenAPIs = []struct {
	key int16
	run func(g *golden, v int16)
}{
	{0, func(g *golden, v int16) {
		reqTrip(g, &ProduceRequest{TransactionalID: "tx", Acks: kafka.AcksAll, Timeout: 1500 * time.Millisecond, Topics: []ProduceTopic{
			{Topic: "t", Partitions: []ProducePartition{{Partition: 1, Records: []byte("b1")}, {Partition: 0, Records: []byte("b0")}}},
			{Topic: "u", Partitions: []ProducePartition{{Partition: 3}}},
			{Topic: "empty"},
		}}, v, produceToWire, produceFromWire)
		reqTrip(g, &ProduceRequest{Acks: kafka.AcksNone, Timeout: 1 << 62}, v, produceToWire, produceFromWire)
		respTrip(g, &ProduceResponse{Topics: []ProduceTopicResponse{
			{Topic: "t", Partitions: []ProducePartitionResponse{
				{Partition: 1, BaseOffset: 10, LogAppendTime: -1, LogStartOffset: 0},
				{Partition: 0, Err: fmt.Errorf("%w: 2 of 3", kafka.ErrNotEnoughReplicas), BaseOffset: -1, LogAppendTime: 77, LogStartOffset: -1},
			}},
			{Topic: "none"},
		}}, v, produceResponseToWire, produceResponseFromWire)
		respTrip(g, &ProduceResponse{}, v, produceResponseToWire, produceResponseFromWire)
	}},
	{1, func(g *golden, v int16) {
		reqTrip(g, &FetchRequest{ReplicaID: 2, MaxWait: 500 * time.Millisecond, MinBytes: 1, MaxBytes: 1 << 20, Isolation: kafka.ReadCommitted,
			Topics: []FetchTopic{
				{Topic: "t", Partitions: []FetchPartition{
					{Partition: 0, CurrentLeaderEpoch: 4, FetchOffset: 100, LastFetchedEpoch: 3, LogStartOffset: 7, MaxBytes: 4096},
					{Partition: 2, CurrentLeaderEpoch: -1, FetchOffset: 0, LastFetchedEpoch: -1, LogStartOffset: -1, MaxBytes: 0},
				}},
				{Topic: "empty"},
			}, FileRecords: true, Buffer: make([]byte, 0, 8)}, v, fetchToWire, fetchFromWire)
		reqTrip(g, &FetchRequest{ReplicaID: -1}, v, fetchToWire, fetchFromWire)
		respTrip(g, &FetchResponse{Topics: []FetchTopicResponse{
			{Topic: "t", Partitions: []FetchPartitionResponse{
				{Partition: 0, HighWatermark: 10, LastStableOffset: 9, LogStartOffset: 1, Records: []byte("batches"),
					AbortedTransactions: []AbortedTransaction{{ProducerID: 7, FirstOffset: 2}, {ProducerID: 8, FirstOffset: 5}}},
				{Partition: 2, Err: fmt.Errorf("%w: at 99", kafka.ErrOffsetOutOfRange), HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1},
				{Partition: 3, Records: []byte{}, AbortedTransactions: []AbortedTransaction{}},
			}},
			{Topic: "none"},
		}}, v, fetchResponseToWire, fetchResponseFromWire)
		w := kmsg.NewPtrFetchResponse()
		w.ErrorCode = kafka.CodeOf(kafka.ErrUnknownServerError)
		wt := kmsg.NewFetchResponseTopic()
		wt.Topic = "t"
		wp := kmsg.NewFetchResponseTopicPartition()
		wp.Partition, wp.HighWatermark = 1, 5
		wt.Partitions = append(wt.Partitions, wp)
		w.Topics = append(w.Topics, wt)
		respFrom(g, w, v, fetchResponseFromWire)
	}},
	{2, func(g *golden, v int16) {
		reqTrip(g, &ListOffsetsRequest{ReplicaID: -1, Isolation: kafka.ReadCommitted, Topics: []ListOffsetsTopic{
			{Topic: "t", Partitions: []ListOffsetsPartition{{Partition: 0, CurrentLeaderEpoch: 5, Timestamp: kafka.LatestTimestamp}, {Partition: 1, CurrentLeaderEpoch: -1, Timestamp: 1234}}},
			{Topic: "empty"},
		}}, v, listOffsetsToWire, listOffsetsFromWire)
		reqTrip(g, &ListOffsetsRequest{}, v, listOffsetsToWire, listOffsetsFromWire)
		respTrip(g, &ListOffsetsResponse{Topics: []ListOffsetsTopicResponse{
			{Topic: "t", Partitions: []ListOffsetsPartitionResponse{
				{Partition: 0, Timestamp: -1, Offset: 42, LeaderEpoch: 5},
				{Partition: 1, Err: fmt.Errorf("%w: moved", kafka.ErrNotLeaderOrFollower), Timestamp: -1, Offset: -1, LeaderEpoch: -1},
			}},
			{Topic: "none"},
		}}, v, listOffsetsResponseToWire, listOffsetsResponseFromWire)
	}},
	{3, func(g *golden, v int16) {
		reqTrip(g, &MetadataRequest{Topics: []string{"a", "b"}, AllowAutoTopicCreation: true}, v, metadataToWire, metadataFromWire)
		reqTrip(g, &MetadataRequest{Topics: []string{}}, v, metadataToWire, metadataFromWire)
		reqTrip(g, &MetadataRequest{}, v, metadataToWire, metadataFromWire)
		respTrip(g, &MetadataResponse{ClusterID: "cluster", ControllerID: 2,
			Brokers: []Broker{{NodeID: 1, Host: "h1", Port: 9092, Rack: "r1"}, {NodeID: 2, Host: "h2", Port: 9093}},
			Topics: []TopicMetadata{
				{Topic: "t", TopicID: [16]byte{1, 2, 3}, Partitions: []PartitionMetadata{
					{Partition: 0, Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1}, Offline: []int32{2}},
					{Err: fmt.Errorf("%w: no leader", kafka.ErrLeaderNotAvailable), Partition: 1, Leader: -1, LeaderEpoch: -1},
				}},
				{Topic: "__consumer_offsets", Internal: true, Partitions: []PartitionMetadata{}},
				{Err: kafka.ErrUnknownTopicOrPartition, Topic: "gone"},
			}}, v, metadataResponseToWire, metadataResponseFromWire)
		respTrip(g, &MetadataResponse{}, v, metadataResponseToWire, metadataResponseFromWire)
		w := kmsg.NewPtrMetadataRequest()
		w.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("a")}, {}}
		reqFrom(g, w, v, metadataFromWire)
	}},
	{8, func(g *golden, v int16) {
		reqTrip(g, &OffsetCommitRequest{Group: "g", GenerationID: 4, MemberID: "m", GroupInstanceID: "i", Topics: []OffsetCommitTopic{
			{Topic: "t", Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 42, LeaderEpoch: 3, Metadata: "meta"}, {Partition: 2, LeaderEpoch: -1}}},
			{Topic: "empty"},
		}}, v, offsetCommitToWire, offsetCommitFromWire)
		reqTrip(g, &OffsetCommitRequest{Group: "g", GenerationID: -1}, v, offsetCommitToWire, offsetCommitFromWire)
		respTrip(g, &OffsetCommitResponse{Topics: []OffsetCommitTopicResponse{
			{Topic: "t", Partitions: []OffsetCommitPartitionResponse{{Partition: 0}, {Partition: 2, Err: fmt.Errorf("%w: 3", kafka.ErrIllegalGeneration)}}},
			{Topic: "none"},
		}}, v, offsetCommitResponseToWire, offsetCommitResponseFromWire)
		respTrip(g, &OffsetCommitResponse{}, v, offsetCommitResponseToWire, offsetCommitResponseFromWire)
	}},
	{9, func(g *golden, v int16) {
		reqTrip(g, &OffsetFetchRequest{Group: "g", Topics: []OffsetFetchTopic{{Topic: "t", Partitions: []int32{0, 1}}, {Topic: "u"}}, RequireStable: true}, v,
			offsetFetchToWire, offsetFetchFromWire)
		reqTrip(g, &OffsetFetchRequest{Group: "g", Topics: []OffsetFetchTopic{}}, v, offsetFetchToWire, offsetFetchFromWire)
		reqTrip(g, &OffsetFetchRequest{Group: "g"}, v, offsetFetchToWire, offsetFetchFromWire)
		reqs := []*OffsetFetchRequest{{Group: "g"}, {Group: "h"}}
		resps := []*OffsetFetchResponse{
			{Topics: []OffsetFetchTopicResponse{
				{Topic: "t", Partitions: []OffsetFetchPartitionResponse{
					{Partition: 0, Offset: 42, LeaderEpoch: 3, Metadata: "meta"},
					{Partition: 1, Offset: -1, LeaderEpoch: -1, Err: fmt.Errorf("%w: pending", kafka.ErrUnstableOffsetCommit)},
				}},
				{Topic: "none"},
			}},
			{Err: fmt.Errorf("%w: loading", kafka.ErrCoordinatorLoadInProgress)},
		}
		for i := range resps {
			toWire := func(r *OffsetFetchResponse, v int16) *kmsg.OffsetFetchResponse {
				if v < 8 {
					return offsetFetchResponseToWire(reqs[i:i+1], []*OffsetFetchResponse{r}, v)
				}
				return offsetFetchResponseToWire(reqs, resps, v)
			}
			for _, group := range []string{"g", "h", "x"} {
				respTrip(g, resps[i], v, toWire, func(w *kmsg.OffsetFetchResponse) *OffsetFetchResponse { return offsetFetchResponseFromWire(w, group) })
			}
		}
		if v >= 8 {
			w := kmsg.NewPtrOffsetFetchRequest()
			a, b := kmsg.NewOffsetFetchRequestGroup(), kmsg.NewOffsetFetchRequestGroup()
			a.Group, b.Group = "a", "b"
			a.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}
			w.Groups = []kmsg.OffsetFetchRequestGroup{a, b}
			reqFrom(g, w, v, offsetFetchFromWire)
		}
	}},
	{10, func(g *golden, v int16) {
		for _, r := range []*FindCoordinatorRequest{{Key: "g"}, {Key: "tx", KeyType: CoordinatorTransaction}} {
			reqTrip(g, r, v, findCoordinatorToWire, findCoordinatorFromWire)
		}
		reqs := []*FindCoordinatorRequest{{Key: "a"}, {Key: "b"}}
		resps := []*FindCoordinatorResponse{{NodeID: 1, Host: "x", Port: 1}, {Err: fmt.Errorf("%w: moved", kafka.ErrNotCoordinator), NodeID: -1, Port: -1}}
		w := findCoordinatorResponseToWire(reqs, resps, v)
		g.sent("resp", w)
		for _, key := range []string{"a", "b", "c"} {
			g.got("  from "+key, findCoordinatorResponseFromWire(respWire(w), key))
		}
		if v >= 4 {
			w := kmsg.NewPtrFindCoordinatorRequest()
			w.CoordinatorKeys = []string{"a", "b"}
			reqFrom(g, w, v, findCoordinatorFromWire)
		}
	}},
	{11, func(g *golden, v int16) {
		reqTrip(g, &JoinGroupRequest{Group: "g", SessionTimeout: 10 * time.Second, RebalanceTimeout: time.Minute, MemberID: "m",
			GroupInstanceID: "i", ProtocolType: "consumer", Protocols: []JoinGroupProtocol{{Name: "range", Metadata: []byte("r")}, {Name: "sticky"}},
			ClientID: "c", ClientHost: "h", Reason: "why"}, v, joinGroupToWire, joinGroupFromWire)
		reqTrip(g, &JoinGroupRequest{}, v, joinGroupToWire, joinGroupFromWire)
		respTrip(g, &JoinGroupResponse{Err: fmt.Errorf("%w: m2", kafka.ErrMemberIDRequired), GenerationID: 4, ProtocolType: "consumer", ProtocolName: "range",
			Leader: "m1", MemberID: "m2", Members: []JoinGroupMember{{MemberID: "m1", GroupInstanceID: "i1", Metadata: []byte("s1")}, {MemberID: "m2"}}},
			v, joinGroupResponseToWire, joinGroupResponseFromWire)
		respTrip(g, &JoinGroupResponse{}, v, joinGroupResponseToWire, joinGroupResponseFromWire)
	}},
	{12, func(g *golden, v int16) {
		reqTrip(g, &HeartbeatRequest{Group: "g", GenerationID: 4, MemberID: "m", GroupInstanceID: "i"}, v, heartbeatToWire, heartbeatFromWire)
		reqTrip(g, &HeartbeatRequest{}, v, heartbeatToWire, heartbeatFromWire)
		respTrip(g, &HeartbeatResponse{Err: fmt.Errorf("%w: now", kafka.ErrRebalanceInProgress)}, v, heartbeatResponseToWire, heartbeatResponseFromWire)
		respTrip(g, &HeartbeatResponse{}, v, heartbeatResponseToWire, heartbeatResponseFromWire)
	}},
	{13, func(g *golden, v int16) {
		one := &LeaveGroupRequest{Group: "g", Members: []LeaveGroupMember{{MemberID: "m", Reason: "bye"}}}
		many := &LeaveGroupRequest{Group: "g", Members: []LeaveGroupMember{{MemberID: "m", Reason: "closing"}, {GroupInstanceID: "i"}}}
		for _, r := range []*LeaveGroupRequest{one, many, {Group: "g"}} {
			g.got("fits", leaveGroupFits(r, v))
			reqTrip(g, r, v, leaveGroupToWire, leaveGroupFromWire)
		}
		for _, r := range []*LeaveGroupResponse{
			{Members: []LeaveGroupMemberResponse{{MemberID: "m", Err: kafka.ErrUnknownMemberID}, {GroupInstanceID: "i"}}},
			{Err: fmt.Errorf("%w: x", kafka.ErrCoordinatorNotAvailable), Members: []LeaveGroupMemberResponse{{MemberID: "m", Err: kafka.ErrUnknownMemberID}}},
			{},
		} {
			respTrip(g, r, v, leaveGroupResponseToWire, func(w *kmsg.LeaveGroupResponse) *LeaveGroupResponse { return leaveGroupResponseFromWire(many, w) })
		}
	}},
	{14, func(g *golden, v int16) {
		reqTrip(g, &SyncGroupRequest{Group: "g", GenerationID: 4, MemberID: "m", GroupInstanceID: "i", ProtocolType: "consumer", ProtocolName: "range",
			Assignments: []SyncGroupAssignment{{MemberID: "m", Assignment: []byte("a")}, {MemberID: "n"}}}, v, syncGroupToWire, syncGroupFromWire)
		reqTrip(g, &SyncGroupRequest{}, v, syncGroupToWire, syncGroupFromWire)
		respTrip(g, &SyncGroupResponse{Err: fmt.Errorf("%w: x", kafka.ErrRebalanceInProgress), ProtocolType: "consumer", ProtocolName: "range", Assignment: []byte("a")},
			v, syncGroupResponseToWire, syncGroupResponseFromWire)
		respTrip(g, &SyncGroupResponse{}, v, syncGroupResponseToWire, syncGroupResponseFromWire)
	}},
	{15, func(g *golden, v int16) {
		reqTrip(g, &DescribeGroupsRequest{Groups: []string{"g", "gone"}}, v, describeGroupsToWire, describeGroupsFromWire)
		reqTrip(g, &DescribeGroupsRequest{}, v, describeGroupsToWire, describeGroupsFromWire)
		respTrip(g, &DescribeGroupsResponse{Groups: []DescribedGroup{
			{Group: "g", State: "Stable", ProtocolType: "consumer", Protocol: "range", GenerationID: 4, Leader: "m", Members: []DescribedMember{
				{MemberID: "m", GroupInstanceID: "i", ClientID: "c", ClientHost: "h", Metadata: []byte("s"), Assignment: []byte("a")},
				{MemberID: "n", ClientID: "c", ClientHost: "h"}}},
			{Err: fmt.Errorf("%w: no group", kafka.ErrGroupIDNotFound), Group: "gone", State: "Dead"},
		}}, v, describeGroupsResponseToWire, describeGroupsResponseFromWire)
		respTrip(g, &DescribeGroupsResponse{}, v, describeGroupsResponseToWire, describeGroupsResponseFromWire)
	}},
	{16, func(g *golden, v int16) {
		reqTrip(g, &ListGroupsRequest{StatesFilter: []string{"Stable", "Empty"}}, v, listGroupsToWire, listGroupsFromWire)
		reqTrip(g, &ListGroupsRequest{StatesFilter: []string{}}, v, listGroupsToWire, listGroupsFromWire)
		reqTrip(g, &ListGroupsRequest{}, v, listGroupsToWire, listGroupsFromWire)
		respTrip(g, &ListGroupsResponse{Err: kafka.ErrCoordinatorNotAvailable, Groups: []ListedGroup{{Group: "g", ProtocolType: "consumer", State: "Stable"}, {Group: "h"}}},
			v, listGroupsResponseToWire, listGroupsResponseFromWire)
		respTrip(g, &ListGroupsResponse{}, v, listGroupsResponseToWire, listGroupsResponseFromWire)
	}},
	{19, func(g *golden, v int16) {
		reqTrip(g, &CreateTopicsRequest{Timeout: 3 * time.Second, ValidateOnly: true, Topics: []CreatableTopic{
			{Name: "t", Partitions: 3, ReplicationFactor: 2, Configs: map[string]string{"retention.ms": "1000"}},
			{Name: "u", Partitions: -1, ReplicationFactor: -1, Configs: map[string]string{}},
		}}, v, createTopicsToWire, createTopicsFromWire)
		reqTrip(g, &CreateTopicsRequest{}, v, createTopicsToWire, createTopicsFromWire)
		respTrip(g, &CreateTopicsResponse{Topics: []TopicResult{{Name: "t"}, {Name: "u", Err: fmt.Errorf("%w: exists", kafka.ErrTopicAlreadyExists)}}},
			v, createTopicsResponseToWire, createTopicsResponseFromWire)
		respTrip(g, &CreateTopicsResponse{}, v, createTopicsResponseToWire, createTopicsResponseFromWire)
		w := kmsg.NewPtrCreateTopicsRequest()
		wt := kmsg.NewCreateTopicsRequestTopic()
		wt.Topic = "t"
		wt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "a", Value: kmsg.StringPtr("1")}, {Name: "null"}}
		w.Topics = append(w.Topics, wt)
		reqFrom(g, w, v, createTopicsFromWire)
	}},
	{20, func(g *golden, v int16) {
		reqTrip(g, &DeleteTopicsRequest{Topics: []string{"t", "u"}, Timeout: time.Second}, v, deleteTopicsToWire, deleteTopicsFromWire)
		reqTrip(g, &DeleteTopicsRequest{}, v, deleteTopicsToWire, deleteTopicsFromWire)
		respTrip(g, &DeleteTopicsResponse{Topics: []TopicResult{{Name: "t"}, {Name: "u", Err: fmt.Errorf("%w: u", kafka.ErrUnknownTopicOrPartition)}}},
			v, deleteTopicsResponseToWire, deleteTopicsResponseFromWire)
		respTrip(g, &DeleteTopicsResponse{}, v, deleteTopicsResponseToWire, deleteTopicsResponseFromWire)
	}},
	{21, func(g *golden, v int16) {
		reqTrip(g, &DeleteRecordsRequest{Timeout: time.Second, Partitions: []DeleteRecordsPartition{
			{kafka.TopicPartition{Topic: "t", Partition: 1}, 10}, {kafka.TopicPartition{Topic: "u", Partition: 0}, -1}, {kafka.TopicPartition{Topic: "t", Partition: 0}, 5},
		}}, v, deleteRecordsToWire, deleteRecordsFromWire)
		reqTrip(g, &DeleteRecordsRequest{}, v, deleteRecordsToWire, deleteRecordsFromWire)
		respTrip(g, &DeleteRecordsResponse{Partitions: []DeleteRecordsResult{
			{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 1}, LowWatermark: 10},
			{TopicPartition: kafka.TopicPartition{Topic: "u", Partition: 0}, LowWatermark: -1, Err: fmt.Errorf("%w: x", kafka.ErrOffsetOutOfRange)},
			{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 0}, LowWatermark: 5},
		}}, v, deleteRecordsResponseToWire, deleteRecordsResponseFromWire)
		respTrip(g, &DeleteRecordsResponse{}, v, deleteRecordsResponseToWire, deleteRecordsResponseFromWire)
	}},
	{22, func(g *golden, v int16) {
		reqTrip(g, &InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1}, v, initProducerIDToWire, initProducerIDFromWire)
		reqTrip(g, &InitProducerIDRequest{TransactionalID: "tx", TransactionTimeout: time.Minute, ProducerID: 12, ProducerEpoch: 3}, v, initProducerIDToWire, initProducerIDFromWire)
		respTrip(g, &InitProducerIDResponse{ProducerID: 9000, ProducerEpoch: 2}, v, initProducerIDResponseToWire, initProducerIDResponseFromWire)
		respTrip(g, &InitProducerIDResponse{Err: fmt.Errorf("%w: x", kafka.ErrInvalidRequest), ProducerID: -1, ProducerEpoch: -1}, v, initProducerIDResponseToWire, initProducerIDResponseFromWire)
	}},
	{23, func(g *golden, v int16) {
		reqTrip(g, &kafka.OffsetsForLeaderEpochRequest{ReplicaID: 3, Partitions: []kafka.OffsetForLeaderEpochPartition{
			{Topic: "t", Partition: 1, CurrentLeaderEpoch: 5, LeaderEpoch: 4}, {Topic: "u", Partition: 0, CurrentLeaderEpoch: -1, LeaderEpoch: 0},
			{Topic: "t", Partition: 0, CurrentLeaderEpoch: 5, LeaderEpoch: 2},
		}}, v, offsetsForLeaderEpochToWire, offsetsForLeaderEpochFromWire)
		reqTrip(g, &kafka.OffsetsForLeaderEpochRequest{}, v, offsetsForLeaderEpochToWire, offsetsForLeaderEpochFromWire)
		respTrip(g, &kafka.OffsetsForLeaderEpochResponse{Partitions: []kafka.OffsetForLeaderEpochPartitionResponse{
			{Topic: "t", Partition: 1, EpochEndOffset: kafka.EpochEndOffset{LeaderEpoch: 4, EndOffset: 100}},
			{Topic: "u", Partition: 0, Err: fmt.Errorf("%w: x", kafka.ErrFencedLeaderEpoch), EpochEndOffset: kafka.EpochEndOffset{LeaderEpoch: -1, EndOffset: -1}},
		}}, v, offsetsForLeaderEpochResponseToWire, offsetsForLeaderEpochResponseFromWire)
		respTrip(g, &kafka.OffsetsForLeaderEpochResponse{}, v, offsetsForLeaderEpochResponseToWire, offsetsForLeaderEpochResponseFromWire)
	}},
	{24, func(g *golden, v int16) {
		one := &AddPartitionsToTxnRequest{Transactions: []AddPartitionsToTxnTransaction{{TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2,
			Partitions: []kafka.TopicPartition{{Topic: "t", Partition: 1}, {Topic: "u", Partition: 0}, {Topic: "t", Partition: 0}}}}}
		batch := &AddPartitionsToTxnRequest{Transactions: []AddPartitionsToTxnTransaction{
			{TransactionalID: "a", ProducerID: 1, ProducerEpoch: 0, VerifyOnly: true, Partitions: []kafka.TopicPartition{{Topic: "t", Partition: 2}}},
			{TransactionalID: "b", ProducerID: 2, ProducerEpoch: 5, Partitions: []kafka.TopicPartition{{Topic: "u", Partition: 1}}},
		}}
		for _, r := range []*AddPartitionsToTxnRequest{one, batch, {}} {
			reqTrip(g, r, v, addPartitionsToTxnToWire, addPartitionsToTxnFromWire)
		}
		for _, resp := range []*AddPartitionsToTxnResponse{
			{Transactions: []AddPartitionsToTxnResult{{TransactionalID: "tx", Partitions: []TxnPartitionResult{
				{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 1}},
				{TopicPartition: kafka.TopicPartition{Topic: "u", Partition: 0}, Err: fmt.Errorf("%w: u", kafka.ErrUnknownTopicOrPartition)},
				{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 0}, Err: kafka.ErrOperationNotAttempted},
			}}}},
			{Err: fmt.Errorf("%w: loading", kafka.ErrCoordinatorLoadInProgress)},
			{},
		} {
			respTrip(g, resp, v, func(r *AddPartitionsToTxnResponse, v int16) *kmsg.AddPartitionsToTxnResponse {
				return addPartitionsToTxnResponseToWire(one, r, v)
			}, func(w *kmsg.AddPartitionsToTxnResponse) *AddPartitionsToTxnResponse {
				return addPartitionsToTxnResponseFromWire(one, w)
			})
		}
		w := kmsg.NewPtrAddPartitionsToTxnRequest()
		if v < 4 {
			w.TransactionalID, w.ProducerID, w.ProducerEpoch = "tx", 7, 2
			w.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
		} else {
			wt := kmsg.NewAddPartitionsToTxnRequestTransaction()
			wt.TransactionalID, wt.ProducerID, wt.ProducerEpoch, wt.VerifyOnly = "tx", 7, 2, true
			wt.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "t", Partitions: []int32{0, 1}}}
			w.Transactions = append(w.Transactions, wt)
		}
		reqFrom(g, w, v, addPartitionsToTxnFromWire)
	}},
	{25, func(g *golden, v int16) {
		reqTrip(g, &AddOffsetsToTxnRequest{TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2, Group: "g"}, v, addOffsetsToTxnToWire, addOffsetsToTxnFromWire)
		respTrip(g, &AddOffsetsToTxnResponse{}, v, addOffsetsToTxnResponseToWire, addOffsetsToTxnResponseFromWire)
		respTrip(g, &AddOffsetsToTxnResponse{Err: fmt.Errorf("%w: epoch 3", kafka.ErrProducerFenced)}, v, addOffsetsToTxnResponseToWire, addOffsetsToTxnResponseFromWire)
	}},
	{26, func(g *golden, v int16) {
		reqTrip(g, &EndTxnRequest{TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2, Result: TxnCommit}, v, endTxnToWire, endTxnFromWire)
		reqTrip(g, &EndTxnRequest{TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 2, Result: TxnAbort}, v, endTxnToWire, endTxnFromWire)
		respTrip(g, &EndTxnResponse{ProducerID: 7, ProducerEpoch: 3}, v, endTxnResponseToWire, endTxnResponseFromWire)
		respTrip(g, &EndTxnResponse{Err: fmt.Errorf("%w: aborting", kafka.ErrInvalidTxnState), ProducerID: -1, ProducerEpoch: -1}, v,
			endTxnResponseToWire, endTxnResponseFromWire)
	}},
	{27, func(g *golden, v int16) {
		reqTrip(g, &WriteTxnMarkersRequest{Markers: []TxnMarker{
			{ProducerID: 7, ProducerEpoch: 3, Result: TxnCommit, CoordinatorEpoch: 4, TransactionVersion: 2,
				Partitions: []kafka.TopicPartition{{Topic: "t", Partition: 1}, {Topic: "u", Partition: 0}, {Topic: "t", Partition: 0}}},
			{ProducerID: 8, ProducerEpoch: 0, Result: TxnAbort, CoordinatorEpoch: 4, Partitions: []kafka.TopicPartition{{Topic: "__consumer_offsets", Partition: 12}}},
		}}, v, writeTxnMarkersToWire, writeTxnMarkersFromWire)
		reqTrip(g, &WriteTxnMarkersRequest{}, v, writeTxnMarkersToWire, writeTxnMarkersFromWire)
		respTrip(g, &WriteTxnMarkersResponse{Markers: []TxnMarkerResult{
			{ProducerID: 7, Partitions: []TxnPartitionResult{
				{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 1}},
				{TopicPartition: kafka.TopicPartition{Topic: "u", Partition: 0}, Err: fmt.Errorf("%w: moved", kafka.ErrNotLeaderOrFollower)},
				{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 0}, Err: kafka.ErrTransactionCoordinatorFenced},
			}},
			{ProducerID: 8, Partitions: []TxnPartitionResult{{TopicPartition: kafka.TopicPartition{Topic: "__consumer_offsets", Partition: 12}}}},
		}}, v, writeTxnMarkersResponseToWire, writeTxnMarkersResponseFromWire)
		respTrip(g, &WriteTxnMarkersResponse{}, v, writeTxnMarkersResponseToWire, writeTxnMarkersResponseFromWire)
	}},
	{28, func(g *golden, v int16) {
		reqTrip(g, &TxnOffsetCommitRequest{TransactionalID: "tx", Group: "g", ProducerID: 7, ProducerEpoch: 2,
			GenerationID: 4, MemberID: "m", GroupInstanceID: "i", Topics: []OffsetCommitTopic{
				{Topic: "t", Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 42, LeaderEpoch: 3, Metadata: "meta"}, {Partition: 2, LeaderEpoch: -1}}},
				{Topic: "empty"},
			}}, v, txnOffsetCommitToWire, txnOffsetCommitFromWire)
		reqTrip(g, &TxnOffsetCommitRequest{TransactionalID: "tx", Group: "g", ProducerID: 7, GenerationID: NoGeneration}, v, txnOffsetCommitToWire, txnOffsetCommitFromWire)
		respTrip(g, &TxnOffsetCommitResponse{Topics: []OffsetCommitTopicResponse{
			{Topic: "t", Partitions: []OffsetCommitPartitionResponse{{Partition: 0}, {Partition: 2, Err: fmt.Errorf("%w: m", kafka.ErrUnknownMemberID)}}},
			{Topic: "none"},
		}}, v, txnOffsetCommitResponseToWire, txnOffsetCommitResponseFromWire)
		respTrip(g, &TxnOffsetCommitResponse{}, v, txnOffsetCommitResponseToWire, txnOffsetCommitResponseFromWire)
	}},
	{32, func(g *golden, v int16) {
		req := &DescribeConfigsRequest{Resources: []ConfigResource{{Type: ConfigTopic, Name: "t"}, {Type: ConfigBroker, Name: "1"}, {Type: ConfigTopic, Name: "gone"}}}
		reqTrip(g, req, v, describeConfigsToWire, describeConfigsFromWire)
		reqTrip(g, &DescribeConfigsRequest{}, v, describeConfigsToWire, describeConfigsFromWire)
		resp := &DescribeConfigsResponse{Resources: []ResourceConfigs{
			{ConfigResource: ConfigResource{Type: ConfigTopic, Name: "t"}, Configs: []ConfigEntry{
				{Name: "retention.ms", Value: "1000"}, {Name: "segment.bytes", Value: "1024", IsDefault: true}, {Name: "x", ReadOnly: true}}},
			{ConfigResource: ConfigResource{Type: ConfigBroker, Name: "1"}, Configs: []ConfigEntry{
				{Name: "a", Value: "1", ReadOnly: true}, {Name: "b", Value: "2"}, {Name: "c", IsDefault: true}}},
			{ConfigResource: ConfigResource{Type: ConfigTopic, Name: "gone"}, Err: fmt.Errorf("%w: gone", kafka.ErrUnknownTopicOrPartition)},
		}}
		asked := describeConfigsToWire(req, v)
		respTrip(g, resp, v, func(r *DescribeConfigsResponse, v int16) *kmsg.DescribeConfigsResponse {
			return describeConfigsResponseToWire(asked, r, v)
		}, describeConfigsResponseFromWire)
		asked.Resources[0].ConfigNames = []string{"segment.bytes", "nothing"}
		asked.Resources[1].ConfigNames = []string{}
		respTrip(g, resp, v, func(r *DescribeConfigsResponse, v int16) *kmsg.DescribeConfigsResponse {
			return describeConfigsResponseToWire(asked, r, v)
		}, describeConfigsResponseFromWire)
		respTrip(g, resp, v, func(r *DescribeConfigsResponse, v int16) *kmsg.DescribeConfigsResponse {
			return describeConfigsResponseToWire(kmsg.NewPtrDescribeConfigsRequest(), r, v)
		}, describeConfigsResponseFromWire)
		w := kmsg.NewPtrDescribeConfigsResponse()
		wr := kmsg.NewDescribeConfigsResponseResource()
		wr.ResourceType, wr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		for _, c := range []struct {
			def bool
			src kmsg.ConfigSource
			val *string
		}{{true, kmsg.ConfigSourceUnknown, nil}, {false, kmsg.ConfigSourceDefaultConfig, kmsg.StringPtr("d")}, {false, kmsg.ConfigSourceDynamicTopicConfig, kmsg.StringPtr("v")}} {
			wc := kmsg.NewDescribeConfigsResponseResourceConfig()
			wc.Name, wc.Value, wc.IsDefault, wc.Source = "k", c.val, c.def, c.src
			wr.Configs = append(wr.Configs, wc)
		}
		w.Resources = append(w.Resources, wr)
		respFrom(g, w, v, describeConfigsResponseFromWire)
	}},
	{33, func(g *golden, v int16) {
		reqTrip(g, &AlterConfigsRequest{ValidateOnly: true, Resources: []ConfigAlteration{
			{ConfigResource: ConfigResource{Type: ConfigTopic, Name: "t"}, Replace: true, Changes: []ConfigChange{{Name: "a", Value: "1"}, {Name: "b", Op: ConfigDelete}}},
			{ConfigResource: ConfigResource{Type: ConfigBroker, Name: "1"}, Replace: true},
		}}, v, alterConfigsToWire, alterConfigsFromWire)
		reqTrip(g, &AlterConfigsRequest{}, v, alterConfigsToWire, alterConfigsFromWire)
		respTrip(g, &AlterConfigsResponse{Resources: []ConfigResult{
			{ConfigResource: ConfigResource{Type: ConfigTopic, Name: "t"}},
			{ConfigResource: ConfigResource{Type: ConfigBroker, Name: "1"}, Err: fmt.Errorf("%w: no", kafka.ErrInvalidConfig)},
		}}, v, alterConfigsResponseToWire, alterConfigsResponseFromWire)
		respTrip(g, &AlterConfigsResponse{}, v, alterConfigsResponseToWire, alterConfigsResponseFromWire)
		w := kmsg.NewPtrAlterConfigsRequest()
		wr := kmsg.NewAlterConfigsRequestResource()
		wr.ResourceType, wr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		wr.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "a", Value: kmsg.StringPtr("1")}, {Name: "null"}}
		w.Resources = append(w.Resources, wr)
		reqFrom(g, w, v, alterConfigsFromWire)
	}},
	{35, func(g *golden, v int16) {
		reqTrip(g, &DescribeLogDirsRequest{Partitions: []kafka.TopicPartition{{Topic: "t", Partition: 1}, {Topic: "u", Partition: 0}, {Topic: "t", Partition: 0}}},
			v, describeLogDirsToWire, describeLogDirsFromWire)
		reqTrip(g, &DescribeLogDirsRequest{Partitions: []kafka.TopicPartition{}}, v, describeLogDirsToWire, describeLogDirsFromWire)
		reqTrip(g, &DescribeLogDirsRequest{}, v, describeLogDirsToWire, describeLogDirsFromWire)
		respTrip(g, &DescribeLogDirsResponse{Dirs: []LogDir{
			{Path: "/d1", TotalBytes: 1000, UsableBytes: 500, Partitions: []LogDirPartition{
				{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 1}, Size: 10, OffsetLag: 0},
				{TopicPartition: kafka.TopicPartition{Topic: "u", Partition: 0}, Size: 20, OffsetLag: 3},
				{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 0}, Size: 30},
			}},
			{Path: "/d2", Err: kafka.ErrKafkaStorage, TotalBytes: -1, UsableBytes: -1},
		}}, v, describeLogDirsResponseToWire, describeLogDirsResponseFromWire)
		respTrip(g, &DescribeLogDirsResponse{}, v, describeLogDirsResponseToWire, describeLogDirsResponseFromWire)
	}},
	{37, func(g *golden, v int16) {
		reqTrip(g, &CreatePartitionsRequest{Timeout: 2 * time.Second, ValidateOnly: true, Topics: []PartitionCount{{Topic: "t", Count: 4}, {Topic: "u", Count: 1}}},
			v, createPartitionsToWire, createPartitionsFromWire)
		reqTrip(g, &CreatePartitionsRequest{}, v, createPartitionsToWire, createPartitionsFromWire)
		respTrip(g, &CreatePartitionsResponse{Topics: []TopicResult{{Name: "t"}, {Name: "u", Err: fmt.Errorf("%w: fewer", kafka.ErrInvalidPartitions)}}},
			v, createPartitionsResponseToWire, createPartitionsResponseFromWire)
		respTrip(g, &CreatePartitionsResponse{}, v, createPartitionsResponseToWire, createPartitionsResponseFromWire)
	}},
	{42, func(g *golden, v int16) {
		reqTrip(g, &DeleteGroupsRequest{Groups: []string{"g", "h"}}, v, deleteGroupsToWire, deleteGroupsFromWire)
		reqTrip(g, &DeleteGroupsRequest{}, v, deleteGroupsToWire, deleteGroupsFromWire)
		respTrip(g, &DeleteGroupsResponse{Results: []DeletedGroup{{Group: "g", Err: fmt.Errorf("%w: 2 members", kafka.ErrNonEmptyGroup)}, {Group: "h"}}},
			v, deleteGroupsResponseToWire, deleteGroupsResponseFromWire)
		respTrip(g, &DeleteGroupsResponse{}, v, deleteGroupsResponseToWire, deleteGroupsResponseFromWire)
	}},
	{43, func(g *golden, v int16) {
		reqTrip(g, &ElectLeadersRequest{Type: UncleanElection, Timeout: time.Second, Partitions: []kafka.TopicPartition{{Topic: "t", Partition: 1}, {Topic: "u", Partition: 0}, {Topic: "t", Partition: 0}}},
			v, electLeadersToWire, electLeadersFromWire)
		reqTrip(g, &ElectLeadersRequest{Partitions: []kafka.TopicPartition{}}, v, electLeadersToWire, electLeadersFromWire)
		reqTrip(g, &ElectLeadersRequest{}, v, electLeadersToWire, electLeadersFromWire)
		respTrip(g, &ElectLeadersResponse{Partitions: []ElectionResult{
			{kafka.TopicPartition{Topic: "t", Partition: 1}, nil},
			{kafka.TopicPartition{Topic: "u", Partition: 0}, fmt.Errorf("%w: x", kafka.ErrElectionNotNeeded)},
			{kafka.TopicPartition{Topic: "t", Partition: 0}, kafka.ErrPreferredLeaderNotAvailable},
		}}, v, electLeadersResponseToWire, electLeadersResponseFromWire)
		respTrip(g, &ElectLeadersResponse{}, v, electLeadersResponseToWire, electLeadersResponseFromWire)
	}},
	{44, func(g *golden, v int16) {
		reqTrip(g, &AlterConfigsRequest{ValidateOnly: true, Resources: []ConfigAlteration{
			{ConfigResource: ConfigResource{Type: ConfigTopic, Name: "t"}, Changes: []ConfigChange{
				{Name: "a", Value: "1"}, {Name: "b", Op: ConfigDelete, Value: "ignored"}, {Name: "c", Op: ConfigAppend, Value: "x"}, {Name: "d", Op: ConfigSubtract, Value: "y"}}},
			{ConfigResource: ConfigResource{Type: ConfigBroker, Name: "1"}},
		}}, v, incrementalAlterConfigsToWire, incrementalAlterConfigsFromWire)
		reqTrip(g, &AlterConfigsRequest{}, v, incrementalAlterConfigsToWire, incrementalAlterConfigsFromWire)
		respTrip(g, &AlterConfigsResponse{Resources: []ConfigResult{
			{ConfigResource: ConfigResource{Type: ConfigTopic, Name: "t"}},
			{ConfigResource: ConfigResource{Type: ConfigBroker, Name: "1"}, Err: fmt.Errorf("%w: no", kafka.ErrInvalidConfig)},
		}}, v, incrementalAlterConfigsResponseToWire, incrementalAlterConfigsResponseFromWire)
		respTrip(g, &AlterConfigsResponse{}, v, incrementalAlterConfigsResponseToWire, incrementalAlterConfigsResponseFromWire)
	}},
	{60, func(g *golden, v int16) {
		g.sent("resp", describeClusterResponse(&MetadataResponse{ClusterID: "c", ControllerID: 2,
			Brokers: []Broker{{NodeID: 1, Host: "h1", Port: 1, Rack: "r"}, {NodeID: 2, Host: "h2", Port: 2}}}, v))
		g.sent("resp", describeClusterResponse(&MetadataResponse{}, v))
	}},
	{61, func(g *golden, v int16) {
		reqTrip(g, &DescribeProducersRequest{Partitions: []kafka.TopicPartition{{Topic: "t", Partition: 1}, {Topic: "u", Partition: 0}, {Topic: "t", Partition: 0}}},
			v, describeProducersToWire, describeProducersFromWire)
		reqTrip(g, &DescribeProducersRequest{}, v, describeProducersToWire, describeProducersFromWire)
		respTrip(g, &DescribeProducersResponse{Partitions: []PartitionProducers{
			{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 1}, Producers: []ProducerState{
				{ProducerID: 7, ProducerEpoch: 1, LastSequence: 9, LastTimestamp: 1000, CurrentTxnStartOffset: -1}, {ProducerID: 8, LastSequence: -1}}},
			{TopicPartition: kafka.TopicPartition{Topic: "u", Partition: 0}, Err: fmt.Errorf("%w: x", kafka.ErrNotLeaderOrFollower)},
			{TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 0}},
		}}, v, describeProducersResponseToWire, describeProducersResponseFromWire)
		respTrip(g, &DescribeProducersResponse{}, v, describeProducersResponseToWire, describeProducersResponseFromWire)
	}},
	{65, func(g *golden, v int16) {
		reqTrip(g, &DescribeTransactionsRequest{TransactionalIDs: []string{"tx", "gone"}}, v, describeTransactionsToWire, describeTransactionsFromWire)
		reqTrip(g, &DescribeTransactionsRequest{}, v, describeTransactionsToWire, describeTransactionsFromWire)
		respTrip(g, &DescribeTransactionsResponse{Transactions: []DescribedTransaction{
			{TransactionalID: "tx", State: "Ongoing", TransactionTimeout: time.Minute, StartTimestamp: 1000, ProducerID: 7, ProducerEpoch: 2,
				Partitions: []kafka.TopicPartition{{Topic: "t", Partition: 1}, {Topic: "u", Partition: 0}, {Topic: "t", Partition: 0}}},
			{Err: fmt.Errorf("%w: gone", kafka.ErrTransactionalIDNotFound), TransactionalID: "gone", StartTimestamp: -1, ProducerID: -1, ProducerEpoch: -1},
		}}, v, describeTransactionsResponseToWire, describeTransactionsResponseFromWire)
		respTrip(g, &DescribeTransactionsResponse{}, v, describeTransactionsResponseToWire, describeTransactionsResponseFromWire)
	}},
	{66, func(g *golden, v int16) {
		reqTrip(g, &ListTransactionsRequest{StateFilters: []string{"Ongoing", "PrepareCommit"}, ProducerIDFilters: []int64{7, 8},
			MinDuration: 90 * time.Second, TransactionalIDPattern: "tx-.*"}, v, listTransactionsToWire, listTransactionsFromWire)
		reqTrip(g, &ListTransactionsRequest{}, v, listTransactionsToWire, listTransactionsFromWire)
		respTrip(g, &ListTransactionsResponse{UnknownStateFilters: []string{"Bogus"}, Transactions: []ListedTransaction{
			{TransactionalID: "tx", ProducerID: 7, State: "Ongoing"}, {TransactionalID: "ty", ProducerID: 8, State: "CompleteCommit"}}},
			v, listTransactionsResponseToWire, listTransactionsResponseFromWire)
		respTrip(g, &ListTransactionsResponse{Err: fmt.Errorf("%w: loading", kafka.ErrCoordinatorLoadInProgress)}, v,
			listTransactionsResponseToWire, listTransactionsResponseFromWire)
	}},
}
