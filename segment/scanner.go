package segment

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// ScanMode says how much of each batch a Scanner reads.
type ScanMode int

const (
	// ScanHeaders reads only batch headers; Batch returns nil. It checks
	// what a header alone can show (length bounds, magic).
	ScanHeaders ScanMode = iota
	// ScanBatches reads whole batches without checking their CRC.
	ScanBatches
	// ScanVerified reads whole batches and checks their CRC.
	ScanVerified
)

// scanChunk is how much a Scanner reads at a time.
const scanChunk = 64 << 10

// Scanner reads the batches of a log file one after another, from a start
// position to an end position, a chunk at a time:
//
//	sc := segment.NewScanner(f, 0, size, segment.ScanVerified)
//	for sc.Next() {
//		use(sc.Pos(), sc.Header(), sc.Batch())
//	}
//	if err := sc.Err(); err != nil { ... }
//
// Err is nil when the scan ended exactly at the end position, and a
// *CorruptionError when the bytes at Pos are not a whole valid batch — a
// torn tail shows as one wrapping record.ErrTruncated.
type Scanner struct {
	f    vfs.File
	mode ScanMode
	end  int64

	next   int64 // position of the batch after the current one
	pos    int64 // position of the current batch
	header record.Header
	batch  []byte

	buf    []byte
	bufPos int64 // file position of buf[0]
	err    error
	// big is set when the last batch was larger than a read chunk: the
	// next header is then read alone, not with a chunk of the batch after
	// it that a header scan would throw away.
	big bool
}

// NewScanner returns a Scanner over the batches of f in [pos, end).
func NewScanner(f vfs.File, pos, end int64, mode ScanMode) *Scanner {
	return &Scanner{f: f, mode: mode, end: end, next: pos, pos: pos}
}

// Next moves to the next batch and reports whether there is one.
func (s *Scanner) Next() bool {
	if s.err != nil {
		return false
	}
	s.pos = s.next
	s.batch = nil
	if s.pos >= s.end {
		return false
	}
	hb, err := s.window(s.pos, record.HeaderSize)
	if err != nil {
		s.fail(err)
		return false
	}
	h, err := record.ParseHeader(hb)
	if err != nil {
		s.fail(err)
		return false
	}
	size := int64(h.Size())
	s.big = size > scanChunk
	if s.pos+size > s.end {
		s.fail(fmt.Errorf("%w: batch of %d bytes at position %d passes the end at %d", record.ErrTruncated, size, s.pos, s.end))
		return false
	}
	if s.mode != ScanHeaders {
		b, err := s.window(s.pos, int(size))
		if err != nil {
			s.fail(err)
			return false
		}
		if s.mode == ScanVerified {
			if _, err := record.Validate(b); err != nil {
				s.fail(err)
				return false
			}
		}
		s.batch = b
	}
	s.header = h
	s.next = s.pos + size
	return true
}

// Pos returns the file position of the current batch; after Next returned
// false it is where the scan stopped.
func (s *Scanner) Pos() int64 { return s.pos }

// Header returns the current batch's header.
func (s *Scanner) Header() record.Header { return s.header }

// Batch returns the current batch's bytes, or nil under ScanHeaders. They are
// valid until the next call to Next.
func (s *Scanner) Batch() []byte { return s.batch }

// Err returns nil when the scan reached its end position cleanly, else why it
// stopped.
func (s *Scanner) Err() error { return s.err }

func (s *Scanner) fail(err error) {
	var ce *CorruptionError
	if errors.As(err, &ce) || !isFormatError(err) {
		s.err = err
		return
	}
	s.err = &CorruptionError{Path: s.f.Name(), Pos: s.pos, Err: err}
}

// isFormatError reports whether err says the bytes are bad, as opposed to
// the file being unreadable.
func isFormatError(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, record.ErrCorrupt) || errors.Is(err, record.ErrTruncated) ||
		errors.Is(err, record.ErrUnsupportedMagic) || errors.Is(err, record.ErrUnsupportedCompression)
}

// window returns the n bytes at file position pos, reading if they are not
// buffered. Fewer than n bytes before the end is record.ErrTruncated.
func (s *Scanner) window(pos int64, n int) ([]byte, error) {
	if pos >= s.bufPos && pos+int64(n) <= s.bufPos+int64(len(s.buf)) {
		off := int(pos - s.bufPos)
		return s.buf[off : off+n], nil
	}
	if pos+int64(n) > s.end {
		return nil, fmt.Errorf("%w: %d bytes left at position %d, need %d", record.ErrTruncated, s.end-pos, pos, n)
	}
	want := max(n, scanChunk)
	if s.big && s.mode == ScanHeaders {
		want = n
	}
	if rest := s.end - pos; int64(want) > rest {
		want = int(rest)
	}
	if cap(s.buf) < want {
		s.buf = make([]byte, want)
	}
	s.buf = s.buf[:want]
	got, err := s.f.ReadAt(s.buf, pos)
	if got < n {
		s.buf, s.bufPos = s.buf[:0], 0
		if err == nil || err == io.EOF {
			return nil, fmt.Errorf("%w: %d bytes at position %d, need %d", record.ErrTruncated, got, pos, n)
		}
		return nil, fmt.Errorf("segment: read %s at %d: %w", s.f.Name(), pos, err)
	}
	s.buf, s.bufPos = s.buf[:got], pos
	return s.buf[:n], nil
}

// scanBuffers recycles the chunk buffers of the scanners reads use.
var scanBuffers = sync.Pool{New: func() any { return new([]byte) }}

// newPooledScanner is NewScanner with a recycled buffer; release gives it
// back.
func newPooledScanner(f vfs.File, pos, end int64, mode ScanMode) *Scanner {
	sc := NewScanner(f, pos, end, mode)
	sc.buf = (*scanBuffers.Get().(*[]byte))[:0]
	return sc
}

// release returns the scanner's buffer to the pool; the scanner must not be
// used again.
func (s *Scanner) release() {
	if cap(s.buf) <= 2*scanChunk {
		b := s.buf[:0]
		scanBuffers.Put(&b)
	}
	s.buf, s.batch = nil, nil
}
