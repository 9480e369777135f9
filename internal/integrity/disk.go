package integrity

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

// ReadDir decodes the records of topic's partitions 0..partitions-1 from
// the segment files under a node's data directory, as dump-log reads them:
// every .log file in base-offset order, batch by batch, each batch's CRC
// checked and its records decoded. Bytes that do not frame a batch, a CRC
// that fails, a batch that does not decode or offsets that go backwards
// are errors: a log that holds only acknowledged data has none of them.
// Control batches (transaction markers) are skipped.
func ReadDir(dir, topic string, partitions int) ([]Record, error) {
	var out []Record
	for p := range int32(partitions) {
		rs, err := ReadPartition(filepath.Join(dir, fmt.Sprintf("%s-%d", topic, p)), p)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// ReadPartition decodes the records of one partition directory, as ReadDir
// does, giving them partition p.
func ReadPartition(pdir string, p int32) ([]Record, error) {
	names, err := vfs.Default.List(pdir)
	if err != nil {
		return nil, fmt.Errorf("integrity: %w", err)
	}
	var logs []string
	for _, n := range names {
		if strings.HasSuffix(n, segment.LogSuffix) {
			if _, _, ok := segment.ParseFileName(n); ok {
				logs = append(logs, n)
			}
		}
	}
	slices.Sort(logs) // names are zero-padded base offsets
	var (
		out  []Record
		next int64 = -1
	)
	for _, name := range logs {
		path := filepath.Join(pdir, name)
		rs, end, err := readSegment(path, p, next)
		if err != nil {
			return nil, err
		}
		out, next = append(out, rs...), end
	}
	return out, nil
}

// readSegment decodes one .log file whose first batch starts at or after
// next (when next is not -1), and returns its records and the offset after
// its last batch.
func readSegment(path string, p int32, next int64) ([]Record, int64, error) {
	f, err := vfs.Default.Open(path)
	if err != nil {
		return nil, next, fmt.Errorf("integrity: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, next, fmt.Errorf("integrity: %s: %w", path, err)
	}
	var out []Record
	sc := segment.NewScanner(f, 0, size, segment.ScanVerified)
	for sc.Next() {
		h := sc.Header()
		if next >= 0 && h.BaseOffset < next {
			return nil, next, fmt.Errorf("integrity: %s at %d: batch at offset %d after offsets up to %d", path, sc.Pos(), h.BaseOffset, next-1)
		}
		next = h.NextOffset()
		if h.Attributes.IsControl() {
			continue
		}
		// Scanner's bytes are valid until Next: the decoded records must
		// own theirs.
		b, err := record.Decode(append([]byte(nil), sc.Batch()...))
		if err != nil {
			return nil, next, fmt.Errorf("integrity: %s at %d: %w", path, sc.Pos(), err)
		}
		out = FromBatch(out, p, b)
	}
	if err := sc.Err(); err != nil {
		return nil, next, fmt.Errorf("integrity: %s: %d bytes, the scan stopped at %d: %w", path, size, sc.Pos(), err)
	}
	return out, next, nil
}
