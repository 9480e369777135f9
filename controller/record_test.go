package controller_test

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/quota"
	"github.com/partlog/partlog/replica"
)

// metadataSamples are one record of each type.
var metadataSamples = []controller.Record{
	{Type: controller.RecordRegisterNode, Node: 3, BrokerEpoch: 7},
	{Type: controller.RecordRegisterNode, Node: 4, BrokerEpoch: 8, Address: "10.0.0.4:9092"},
	{Type: controller.RecordNodeAddress, Node: 4, BrokerEpoch: 8, Address: "10.0.0.5:9092"},
	{Type: controller.RecordProducerIDs, Node: 4, NextProducerID: 3000},
	{Type: controller.RecordFenceNode, Node: 3, BrokerEpoch: 7},
	{Type: controller.RecordUnfenceNode, Node: 3, BrokerEpoch: 7},
	{Type: controller.RecordTopic, Topic: "orders", Partitions: 6, Unclean: controller.AllowUnclean},
	{Type: controller.RecordTopic, Topic: "payments", Partitions: 1, ID: "5f2c1b7e-0d3a-4c8e-9f61-2a7b3c4d5e6f",
		Configs: map[string]string{"retention.ms": "604800000", "min.insync.replicas": "2", "cleanup.policy": "", "z": "last"}},
	{Type: controller.RecordPartition, Topic: "orders", Partition: 2, State: replica.LeaderAndISR{
		Leader: 1, LeaderEpoch: 4, PartitionEpoch: 9, Replicas: []int32{1, 2, 0}, ISR: []int32{1, 0}}},
	{Type: controller.RecordPartition, Topic: "orders", Partition: 0, State: replica.LeaderAndISR{
		Leader: replica.NoLeader, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{0}, ISR: []int32{0}}},
	{Type: controller.RecordPartition, Topic: "orders", Partition: 1, State: replica.LeaderAndISR{
		Leader: 2, LeaderEpoch: 3, PartitionEpoch: 7, Replicas: []int32{4, 5, 2}, ISR: []int32{5, 2},
		AddingReplicas: []int32{4, 5}, RemovingReplicas: []int32{2}}},
	{Type: controller.RecordUnregisterNode, Node: 2},
	{Type: controller.RecordRemoveTopic, Topic: "orders"},
	{Type: controller.RecordTopicConfig, Topic: "orders", Unclean: controller.AllowUnclean, Configs: map[string]string{"retention.ms": "1000"}},
	{Type: controller.RecordScramCredential, User: "alice", Mechanism: "SCRAM-SHA-256", Scram: auth.ScramCredential{
		Salt: []byte("salt"), Iterations: 8192, StoredKey: []byte("stored key"), ServerKey: []byte("server key")}},
	{Type: controller.RecordRemoveScramCredential, User: "alice", Mechanism: "SCRAM-SHA-512"},
	{Type: controller.RecordAccessControlEntry, ACLID: 7, ACL: auth.ACL{ResourceType: auth.TopicResource, ResourceName: "orders",
		PatternType: auth.PrefixedPattern, Principal: "User:alice", Host: "10.0.0.1", Operation: auth.DescribeConfigsOperation, Permission: auth.Deny}},
	{Type: controller.RecordRemoveAccessControlEntry, ACLID: 1 << 40},
	{Type: controller.RecordClientQuota, QuotaEntity: quota.Entity{User: "alice", ClientID: quota.Default},
		QuotaKey: quota.ProducerByteRate, QuotaValue: 1048576.5},
	{Type: controller.RecordClientQuota, QuotaEntity: quota.Entity{ClientID: "app"}, QuotaKey: quota.RequestPercentage, QuotaRemove: true},
}

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range metadataSamples {
		b := controller.AppendRecord(nil, r)
		got, err := controller.DecodeRecord(b)
		if err != nil {
			t.Fatalf("%s: %v", r.Type, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("decoded %+v, want %+v", got, r)
		}
		for n := range len(b) {
			if _, err := controller.DecodeRecord(b[:n]); !errors.Is(err, controller.ErrCorruptMetadata) {
				t.Fatalf("%s cut to %d bytes: %v", r.Type, n, err)
			}
		}
		if _, err := controller.DecodeRecord(append(b, 0)); !errors.Is(err, controller.ErrCorruptMetadata) {
			t.Fatalf("%s with a byte more: %v", r.Type, err)
		}
		v := bytes.Clone(b)
		v[0] = controller.RecordVersion + 1
		if _, err := controller.DecodeRecord(v); !errors.Is(err, controller.ErrCorruptMetadata) {
			t.Fatalf("%s in an unknown version: %v", r.Type, err)
		}
	}
}

// metadataV0Samples are records as version 0 wrote them: a topic without
// id and configs, and the other types, which version 1 left alone.
var metadataV0Samples = [][]byte{
	{0, byte(controller.RecordTopic), 0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0, 0, 0, 6, 1},
	{0, byte(controller.RecordRegisterNode), 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 7},
	{0, byte(controller.RecordPartition), 0, 1, 'o', 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 9,
		0, 2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 1, 0, 0, 0, 1},
	{0, byte(controller.RecordRemoveTopic), 0, 1, 'o'},
}

