package record

import (
	"errors"
	"fmt"
)

var (
	// ErrCorrupt reports a batch whose bytes contradict themselves: a CRC
	// mismatch, a length that runs past the batch, a malformed record, or
	// a compressed section that does not decompress. Errors from this
	// package that carry details are *CorruptError, which unwraps to
	// ErrCorrupt.
	ErrCorrupt = errors.New("record: corrupt record batch")

	// ErrTruncated reports a buffer that ends before the batch it starts
	// does: shorter than HeaderSize, or shorter than the header's
	// BatchLength says. At the tail of a log this is a torn write, not
	// corruption.
	ErrTruncated = errors.New("record: truncated record batch")

	// ErrUnsupportedMagic reports a batch whose magic byte is not MagicV2.
	// Kafka's older message formats (magic 0 and 1) are not supported.
	ErrUnsupportedMagic = errors.New("record: unsupported magic byte")

	// ErrUnsupportedCompression reports a batch whose attributes name a
	// compression codec other than None, Gzip, Snappy, LZ4 or Zstd.
	ErrUnsupportedCompression = errors.New("record: unsupported compression codec")
)

// CorruptError is an ErrCorrupt with the reason the batch was rejected,
// such as "crc mismatch: stored 0x1a2b3c4d, computed 0x5e6f7a8b" or
// "record 3: key length -5". errors.Is(err, ErrCorrupt) holds for it.
type CorruptError struct {
	// Reason says what was wrong, in the batch's own terms.
	Reason string
}

// Error returns ErrCorrupt's message followed by the reason.
func (e *CorruptError) Error() string {
	return ErrCorrupt.Error() + ": " + e.Reason
}

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// corruptf returns a *CorruptError whose reason is formatted from format
// and args.
func corruptf(format string, args ...any) error {
	return &CorruptError{Reason: fmt.Sprintf(format, args...)}
}

// truncated returns ErrTruncated wrapped with how many bytes were there
// and how many the batch needs.
func truncated(have, need int64) error {
	return fmt.Errorf("%w: have %d bytes, need %d", ErrTruncated, have, need)
}
