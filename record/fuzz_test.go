package record

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDecode feeds Decode arbitrary bytes. It must never panic, and
// whenever it accepts a batch, rebuilding the records with a Builder from
// the batch's own options must give a batch that decodes to the same
// records and header attributes.
func FuzzDecode(f *testing.F) {
	for _, seed := range decodeSeeds() {
		f.Add(seed.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
		// Mutations rarely keep the CRC and length right, so most inputs
		// stop at Validate. Decode them again with both fixed up, to
		// reach the records and the codecs.
		if len(data) >= HeaderSize {
			fixed := bytes.Clone(data)
			binary.BigEndian.PutUint32(fixed[BatchLengthOffset:], uint32(len(fixed)-LogOverhead))
			putCRC(fixed)
			checkDecode(t, fixed)
		}
	})
}

// checkDecode decodes data and, if that succeeds, rebuilds the records
// with a Builder from the batch's own options and checks the result decodes
// to the same.
func checkDecode(t *testing.T, data []byte) {
	if _, err := ParseHeader(data); err != nil {
		_, derr := Decode(data)
		require.Error(t, derr)
	}
	batch, err := Decode(data)
	if err != nil {
		return
	}
	h, err := Validate(data)
	require.NoError(t, err, "Decode accepted what Validate rejects")
	require.Equal(t, batch.Header, h)
	require.Len(t, batch.Records, int(h.NumRecords))

	b := NewBuilder(h.Options())
	for _, r := range batch.Records {
		b.AppendWithOffset(r)
	}
	again, err := Decode(b.Build())
	require.NoError(t, err)
	require.Equal(t, batch.Records, again.Records)
	require.Equal(t, h.BaseOffset, again.BaseOffset)
	require.Equal(t, h.ProducerID, again.ProducerID)
	require.Equal(t, h.ProducerEpoch, again.ProducerEpoch)
	require.Equal(t, h.BaseSequence, again.BaseSequence)
	require.Equal(t, h.PartitionLeaderEpoch, again.PartitionLeaderEpoch)
	mask := compressionMask | timestampTypeFlag | transactionalFlag | controlFlag // unused bits are dropped
	require.Equal(t, h.Attributes&mask, again.Attributes&mask)
	if h.Attributes.HasDeleteHorizon() && h.BaseTimestamp != 0 {
		require.True(t, again.Attributes.HasDeleteHorizon())
		require.Equal(t, h.BaseTimestamp, again.BaseTimestamp)
	}
}

// FuzzRoundTrip builds batches of fuzzer-chosen records (see
// fuzzRecords) and checks that they decode to exactly those records.
func FuzzRoundTrip(f *testing.F) {
	for _, seed := range roundTripSeeds() {
		f.Add(seed.codec, seed.baseTimestamp, seed.data)
	}
	f.Fuzz(func(t *testing.T, codec byte, baseTimestamp int64, data []byte) {
		recs := fuzzRecords(baseTimestamp, data)
		opts := DefaultBatchOptions()
		opts.Compression = Compression(codec % 5)
		b := NewBuilder(opts)
		for _, r := range recs {
			b.Append(r)
		}
		raw := b.Build()
		if opts.Compression == None {
			require.Len(t, raw, b.Size())
		}
		batch, err := Decode(raw)
		require.NoError(t, err)
		if len(recs) == 0 {
			require.Empty(t, batch.Records)
			return
		}
		require.Equal(t, withOffsets(0, recs), batch.Records)
		require.Equal(t, recs[0].Timestamp, batch.BaseTimestamp)
		maxTs := recs[0].Timestamp
		for _, r := range recs {
			maxTs = max(maxTs, r.Timestamp)
		}
		require.Equal(t, maxTs, batch.MaxTimestamp)
	})
}

// fuzzRecords reads records out of data. Per record: a flags byte (bit 0
// null key, bit 1 null value, bits 2-3 header count, bit 4 an 8-byte
// timestamp follows, else the base timestamp plus the flags byte), then
// the key and value as a length byte and bytes, then each header as a
// length byte (high bit: null value), key bytes, length byte and value
// bytes. Short data ends lengths early rather than failing.
func fuzzRecords(baseTimestamp int64, data []byte) []Record {
	next := func(n int) []byte {
		n = min(n, len(data))
		out := data[:n:n]
		data = data[n:]
		return out
	}
	nextByte := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	var recs []Record
	for len(data) > 0 && len(recs) < 200 {
		flags := nextByte()
		r := Record{Timestamp: baseTimestamp + int64(flags)}
		if flags&0x10 != 0 {
			var ts [8]byte
			copy(ts[:], next(8))
			r.Timestamp = int64(binary.BigEndian.Uint64(ts[:]))
		}
		if flags&0x01 == 0 {
			r.Key = bytes.Clone(next(nextByte()))
			if r.Key == nil {
				r.Key = []byte{}
			}
		}
		if flags&0x02 == 0 {
			r.Value = bytes.Clone(next(nextByte()))
			if r.Value == nil {
				r.Value = []byte{}
			}
		}
		for range (flags >> 2) & 3 {
			n := nextByte()
			h := RecordHeader{Key: string(next(n & 0x7f))}
			if n&0x80 == 0 {
				h.Value = bytes.Clone(next(nextByte()))
				if h.Value == nil {
					h.Value = []byte{}
				}
			}
			r.Headers = append(r.Headers, h)
		}
		recs = append(recs, r)
	}
	return recs
}

type decodeSeed struct {
	name string
	data []byte
}

