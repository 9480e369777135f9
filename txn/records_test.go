package txn

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/partlog/partlog/kafka"
)

// ongoingValue is an Ongoing transaction of producer 5, epoch 2, over
// t-0 and t-3, whose client speaks TV2.
func ongoingValue(version int16) Value {
	return Value{
		Version: version, ProducerID: 5, PreviousProducerID: -1, NextProducerID: -1, ProducerEpoch: 2,
		TransactionTimeoutMs: 60000, State: Ongoing, Partitions: []TopicPartitions{{Topic: "t", Partitions: []int32{0, 3}}},
		LastUpdateTimestampMs: 1000, StartTimestampMs: 900, ClientTransactionVersion: TV2, NextProducerEpoch: -1,
	}
}

// TestRecordBytes checks the layouts against bytes written by hand from
// Kafka's TransactionLogKey.json and TransactionLogValue.json.
func TestRecordBytes(t *testing.T) {
	// Key v0: version, then "t" as a classic string.
	require.Equal(t, "0000"+"0001"+"74", hex.EncodeToString(EncodeKey("t")))

	v1 := ongoingValue(1)
	want1 := "0001" + // version
		"0000000000000005" + "0002" + "0000ea60" + "01" + // producer id, epoch, timeout, Ongoing
		"02" + "0274" + "03" + "00000000" + "00000003" + "00" + // one topic: "t", [0, 3], no tags
		"00000000000003e8" + "0000000000000384" + // last update 1000, start 900
		"01" + "02" + "02" + "0002" // one tagged field: tag 2, 2 bytes, TV2
	v := v1
	require.Equal(t, want1, hex.EncodeToString(v.Encode()))

	// Version 0: classic lengths, no tagged fields.
	v0 := ongoingValue(0)
	want0 := "0000" + "0000000000000005" + "0002" + "0000ea60" + "01" +
		"00000001" + "000174" + "00000002" + "00000000" + "00000003" +
		"00000000000003e8" + "0000000000000384"
	require.Equal(t, want0, hex.EncodeToString(v0.Encode()))
	got, err := DecodeValue(mustHex(t, want0))
	require.NoError(t, err)
	v0.ClientTransactionVersion = TV0 // version 0 cannot hold it
	require.Equal(t, v0, got)

	// Empty: null partitions (compact 0); the other tagged fields.
	empty := Value{Version: 1, ProducerID: 7, PreviousProducerID: 4, NextProducerID: 9, ProducerEpoch: 0, TransactionTimeoutMs: 1,
		State: Empty, LastUpdateTimestampMs: 2, StartTimestampMs: -1, NextProducerEpoch: 3}
	wantEmpty := "0001" + "0000000000000007" + "0000" + "00000001" + "00" + "00" +
		"0000000000000002" + "ffffffffffffffff" +
		"03" + "00" + "08" + "0000000000000004" + "01" + "08" + "0000000000000009" + "03" + "02" + "0003"
	require.Equal(t, wantEmpty, hex.EncodeToString(empty.Encode()))
	got, err = DecodeValue(mustHex(t, wantEmpty))
	require.NoError(t, err)
	require.Equal(t, empty, got)
}

