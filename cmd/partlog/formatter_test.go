package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/group"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
)

// formatFixture returns a directory whose topic t holds three records: one
// with a key, a value and headers, one with a null key and value, and one
// with an empty key and a two-line value.
func formatFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	n, err := partlog.Open(dir)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: 1}))
	p, err := producer.New(n.Client())
	require.NoError(t, err)
	ts := time.UnixMilli(1700000000000)
	require.NoError(t, p.ProduceSync(ctx,
		&producer.Record{Topic: "t", Key: []byte("k"), Value: []byte("v"), Timestamp: ts,
			Headers: []producer.Header{{Key: "h1", Value: []byte("v1")}, {Key: "h2", Value: nil}}},
		&producer.Record{Topic: "t", Timestamp: ts.Add(time.Millisecond)}, // null key and value
		&producer.Record{Topic: "t", Key: []byte{}, Value: []byte("two\nlines"), Timestamp: ts.Add(2 * time.Millisecond)},
	).FirstErr())
	require.NoError(t, p.Close())
	require.NoError(t, n.Close())
	return dir
}

// TestConsumeProperties: --property sets kafka-console-consumer.sh's
// formatter properties, with DefaultMessageFormatter's output.
func TestConsumeProperties(t *testing.T) {
	dir := formatFixture(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--property", "print.key=true"}, "k\tv\nnull\tnull\n\ttwo\nlines\n"},
		{[]string{"--property", "print.key=true", "--property", "key.separator=:"}, "k:v\nnull:null\n:two\nlines\n"},
		{[]string{"--property", "print.key=true", "--property", "key.separator= = "}, "k = v\nnull = null\n = two\nlines\n"},
		{[]string{"--print-key", "--key-separator", "|", "--property", "key.separator=:"}, "k:v\nnull:null\n:two\nlines\n"},
		{[]string{"--property", "print.timestamp=true"},
			"CreateTime:1700000000000\tv\nCreateTime:1700000000001\tnull\nCreateTime:1700000000002\ttwo\nlines\n"},
		{[]string{"--property", "print.partition=true", "--property", "print.offset=TRUE"},
			"Partition:0\tOffset:0\tv\nPartition:0\tOffset:1\tnull\nPartition:0\tOffset:2\ttwo\nlines\n"},
		{[]string{"--property", "print.headers=true"}, "h1:v1,h2:null\tv\nNO_HEADERS\tnull\nNO_HEADERS\ttwo\nlines\n"},
		{[]string{"--property", "print.headers=true", "--property", "headers.separator=;", "--property", "null.literal=NIL"},
			"h1:v1;h2:NIL\tv\nNO_HEADERS\tNIL\nNO_HEADERS\ttwo\nlines\n"},
		// Without the value, the last field ends the line.
		{[]string{"--property", "print.value=false", "--property", "print.offset=true", "--property", "print.key=true"},
			"Offset:0\tk\nOffset:1\tnull\nOffset:2\t\n"},
		{[]string{"--property", "print.value=false", "--property", "print.offset=true"}, "Offset:0\nOffset:1\nOffset:2\n"},
		{[]string{"--property", "print.value=false"}, ""},
		{[]string{"--property", "line.separator=|", "--property", "print.key=true"}, "k\tv|null\tnull|\ttwo\nlines|"},
		{[]string{"--property", "print.epoch=true", "--property", "print.delivery=true", "--property", "print.value=false"},
			"Delivery:NOT_PRESENT\tEpoch:0\nDelivery:NOT_PRESENT\tEpoch:0\nDelivery:NOT_PRESENT\tEpoch:0\n"},
		{[]string{"--formatter", "kafka.tools.DefaultMessageFormatter", "--property", "print.timestamp=false",
			"--property", "key.deserializer=org.apache.kafka.common.serialization.StringDeserializer"}, "v\nnull\ntwo\nlines\n"},
	} {
		require.Equal(t, tc.want, consumeAll(t, dir, tc.args...), "%v", tc.args)
	}
}

