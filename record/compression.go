package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// MaxUncompressedBytes bounds what the records of one compressed batch may
// decompress to. Decode rejects a batch whose records decompress to more
// with ErrCorrupt, having held at most this many bytes of output, so a
// small hostile batch (a "zip bomb") cannot make it allocate without bound.
// A zstd frame's window, which the decoder allocates besides the output,
// is held to the same bound. Kafka's own limit on a batch,
// message.max.bytes, defaults to about 1 MiB.
const MaxUncompressedBytes = 64 << 20

// The codecs are written as Kafka's Java client writes them: gzip as one
// gzip member, snappy in xerial framing, lz4 as one LZ4 frame of 64 KiB
// independent blocks, zstd as one zstd frame. Encoders and decoders are
// pooled: creating them costs more than using them, zstd's most of all.

// compress appends the codec's encoding of src to dst. c must be Gzip,
// Snappy, LZ4 or Zstd.
func compress(dst []byte, c Compression, src []byte) []byte {
	switch c {
	case Gzip:
		e := gzipEncoders.Get().(*gzipEncoder)
		e.out.b = dst
		e.w.Reset(&e.out)
		_, _ = e.w.Write(src) // appendWriter never fails, so neither can this
		_ = e.w.Close()
		dst, e.out.b = e.out.b, nil
		gzipEncoders.Put(e)
	case Snappy:
		dst = appendXerial(dst, src)
	case LZ4:
		e := lz4Encoders.Get().(*lz4Encoder)
		e.out.b = dst
		e.w.Reset(&e.out)
		_, _ = e.w.Write(src)
		_ = e.w.Close()
		dst, e.out.b = e.out.b, nil
		lz4Encoders.Put(e)
	case Zstd:
		dst = zstdEncoder().EncodeAll(src, dst)
	default:
		panic("record: cannot compress with " + c.String())
	}
	return dst
}

// decompress returns the records section src decoded with codec c, in a
// new buffer of at most MaxUncompressedBytes. Any failure is a
// *CorruptError naming the codec.
func decompress(c Compression, src []byte) ([]byte, error) {
	var out []byte
	var err error
	switch c {
	case Gzip:
		d := gzipDecoders.Get().(*gzipDecoder)
		d.src.Reset(src)
		if err = d.r.Reset(&d.src); err == nil {
			out, err = readAllLimited(&d.r, len(src))
		}
		d.src.Reset(nil)
		gzipDecoders.Put(d)
	case Snappy:
		out, err = decodeSnappy(src)
	case LZ4:
		d := lz4Decoders.Get().(*lz4Decoder)
		d.src.Reset(src)
		d.r.Reset(&d.src)
		out, err = readAllLimited(d.r, len(src))
		d.src.Reset(nil)
		d.r.Reset(nil)
		lz4Decoders.Put(d)
	case Zstd:
		d := zstdDecoders.Get().(*zstdDecoder)
		d.src.Reset(src)
		if err = d.r.Reset(&d.src); err == nil {
			out, err = readAllLimited(d.r, len(src))
		}
		if errors.Is(err, zstd.ErrWindowSizeExceeded) {
			err = errTooLarge
		}
		d.src.Reset(nil)
		_ = d.r.Reset(nil)
		zstdDecoders.Put(d)
	default:
		return nil, corruptf("cannot decompress %s", c)
	}
	if err != nil {
		if err == errTooLarge {
			return nil, corruptf("%s records decompress to more than %d bytes", c, MaxUncompressedBytes)
		}
		return nil, corruptf("%s: %v", c, err)
	}
	return out, nil
}

// errTooLarge reports output beyond MaxUncompressedBytes inside this file.
var errTooLarge = errors.New("decompressed records too large")

// initialOutputSize guesses the decompressed size of n compressed bytes,
// to start the output buffer at.
func initialOutputSize(n int) int {
	return min(4*n+512, MaxUncompressedBytes)
}