// Records version 0 wrote still decode: a topic without id or configs, a
// registration without an address, and the other types as they were;
// with version 1's topic fields after them, a version 0 topic record is
// corrupt.
func TestRecordVersion0(t *testing.T) {
	want := []controller.Record{
		{Type: controller.RecordTopic, Topic: "orders", Partitions: 6, Unclean: controller.AllowUnclean},
		{Type: controller.RecordRegisterNode, Node: 3, BrokerEpoch: 7},
		{Type: controller.RecordPartition, Topic: "o", Partition: 2, State: replica.LeaderAndISR{
			Leader: 1, LeaderEpoch: 4, PartitionEpoch: 9, Replicas: []int32{1, 2}, ISR: []int32{1}}},
		{Type: controller.RecordRemoveTopic, Topic: "o"},
	}
	for i, b := range metadataV0Samples {
		got, err := controller.DecodeRecord(b)
		if err != nil {
			t.Fatalf("%x: %v", b, err)
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("%x decoded to %+v, want %+v", b, got, want[i])
		}
		now := controller.AppendRecord(nil, got)
		if now[0] != controller.RecordVersion {
			t.Fatalf("encoded in version %d, want %d", now[0], controller.RecordVersion)
		}
		grown := got.Type == controller.RecordTopic || got.Type == controller.RecordRegisterNode || got.Type == controller.RecordPartition
		if !grown && !bytes.Equal(now[1:], b[1:]) {
			t.Fatalf("%s: version %d %x differs from version 0 %x beyond the version", got.Type, now[0], now, b)
		}
	}
	v1Topic := controller.AppendRecord(nil, want[0])
	v0Topic := append([]byte{0}, v1Topic[1:]...)
	if _, err := controller.DecodeRecord(v0Topic); !errors.Is(err, controller.ErrCorruptMetadata) {
		t.Fatalf("version 0 topic with an id and configs after it: %v", err)
	}
}

// Configs of a topic record encode in key order whatever the map's order,
// and a decoder refuses keys out of order, repeated or empty.
func TestRecordConfigsOrder(t *testing.T) {
	r := controller.Record{Type: controller.RecordTopic, Topic: "t", Partitions: 1,
		Configs: map[string]string{"b": "2", "a": "1", "c": "3"}}
	want := controller.AppendRecord(nil, r)
	for range 20 {
		if b := controller.AppendRecord(nil, r); !bytes.Equal(b, want) {
			t.Fatalf("encodings differ: %x and %x", b, want)
		}
	}
	keyA := bytes.Index(want, []byte{0, 1, 'a'})
	keyB := bytes.Index(want, []byte{0, 1, 'b'})
	if keyA < 0 || keyB < keyA {
		t.Fatalf("keys not in order in %x", want)
	}
	for name, patch := range map[string]func(b []byte){
		"b before a": func(b []byte) { b[keyA+2], b[keyB+2] = 'b', 'a' },
		"a twice":    func(b []byte) { b[keyB+2] = 'a' },
		"empty key":  func(b []byte) { b[keyA+1] = 0; b[keyA+2] = 0 }, // key "", value ""
	} {
		b := bytes.Clone(want)
		patch(b)
		if _, err := controller.DecodeRecord(b); !errors.Is(err, controller.ErrCorruptMetadata) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// FuzzDecodeRecord: the decoder never panics, fails only with
// ErrCorruptMetadata, and what it accepts encodes back to the same bytes;
// a version 0 record encodes to a current one that decodes to the same
// record.
func FuzzDecodeRecord(f *testing.F) {
	for _, r := range metadataSamples {
		f.Add(controller.AppendRecord(nil, r))
	}
	for _, b := range metadataV0Samples {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := controller.DecodeRecord(b)
		if err != nil {
			if !errors.Is(err, controller.ErrCorruptMetadata) {
				t.Fatalf("error %v is not ErrCorruptMetadata", err)
			}
			return
		}
		again := controller.AppendRecord(nil, r)
		if b[0] < controller.RecordVersion {
			r2, err := controller.DecodeRecord(again)
			if err != nil || !reflect.DeepEqual(r2, r) {
				t.Fatalf("version %d record %x decoded to %+v, which encodes to %x, which decodes to %+v, %v", b[0], b, r, again, r2, err)
			}
			return
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("%x decoded to %+v, which encodes to %x", b, r, again)
		}
	})
}

// A client quota record the machine would never write does not decode:
// an entity with neither a user nor a client id, no key, a value that is
// not positive or not finite, or a remove flag other than 0 and 1.
func TestRecordClientQuotaRefused(t *testing.T) {
	alice := quota.Entity{User: "alice"}
	for name, r := range map[string]controller.Record{
		"no entity":      {QuotaKey: quota.ProducerByteRate, QuotaValue: 1},
		"no key":         {QuotaEntity: alice, QuotaValue: 1},
		"zero value":     {QuotaEntity: alice, QuotaKey: quota.ProducerByteRate},
		"negative value": {QuotaEntity: alice, QuotaKey: quota.ProducerByteRate, QuotaValue: -1},
		"infinite value": {QuotaEntity: alice, QuotaKey: quota.ProducerByteRate, QuotaValue: math.Inf(1)},
		"NaN value":      {QuotaEntity: alice, QuotaKey: quota.ProducerByteRate, QuotaValue: math.NaN()},
	} {
		r.Type = controller.RecordClientQuota
		if _, err := controller.DecodeRecord(controller.AppendRecord(nil, r)); !errors.Is(err, controller.ErrCorruptMetadata) {
			t.Errorf("%s: %v, want ErrCorruptMetadata", name, err)
		}
	}
	removed := controller.AppendRecord(nil, controller.Record{Type: controller.RecordClientQuota, QuotaEntity: alice,
		QuotaKey: quota.ProducerByteRate, QuotaRemove: true})
	removed[len(removed)-1] = 2
	if _, err := controller.DecodeRecord(removed); !errors.Is(err, controller.ErrCorruptMetadata) {
		t.Errorf("remove flag 2: %v, want ErrCorruptMetadata", err)
	}
}