// TestConsumeOffsetsFormatter consumes __consumer_offsets after a group
// committed, with Kafka's formatters of its records.
func TestConsumeOffsetsFormatter(t *testing.T) {
	dir := newTopic(t, 2)
	produceLines(t, dir, "a\nb\nc\n", "--partition", "1")
	_, stderr, code := cli(t, "consume", "--dir", dir, "--topic", "t", "--group", "g", "--from-beginning", "--max-messages", "3")
	require.Equal(t, exitOK, code, stderr)

	n, err := partlog.Open(dir)
	require.NoError(t, err)
	descs, err := n.DescribeTopics(group.OffsetsTopic)
	require.NoError(t, err)
	require.NoError(t, n.Close())
	var total int64
	for _, p := range descs[0].Partitions {
		total += p.HighWatermark
	}
	consumeOffsets := func(formatter string) string {
		t.Helper()
		stdout, stderr, code := cli(t, "consume", "--dir", dir, "--topic", group.OffsetsTopic, "--from-beginning",
			"--max-messages", strconv.FormatInt(total, 10), "--timeout", "1m", "--formatter", formatter)
		require.Equal(t, exitOK, code, stderr)
		return stdout
	}
	commitTimestamp := regexp.MustCompile(`commitTimestamp=\d+,`)
	for _, name := range []string{"offsets", "kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter"} {
		require.Equal(t, "[g,t,1]::OffsetAndMetadata(offset=3, leaderEpoch=Optional.empty, metadata=, commitTimestamp=T, expireTimestamp=None)\n",
			commitTimestamp.ReplaceAllString(consumeOffsets(name), "commitTimestamp=T,"))
	}
	memberID := regexp.MustCompile(`console-consumer-[0-9a-f-]+`)
	require.Equal(t, "g::GroupMetadata(groupId=g, generation=1, protocolType=Some(consumer), currentState=Stable, members=HashMap("+
		"M -> MemberMetadata(memberId=M, groupInstanceId=None, clientId=console-consumer, clientHost=, sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, supportedProtocols=List(range))))\n"+
		"g::GroupMetadata(groupId=g, generation=2, protocolType=Some(consumer), currentState=Empty, members=HashMap())\n",
		memberID.ReplaceAllString(consumeOffsets("kafka.coordinator.group.GroupMetadataManager$GroupMetadataMessageFormatter"), "M"))
}

// TestOffsetsFormatterRecords prints every kind of __consumer_offsets
// record, of each version, as Kafka's formatters print them.
func TestOffsetsFormatterRecords(t *testing.T) {
	records := offsetsFixture()
	var errOut bytes.Buffer
	format := func(f messageFormatter) string {
		var b []byte
		for i := range records {
			b = f.append(b, &records[i])
		}
		return string(b)
	}
	require.Equal(t, "[g,t,0]::OffsetAndMetadata(offset=5, leaderEpoch=Optional[3], metadata=m, commitTimestamp=1700000000000, expireTimestamp=None)\n"+
		"[g,t,1]::OffsetAndMetadata(offset=7, leaderEpoch=Optional.empty, metadata=, commitTimestamp=1700000000001, expireTimestamp=Some(1700000600000))\n"+
		"[g,t,0]::NULL\n",
		format(&offsetsFormatter{offsets: true, stderr: &errOut}))
	require.Equal(t, "g::GroupMetadata(groupId=g, generation=4, protocolType=Some(consumer), currentState=Stable, members=HashMap("+
		"m1 -> MemberMetadata(memberId=m1, groupInstanceId=Some(i1), clientId=c1, clientHost=/10.0.0.1, sessionTimeoutMs=45000, rebalanceTimeoutMs=60000, supportedProtocols=List(range)), "+
		"m2 -> MemberMetadata(memberId=m2, groupInstanceId=None, clientId=c2, clientHost=/10.0.0.2, sessionTimeoutMs=10000, rebalanceTimeoutMs=20000, supportedProtocols=List(range))))\n"+
		"g::NULL\n",
		format(&offsetsFormatter{groups: true, stderr: &errOut}))
	// A record of an unknown version is skipped, as Kafka's formatters
	// skip one; a corrupt one is reported.
	require.Equal(t, strings.Repeat("partlog: consume: __consumer_offsets-0 offset 7: cannot decode it: key: group: corrupt record in __consumer_offsets: cut short, 3 bytes left\n", 2), errOut.String())
}