// TestRecordsMatchFranzGo checks both ways against franz-go's kmsg, an
// independent implementation of the same schema.
func TestRecordsMatchFranzGo(t *testing.T) {
	k := kmsg.NewTxnMetadataKey()
	require.NoError(t, k.ReadFrom(EncodeKey("billing-7")))
	require.Equal(t, "billing-7", k.TransactionalID)
	id, err := DecodeKey(k.AppendTo(nil))
	require.NoError(t, err)
	require.Equal(t, "billing-7", id)

	for _, v := range []Value{ongoingValue(0), ongoingValue(1),
		{Version: 1, ProducerID: 1, PreviousProducerID: -1, NextProducerID: 8, ProducerEpoch: 32767, TransactionTimeoutMs: 5,
			State: PrepareCommit, Partitions: []TopicPartitions{{Topic: "a", Partitions: []int32{1}}, {Topic: "b", Partitions: []int32{}}},
			LastUpdateTimestampMs: 3, StartTimestampMs: 2, ClientTransactionVersion: TV2, NextProducerEpoch: -1},
		{Version: 1, ProducerID: 1, PreviousProducerID: -1, NextProducerID: -1, TransactionTimeoutMs: 5, State: CompleteAbort,
			Partitions: []TopicPartitions{}, LastUpdateTimestampMs: 3, StartTimestampMs: 2, NextProducerEpoch: -1},
	} {
		b := v.Encode()
		kv := kmsg.NewTxnMetadataValue()
		require.NoError(t, kv.ReadFrom(b))
		require.Equal(t, v.ProducerID, kv.ProducerID)
		require.Equal(t, v.ProducerEpoch, kv.ProducerEpoch)
		require.Equal(t, v.TransactionTimeoutMs, kv.TimeoutMillis)
		require.Equal(t, int8(v.State), int8(kv.State))
		require.Equal(t, v.LastUpdateTimestampMs, kv.LastUpdateTimestamp)
		require.Equal(t, v.StartTimestampMs, kv.StartTimestamp)
		require.Len(t, kv.Topics, len(v.Partitions))
		for i, tp := range v.Partitions {
			require.Equal(t, tp.Topic, kv.Topics[i].Topic)
			require.True(t, slices.Equal(tp.Partitions, kv.Topics[i].Partitions))
		}
		if v.Version >= 1 {
			require.Equal(t, v.PreviousProducerID, kv.PreviousProducerID)
			require.Equal(t, v.NextProducerID, kv.NextProducerID)
			require.Equal(t, int16(v.ClientTransactionVersion), kv.ClientTransactionVersion)
		}
		require.Equal(t, b, kv.AppendTo(nil), "franz-go writes the same bytes")
	}

	// A tagged field this package does not know, written by franz-go, is
	// kept and written back.
	kv := kmsg.NewTxnMetadataValue()
	kv.Version, kv.State, kv.Topics = 1, kmsg.TransactionState(Ongoing), []kmsg.TxnMetadataValueTopic{{Topic: "t", Partitions: []int32{2}}}
	kv.UnknownTags.Set(9, []byte{1, 2, 3})
	b := kv.AppendTo(nil)
	v, err := DecodeValue(b)
	require.NoError(t, err)
	require.Equal(t, []taggedField{{9, []byte{1, 2, 3}}}, v.unknown)
	require.Equal(t, b, v.Encode())
}

func TestDecodeErrors(t *testing.T) {
	for name, c := range map[string]struct {
		b    string
		want error
	}{
		"key version":        {"0001" + "0001" + "74", ErrUnknownVersion},
		"key short":          {"0000" + "0005" + "74", ErrCorrupt},
		"key null":           {"0000" + "ffff", ErrCorrupt},
		"key left over":      {"0000" + "0001" + "7400", ErrCorrupt},
		"value version":      {"0002", ErrUnknownVersion},
		"value empty":        {"", ErrCorrupt},
		"status":             {"0001" + "0000000000000001" + "0000" + "00000001" + "09" + "00" + "0000000000000000" + "0000000000000000" + "00", ErrCorrupt},
		"huge array":         {"0000" + "0000000000000001" + "0000" + "00000001" + "01" + "7fffffff", ErrCorrupt},
		"null partition ids": {"0001" + "0000000000000001" + "0000" + "00000001" + "01" + "02" + "0274" + "00" + "00", ErrCorrupt},
		"long varint":        {"0001" + "0000000000000001" + "0000" + "00000001" + "01" + "8000" + "0000000000000000" + "0000000000000000" + "00", ErrCorrupt},
		"tags out of order":  {"0001" + "0000000000000001" + "0000" + "00000001" + "00" + "00" + "0000000000000000" + "0000000000000000" + "02" + "010800000000000000010008" + "0000000000000001", ErrCorrupt},
		"tag default":        {"0001" + "0000000000000001" + "0000" + "00000001" + "00" + "00" + "0000000000000000" + "0000000000000000" + "01" + "00" + "08" + "ffffffffffffffff", ErrCorrupt},
		"tag size":           {"0001" + "0000000000000001" + "0000" + "00000001" + "00" + "00" + "0000000000000000" + "0000000000000000" + "01" + "02" + "01" + "02", ErrCorrupt},
	} {
		t.Run(name, func(t *testing.T) {
			b := mustHex(t, c.b)
			_, err := DecodeKey(b)
			if name[:3] != "key" {
				_, err = DecodeValue(b)
			}
			require.ErrorIs(t, err, c.want)
		})
	}
}

