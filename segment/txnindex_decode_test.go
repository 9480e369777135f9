package segment

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecodeTxnIndex (reliability plan, fuzz target 32): any bytes decode
// without a panic into entries that re-encode to a prefix of the input,
// and anything left over is reported as ErrCorrupt.
func FuzzDecodeTxnIndex(f *testing.F) {
	good := appendTxnEntry(appendTxnEntry(nil, AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 3, LastStableOffset: 4}),
		AbortedTxn{ProducerID: 2, FirstOffset: 2, LastOffset: 7, LastStableOffset: 5})
	f.Add(good, int64(0))
	f.Add(good[:40], int64(0))
	f.Add(append(append([]byte(nil), good...), 1, 2, 3), int64(0))
	f.Add(good, int64(5))
	f.Fuzz(func(t *testing.T, data []byte, base int64) {
		txns, err := DecodeTxnIndex(data, base)
		var enc []byte
		for _, e := range txns {
			enc = appendTxnEntry(enc, e)
		}
		if !bytes.HasPrefix(data, enc) {
			t.Fatalf("the entries do not re-encode to a prefix of the input")
		}
		if (len(enc) < len(data)) != (err != nil) || err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decoded %d of %d bytes, err %v", len(enc), len(data), err)
		}
	})
}
