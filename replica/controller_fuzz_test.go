package replica_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/partlog/partlog/replica"
)

// metadataSamples are one record of each type.
var metadataSamples = []replica.MetadataRecord{
	{Type: replica.RecordRegisterNode, Node: 3, BrokerEpoch: 7},
	{Type: replica.RecordFenceNode, Node: 3, BrokerEpoch: 7},
	{Type: replica.RecordUnfenceNode, Node: 3, BrokerEpoch: 7},
	{Type: replica.RecordTopic, Topic: "orders", Partitions: 6, Unclean: replica.AllowUnclean},
	{Type: replica.RecordPartition, Topic: "orders", Partition: 2, State: replica.LeaderAndISR{
		Leader: 1, LeaderEpoch: 4, PartitionEpoch: 9, Replicas: []int32{1, 2, 0}, ISR: []int32{1, 0}}},
	{Type: replica.RecordPartition, Topic: "orders", Partition: 0, State: replica.LeaderAndISR{
		Leader: replica.NoLeader, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{0}, ISR: []int32{0}}},
	{Type: replica.RecordRemoveTopic, Topic: "orders"},
}

func TestMetadataRecordRoundTrip(t *testing.T) {
	for _, r := range metadataSamples {
		b := replica.EncodeMetadataRecord(nil, r)
		got, err := replica.DecodeMetadataRecord(b)
		if err != nil {
			t.Fatalf("%s: %v", r.Type, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("decoded %+v, want %+v", got, r)
		}
		for n := range len(b) {
			if _, err := replica.DecodeMetadataRecord(b[:n]); !errors.Is(err, replica.ErrCorruptMetadata) {
				t.Fatalf("%s cut to %d bytes: %v", r.Type, n, err)
			}
		}
		if _, err := replica.DecodeMetadataRecord(append(b, 0)); !errors.Is(err, replica.ErrCorruptMetadata) {
			t.Fatalf("%s with a byte more: %v", r.Type, err)
		}
		v := bytes.Clone(b)
		v[0] = replica.MetadataRecordVersion + 1
		if _, err := replica.DecodeMetadataRecord(v); !errors.Is(err, replica.ErrCorruptMetadata) {
			t.Fatalf("%s in an unknown version: %v", r.Type, err)
		}
	}
}

// FuzzDecodeMetadataRecord: the decoder never panics, fails only with
// ErrCorruptMetadata, and what it accepts encodes back to the same bytes.
func FuzzDecodeMetadataRecord(f *testing.F) {
	for _, r := range metadataSamples {
		f.Add(replica.EncodeMetadataRecord(nil, r))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := replica.DecodeMetadataRecord(b)
		if err != nil {
			if !errors.Is(err, replica.ErrCorruptMetadata) {
				t.Fatalf("error %v is not ErrCorruptMetadata", err)
			}
			return
		}
		if again := replica.EncodeMetadataRecord(nil, r); !bytes.Equal(again, b) {
			t.Fatalf("%x decoded to %+v, which encodes to %x", b, r, again)
		}
	})
}
