package record

import (
	"testing"
)

// benchRecords returns n records of 100-byte values with short keys, the
// shape the log's and producer's throughput targets are stated in.
func benchRecords(n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		value := make([]byte, 100)
		for j := range value {
			value[j] = byte(i + j*7) // compressible, not constant
		}
		recs[i] = Record{
			Timestamp: 1_700_000_000_000 + int64(i/10),
			Key:       []byte{byte(i), byte(i >> 8)},
			Value:     value,
		}
	}
	return recs
}

func BenchmarkBuilder(b *testing.B) {
	recs := benchRecords(1000)
	for _, c := range allCodecs {
		b.Run(c.String(), func(b *testing.B) {
			opts := DefaultBatchOptions()
			opts.Compression = c
			bl := NewBuilder(opts)
			dst := make([]byte, 0, 256<<10)
			b.SetBytes(int64(len(recs) * 100))
			b.ReportAllocs()
			for b.Loop() {
				bl.Reset(opts)
				for _, r := range recs {
					bl.Append(r)
				}
				dst = bl.AppendTo(dst[:0])
			}
			b.ReportMetric(float64(b.N)*float64(len(recs))/b.Elapsed().Seconds(), "records/s")
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	recs := benchRecords(1000)
	for _, c := range allCodecs {
		b.Run(c.String(), func(b *testing.B) {
			opts := DefaultBatchOptions()
			opts.Compression = c
			raw := build(b, opts, recs)
			b.SetBytes(int64(len(recs) * 100))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(raw); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*float64(len(recs))/b.Elapsed().Seconds(), "records/s")
		})
	}
}

func BenchmarkValidate(b *testing.B) {
	raw := build(b, DefaultBatchOptions(), benchRecords(1000))
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Validate(raw); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "records/s")
}