// offsetsFixture returns records of __consumer_offsets of every kind: offset
// commits (value v3 and v1), a tombstone, a group with two members, a
// group tombstone, a record without a key and one of an unknown version.
func offsetsFixture() []consumer.Record {
	v1 := []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0x01, 0, 0, 1, 0x8b, 0xcf, 0xee, 0x8f, 0xc0}
	assignment := consumer.Assignment{Partitions: []kafka.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}}}.Encode()
	gv := group.GroupValue{ProtocolType: "consumer", Generation: 4, Protocol: "range", Leader: "m1", CurrentStateTimestamp: 1700000000000,
		Members: []group.MemberValue{
			{MemberID: "m1", GroupInstanceID: "i1", ClientID: "c1", ClientHost: "/10.0.0.1", RebalanceTimeout: 60000, SessionTimeout: 45000, Assignment: assignment},
			{MemberID: "m2", ClientID: "c2", ClientHost: "/10.0.0.2", RebalanceTimeout: 20000, SessionTimeout: 10000,
				Assignment: consumer.Assignment{UserData: []byte{0, 0x0a, 0xbc}}.Encode()},
		}}
	recs := []consumer.Record{
		{Key: group.OffsetKey("g", "t", 0).Encode(), Value: group.OffsetValue{Offset: 5, LeaderEpoch: 3, Metadata: "m", CommitTimestamp: 1700000000000}.Encode()},
		{Key: group.OffsetKey("g", "t", 1).Encode(), Value: v1},
		{Key: group.GroupKey("g").Encode(), Value: gv.Encode()},
		{Key: group.OffsetKey("g", "t", 0).Encode()},
		{Key: group.GroupKey("g").Encode()},
		{Value: []byte("no key")},
		{Key: []byte{0, 9, 0, 1, 'g'}, Value: []byte{}},
		{Key: []byte{0, 1, 0, 9, 'g'}, Value: []byte{}},
	}
	for i := range recs {
		recs[i].Topic, recs[i].Offset = group.OffsetsTopic, int64(i)
	}
	return recs
}

// TestDumpLogOffsetsDecoder dumps a segment of __consumer_offsets with
// --offsets-decoder: each record's key and payload decoded as Kafka's
// kafka-dump-log.sh --offsets-decoder prints them, from the same decoding
// as consume's formatters.
func TestDumpLogOffsetsDecoder(t *testing.T) {
	b := record.NewBuilder(record.DefaultBatchOptions())
	for i, r := range offsetsFixture() {
		b.Append(record.Record{Timestamp: ts0 + int64(i), Key: r.Key, Value: r.Value})
	}
	fx := writeSegment(t, 0, b.Build())
	stdout, stderr, code := cli(t, "dump-log", "--offsets-decoder", fx.path(".log"))
	require.Equal(t, exitOK, code, stderr)
	got := lines(stdout)
	require.Len(t, got, 3+8)
	require.Equal(t, []string{
		"| offset: 0 CreateTime: 1700000000000 keySize: 12 valueSize: 25 sequence: -1 headerKeys: [] key: offset_commit::group=g,partition=t-0 payload: offset=5,metadata=m",
		"| offset: 1 CreateTime: 1700000000001 keySize: 12 valueSize: 28 sequence: -1 headerKeys: [] key: offset_commit::group=g,partition=t-1 payload: offset=7",
		`| offset: 2 CreateTime: 1700000000002 keySize: 5 valueSize: 153 sequence: -1 headerKeys: [] key: group_metadata::group=g payload: {"protocolType":"consumer","protocol":"range","generationId":4,"assignment":"{m1=[t-0, t-1],m2=[]:ABC}"}`,
		"| offset: 3 CreateTime: 1700000000003 keySize: 12 valueSize: -1 sequence: -1 headerKeys: [] key: offset_commit::group=g,partition=t-0 payload: <DELETE>",
		"| offset: 4 CreateTime: 1700000000004 keySize: 5 valueSize: -1 sequence: -1 headerKeys: [] key: group_metadata::group=g payload: <DELETE>",
		"| offset: 5 CreateTime: 1700000000005 keySize: -1 valueSize: 6 sequence: -1 headerKeys: [] error: cannot decode a record of __consumer_offsets without a key",
		"| offset: 6 CreateTime: 1700000000006 keySize: 5 valueSize: 0 sequence: -1 headerKeys: [] error: cannot decode as a record of __consumer_offsets: group: unknown record version in __consumer_offsets: key version 9",
		"| offset: 7 CreateTime: 1700000000007 keySize: 5 valueSize: 0 sequence: -1 headerKeys: [] error: cannot decode as a record of __consumer_offsets: key: group: corrupt record in __consumer_offsets: cut short, 3 bytes left",
	}, got[3:])
}