// readAllLimited reads r to its end into a new buffer, which it grows by
// doubling up to MaxUncompressedBytes; more output than that is
// errTooLarge. srcLen, the compressed size, sizes the first buffer.
func readAllLimited(r io.Reader, srcLen int) ([]byte, error) {
	buf := make([]byte, 0, initialOutputSize(srcLen))
	for {
		if len(buf) == cap(buf) {
			if len(buf) == MaxUncompressedBytes {
				var one [1]byte
				if n, err := io.ReadFull(r, one[:]); n > 0 {
					return nil, errTooLarge
				} else if err != io.EOF {
					return nil, err
				}
				return buf, nil
			}
			grown := make([]byte, len(buf), min(2*cap(buf), MaxUncompressedBytes))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// appendWriter is an io.Writer that appends to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

type gzipEncoder struct {
	w   *gzip.Writer
	out appendWriter
}

type gzipDecoder struct {
	r   gzip.Reader // Reset makes the zero Reader ready
	src bytes.Reader
}

// zstdDecoder streams, rather than using DecodeAll, because DecodeAll
// applies its size limit to each frame of the input, not to their sum.
type zstdDecoder struct {
	r   *zstd.Decoder
	src bytes.Reader // a bytes.Buffer would make Reset use DecodeAll
}

type lz4Encoder struct {
	w   *lz4.Writer
	out appendWriter
}

type lz4Decoder struct {
	r   *lz4.Reader
	src bytes.Reader
}

var (
	gzipEncoders = sync.Pool{New: func() any {
		e := new(gzipEncoder)
		e.w = gzip.NewWriter(&e.out) // level 6, Kafka's default
		return e
	}}
	gzipDecoders = sync.Pool{New: func() any { return new(gzipDecoder) }}

	lz4Encoders = sync.Pool{New: func() any {
		e := new(lz4Encoder)
		e.w = lz4.NewWriter(&e.out)
		// Kafka's Lz4BlockOutputStream writes 64 KiB blocks and no content
		// checksum; the batch CRC covers the compressed bytes.
		if err := e.w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false)); err != nil {
			panic("record: lz4 options: " + err.Error())
		}
		return e
	}}
	lz4Decoders = sync.Pool{New: func() any { return &lz4Decoder{r: lz4.NewReader(nil)} }}

	// zstdEncoder is shared: EncodeAll is safe for concurrent use and runs
	// up to GOMAXPROCS encodes at once.
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithZeroFrames(true))
		if err != nil {
			panic("record: zstd encoder: " + err.Error())
		}
		return e
	})
	// A zstd stream decoder with concurrency 1 decodes on the caller's
	// goroutine and starts none, so the pool may drop it. Its window, and
	// so the history it allocates, is limited to MaxUncompressedBytes.
	zstdDecoders = sync.Pool{New: func() any {
		r, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(MaxUncompressedBytes),
			zstd.WithDecoderMaxWindow(MaxUncompressedBytes))
		if err != nil {
			panic("record: zstd decoder: " + err.Error())
		}
		return &zstdDecoder{r: r}
	}}
)

// Snappy in Kafka comes two ways. Kafka's Java client writes xerial
// framing (snappy-java's SnappyOutputStream): an 8-byte magic, two
// big-endian int32 versions, then chunks of a big-endian int32 length and
// a raw snappy block. Other clients write one raw snappy block. Java's
// reader takes both, and so does decodeSnappy; appendXerial writes the
// framed form, which every reader takes.

var xerialHeader = []byte{
	0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, // magic
	0, 0, 0, 1, // version
	0, 0, 0, 1, // minimum compatible version
}

const (
	xerialMagicLen  = 8
	xerialHeaderLen = 16
	// xerialBlockSize is how much input each chunk holds, as snappy-java's
	// default block size.
	xerialBlockSize = 32 << 10
)

// appendXerial appends src to dst snappy-compressed in xerial framing.
func appendXerial(dst, src []byte) []byte {
	dst = append(dst, xerialHeader...)
	for len(src) > 0 {
		n := min(len(src), xerialBlockSize)
		dst = slices.Grow(dst, 4+s2.MaxEncodedLen(n))
		at := len(dst)
		block := s2.EncodeSnappy(dst[at+4:cap(dst)], src[:n]) // encodes in place: there is room
		dst = dst[:at+4+len(block)]
		binary.BigEndian.PutUint32(dst[at:], uint32(len(block)))
		src = src[n:]
	}
	return dst
}

// decodeSnappy decodes a raw snappy block or xerial-framed chunks.
func decodeSnappy(src []byte) ([]byte, error) {
	if len(src) >= xerialMagicLen && bytes.Equal(src[:xerialMagicLen], xerialHeader[:xerialMagicLen]) {
		return decodeXerial(src)
	}
	n, err := s2.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	if n > MaxUncompressedBytes {
		return nil, errTooLarge
	}
	out := make([]byte, n)
	if _, err := s2.Decode(out, src); err != nil {
		return nil, err
	}
	return out, nil
}

var errXerial = errors.New("malformed xerial framing")

// decodeXerial decodes xerial-framed snappy. It walks the chunk lengths
// and the blocks' stated sizes first, so that it checks the total against
// MaxUncompressedBytes and allocates the output once.
func decodeXerial(src []byte) ([]byte, error) {
	if len(src) < xerialHeaderLen {
		return nil, errXerial
	}
	total := 0
	for rest := src[xerialHeaderLen:]; len(rest) > 0; {
		block, next, err := nextXerialChunk(rest)
		if err != nil {
			return nil, err
		}
		if len(block) > 0 {
			n, err := s2.DecodedLen(block)
			if err != nil {
				return nil, err
			}
			if n > MaxUncompressedBytes-total {
				return nil, errTooLarge
			}
			total += n
		}
		rest = next
	}
	out := make([]byte, 0, total)
	for rest := src[xerialHeaderLen:]; len(rest) > 0; {
		block, next, _ := nextXerialChunk(rest)
		if len(block) > 0 {
			n, _ := s2.DecodedLen(block)
			if _, err := s2.Decode(out[len(out):len(out)+n], block); err != nil {
				return nil, err
			}
			out = out[:len(out)+n]
		}
		rest = next
	}
	return out, nil
}

// nextXerialChunk splits the first chunk's snappy block off b.
func nextXerialChunk(b []byte) (block, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, errXerial
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if uint64(n) > uint64(len(b)) {
		return nil, nil, errXerial
	}
	return b[:n], b[n:], nil
}