// decodeSeeds returns FuzzDecode's seed corpus: valid batches of
// different shapes and every codec, control batches, and broken ones.
func decodeSeeds() []decodeSeed {
	var seeds []decodeSeed
	add := func(name string, data []byte) { seeds = append(seeds, decodeSeed{name, data}) }
	recs := sampleRecords(12)
	for _, c := range allCodecs {
		opts := DefaultBatchOptions()
		opts.Compression = c
		add("sample-"+c.String(), buildSeed(opts, recs))
	}
	opts := BatchOptions{BaseOffset: 1 << 33, PartitionLeaderEpoch: 9, ProducerID: 5, ProducerEpoch: 1, BaseSequence: 40, Transactional: true}
	add("transactional", buildSeed(opts, recs[:3]))
	add("empty", buildSeed(DefaultBatchOptions(), nil))
	add("one-null-record", buildSeed(DefaultBatchOptions(), []Record{{}}))
	add("control-commit", ControlBatch(ControlCommit, 5, 1, 3, 1_700_000_000_000))
	add("control-abort", ControlBatch(ControlAbort, 6, 2, 4, 1_700_000_000_000))

	logAppend := buildSeed(DefaultBatchOptions(), recs[:4])
	SetMaxTimestamp(logAppend, LogAppendTime, 1_800_000_000_000)
	add("log-append-time", logAppend)

	horizon := DefaultBatchOptions()
	horizon.DeleteHorizon = 1_700_000_500_000
	add("delete-horizon", buildSeed(horizon, recs[:4]))

	gappy := NewBuilder(DefaultBatchOptions())
	for i, r := range recs[:5] {
		r.Offset = int64(i * 3)
		gappy.AppendWithOffset(r)
	}
	add("offset-gaps", gappy.Build())

	// Raw snappy, not xerial-framed.
	plain := buildSeed(DefaultBatchOptions(), recs[:5])
	h, _ := ParseHeader(plain)
	h.Attributes = Attributes(Snappy)
	add("raw-snappy", rawBatch(h, snappyBlock(plain[HeaderSize:])))

	valid := buildSeed(DefaultBatchOptions(), recs[:3])
	add("truncated", valid[:len(valid)-5])
	flipped := bytes.Clone(valid)
	flipped[len(flipped)-3] ^= 0x40
	add("crc-mismatch", flipped)
	magic1 := bytes.Clone(valid)
	magic1[MagicOffset] = 1
	add("magic-1", magic1)
	add("null-header-key", rawBatch(Header{NumRecords: 1}, rawRecord(0, 0, 0, 1, 1, 2, 1, 1)))
	add("overlong-varint", rawBatch(Header{NumRecords: 1}, rawRecord(0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)))
	return seeds
}

type roundTripSeed struct {
	name          string
	codec         byte
	baseTimestamp int64
	data          []byte
}

// roundTripSeeds returns FuzzRoundTrip's seed corpus.
func roundTripSeeds() []roundTripSeed {
	return []roundTripSeed{
		{"empty", 0, 0, nil},
		{"nulls", 0, 1_700_000_000_000, []byte{0x03, 0x03, 0x00, 0, 0}},
		{"headers-gzip", 1, 1_700_000_000_000, []byte{0x0c, 1, 'k', 1, 'v', 1, 'a', 1, '1', 0x82, 'b', 0x83, 'c', 'd', 'e', 0x0c, 0, 0, 1, 'x', 0}},
		{"timestamps-snappy", 2, -5, []byte{0x10, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x13, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x03}},
		{"values-lz4", 3, 1, append([]byte{0x01, 200}, bytes.Repeat([]byte("abc"), 100)...)},
		{"values-zstd", 4, 1, append([]byte{0x00, 3, 'k', 'e', 'y', 255}, bytes.Repeat([]byte{0}, 255)...)},
	}
}

func buildSeed(opts BatchOptions, recs []Record) []byte {
	b := NewBuilder(opts)
	for _, r := range recs {
		b.Append(r)
	}
	return b.Build()
}

var genCorpus = flag.Bool("gen-corpus", false, "rewrite the fuzz seed corpus in testdata/fuzz")

// TestFuzzCorpus writes the seed corpus files with -gen-corpus, and
// otherwise checks that each seed has its file. The contents are not
// compared: compressed seeds change with the codec libraries' versions.
// Under plain go test the fuzz targets run every file.
func TestFuzzCorpus(t *testing.T) {
	files := map[string][]byte{}
	for _, s := range decodeSeeds() {
		files[filepath.Join("FuzzDecode", s.name)] = corpusFile(s.data)
	}
	for _, s := range roundTripSeeds() {
		files[filepath.Join("FuzzRoundTrip", s.name)] = corpusFile(s.codec, s.baseTimestamp, s.data)
	}
	for name, content := range files {
		path := filepath.Join("testdata", "fuzz", name)
		if *genCorpus {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, content, 0o644))
			continue
		}
		_, err := os.Stat(path)
		require.NoError(t, err, "run go test ./record/ -run TestFuzzCorpus -gen-corpus")
	}
}

// corpusFile encodes values in the go test fuzz v1 file format.
func corpusFile(values ...any) []byte {
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, v := range values {
		switch v := v.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		case byte:
			fmt.Fprintf(&b, "byte(%q)\n", v)
		case int64:
			fmt.Fprintf(&b, "int64(%d)\n", v)
		default:
			panic(fmt.Sprintf("corpusFile: %T", v))
		}
	}
	return b.Bytes()
}
