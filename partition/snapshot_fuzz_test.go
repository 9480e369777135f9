package partition

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// snapshotSeeds are valid snapshots for the fuzzer to start from, in both
// versions.
func snapshotSeeds() [][]byte {
	entries := [][]ProducerStateEntry{
		nil,
		{{ProducerID: 1, ProducerEpoch: 0, LastTimestamp: 1000, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1}},
		{
			{ProducerID: 7, ProducerEpoch: 2, LastTimestamp: 5, CoordinatorEpoch: 3, CurrentTxnFirstOffset: 10, Batches: []BatchMetadata{
				{FirstSequence: 0, LastSequence: 2, FirstOffset: 10, LastOffset: 12, Timestamp: 4},
				{FirstSequence: 3, LastSequence: 3, FirstOffset: 20, LastOffset: 20, Timestamp: 5}}},
			{ProducerID: math.MaxInt64, ProducerEpoch: math.MaxInt16, LastTimestamp: -1, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1, Batches: []BatchMetadata{
				{FirstSequence: math.MaxInt32, LastSequence: 1, FirstOffset: 0, LastOffset: 2, Timestamp: -1}}},
		},
	}
	var out [][]byte
	for _, es := range entries {
		out = append(out, encodeSnapshot(es), encodeSnapshotVersion(es, 1))
	}
	return out
}

// FuzzDecodeSnapshot: decoding never panics, errors match
// ErrCorruptSnapshot, and whatever decodes encodes back to the same bytes.
func FuzzDecodeSnapshot(f *testing.F) {
	for _, s := range snapshotSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, v, err := decodeSnapshot(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("error %v does not match ErrCorruptSnapshot", err)
			}
			return
		}
		if again := encodeSnapshotVersion(entries, v); !bytes.Equal(again, b) {
			t.Fatalf("decoded %+v re-encodes to %x, not %x", entries, again, b)
		}
	})
}

func TestSnapshotRoundTripAndDamage(t *testing.T) {
	for _, s := range snapshotSeeds() {
		entries, v, err := decodeSnapshot(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(encodeSnapshotVersion(entries, v), s) {
			t.Fatal("round trip changed the bytes")
		}
		// Every single bit flip and every truncation is caught.
		for i := range len(s) * 8 {
			d := bytes.Clone(s)
			d[i/8] ^= 1 << (i % 8)
			if _, _, err := decodeSnapshot(d); !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("bit %d flipped: %v", i, err)
			}
		}
		for n := range len(s) {
			if _, _, err := decodeSnapshot(s[:n]); !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("cut to %d bytes: %v", n, err)
			}
		}
	}
}
