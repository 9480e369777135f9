package segment

import (
	"fmt"
	"path"

	"github.com/partlog/partlog/vfs"
)

// Suffixes the log cleaner adds after a segment file's usual suffix while it
// replaces segments, as Kafka names them: a cleaned segment is written as
// ".cleaned" files, renamed to ".swap" once complete and durable (from then
// on the swap is committed: recovery completes it), and the segments it
// replaces are renamed to ".deleted" before the ".swap" files take their
// final names.
const (
	CleanedSuffix = ".cleaned"
	SwapSuffix    = ".swap"
	DeletedSuffix = ".deleted"
)

// CreateWithSuffix is Create for a segment whose files carry extra after
// their usual suffix, such as "00000000000000000000.log.cleaned". The log
// cleaner writes a cleaned segment so, and RenameFiles gives it its final
// names.
func CreateWithSuffix(fsys vfs.FS, dir string, base int64, nowMs int64, opts Options, extra string) (*Segment, error) {
	s := newSegment(fsys, dir, base, opts)
	s.extra = extra
	s.createdMs = nowMs
	s.nextOffset.Store(base)
	if err := s.createFiles(); err != nil {
		_ = s.Delete()
		return nil, err
	}
	return s, nil
}

// Suffix returns what follows the usual suffix of the segment's file names:
// empty but for a segment being swapped in.
func (s *Segment) Suffix() string { return s.extra }

// RenameFiles renames the segment's files so that extra follows their
// usual suffix (empty for the final names): the two indexes, the
// .txnindex if it has one, and the log file last, so that a ".swap" log
// file tells recovery its indexes were renamed too. The files stay open.
// The caller syncs the directory. The segment must not be in use by other
// goroutines.
func (s *Segment) RenameFiles(extra string) error {
	for _, suffix := range FileSuffixes() {
		to := path.Join(s.dir, FileName(s.base, suffix)+extra)
		if suffix == TxnIndexSuffix {
			if err := s.txnIndex.rename(to); err != nil {
				return err
			}
			continue
		}
		from := s.Path(suffix)
		if err := s.fs.Rename(from, to); err != nil {
			return fmt.Errorf("segment: rename %s to %s: %w", from, to, err)
		}
	}
	s.extra = extra
	return nil
}