// TestDecodeLongString: a compact string may be no longer than a classic
// one, or it would not encode back the same.
func TestDecodeLongString(t *testing.T) {
	b := mustHex(t, "0001"+"0000000000000001"+"0000"+"00000001"+"01"+"02")
	b = binary.AppendUvarint(b, 1<<15+1)
	b = append(b, make([]byte, 1<<15)...)
	b = append(b, mustHex(t, "01"+"00"+"00"+"0000000000000000"+"0000000000000000"+"00")...)
	_, err := DecodeValue(b)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "string length 32768")
}

func TestPartitionForMatchesKafka(t *testing.T) {
	// Java: "lzl".hashCode() == 107678, "polygenelubricants".hashCode()
	// == Integer.MIN_VALUE, which Utils.abs takes to 0.
	require.Equal(t, int32(107678%50), PartitionFor("lzl", DefaultStatePartitions))
	require.Equal(t, int32(0), PartitionFor("polygenelubricants", DefaultStatePartitions))
}

// TestKafkaErrorCodes checks the codes this package answers with against
// Kafka's Errors.java.
func TestKafkaErrorCodes(t *testing.T) {
	for code, err := range map[int16]*kafka.Error{
		48: kafka.ErrInvalidTxnState, 49: kafka.ErrInvalidProducerIDMapping, 50: kafka.ErrInvalidTransactionTimeout,
		51: kafka.ErrConcurrentTransactions, 52: kafka.ErrTransactionCoordinatorFenced, 105: kafka.ErrTransactionalIDNotFound,
		120: kafka.ErrTransactionAbortable, 90: kafka.ErrProducerFenced, 47: kafka.ErrInvalidProducerEpoch,
	} {
		require.Equal(t, code, err.Code)
		require.True(t, errors.Is(kafka.ErrorForCode(code), err), "code %d", code)
		require.Equal(t, code == 51, kafka.IsRetriable(err), "retriability of %s", err.Name)
	}
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

// FuzzDecodeKey: decoding never panics, fails only with ErrCorrupt or
// ErrUnknownVersion, and a decoded key encodes to the bytes it came from.
func FuzzDecodeKey(f *testing.F) {
	f.Add(EncodeKey("billing"))
	f.Add(EncodeKey(""))
	f.Add([]byte{0, 1, 0, 1, 't'})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := DecodeKey(b)
		if decodeFailed(t, err) {
			return
		}
		if again := EncodeKey(id); !bytes.Equal(again, b) {
			t.Fatalf("%x decodes to %q, which encodes to %x", b, id, again)
		}
	})
}

// FuzzDecodeValue: decoding never panics or allocates without bound, fails
// only with ErrCorrupt or ErrUnknownVersion, and a decoded value encodes to
// the bytes it came from (unknown tagged fields included).
func FuzzDecodeValue(f *testing.F) {
	for _, version := range []int16{0, 1} {
		v := ongoingValue(version)
		f.Add(v.Encode())
	}
	for _, s := range []State{Empty, PrepareCommit, CompleteAbort} {
		v := Value{Version: 1, ProducerID: 3, PreviousProducerID: 2, NextProducerID: -1, ProducerEpoch: 9, State: s,
			NextProducerEpoch: -1, unknown: []taggedField{{7, []byte{1}}}}
		if s != Empty {
			v.Partitions = []TopicPartitions{{Topic: "x", Partitions: []int32{5}, unknown: []taggedField{{0, nil}}}}
		}
		f.Add(v.Encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeValue(b)
		if decodeFailed(t, err) {
			return
		}
		if again := v.Encode(); !bytes.Equal(again, b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, v, again)
		}
	})
}

// decodeFailed reports whether err is a failure, which must be ErrCorrupt
// or ErrUnknownVersion.
func decodeFailed(t *testing.T, err error) bool {
	if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("unexpected error %v", err)
	}
	return err != nil
}
