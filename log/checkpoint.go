package log

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"github.com/partlog/partlog/vfs"
)

// Kafka's checkpoint files are text:
//
//	0                  version
//	2                  number of entries
//	study 0 1234       an entry: fields separated by single spaces
//	study 1 99
//
// The offset checkpoints (recovery-point-offset-checkpoint,
// log-start-offset-checkpoint, replication-offset-checkpoint) have entries
// "topic partition offset"; leader-epoch-checkpoint has "epoch startOffset".

// ErrBadCheckpoint means a checkpoint file does not parse. Checkpoints are
// hints: the caller falls back to what the log itself says.
var ErrBadCheckpoint = errors.New("log: malformed checkpoint file")

const checkpointVersion = 0

// formatCheckpoint renders entries, each a list of fields.
func formatCheckpoint(entries [][]string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(entries))
	for _, e := range entries {
		b.WriteString(strings.Join(e, " "))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// parseCheckpoint parses a checkpoint whose entries have fields fields each.
func parseCheckpoint(data []byte, fields int) ([][]string, error) {
	lines := strings.Split(string(data), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	if len(lines) < 2 {
		return nil, fmt.Errorf("%w: %d lines", ErrBadCheckpoint, len(lines))
	}
	if v, err := strconv.Atoi(lines[0]); err != nil || v != checkpointVersion {
		return nil, fmt.Errorf("%w: unknown version %q", ErrBadCheckpoint, lines[0])
	}
	count, err := strconv.Atoi(lines[1])
	if err != nil || count != len(lines)-2 {
		return nil, fmt.Errorf("%w: count %q but %d entries", ErrBadCheckpoint, lines[1], len(lines)-2)
	}
	entries := make([][]string, 0, count)
	for i, line := range lines[2:] {
		f := strings.Split(line, " ")
		if len(f) != fields {
			return nil, fmt.Errorf("%w: entry %d %q has %d fields, want %d", ErrBadCheckpoint, i, line, len(f), fields)
		}
		entries = append(entries, f)
	}
	return entries, nil
}

// readCheckpoint reads and parses a checkpoint file. A missing file is no
// entries and no error.
func readCheckpoint(fsys vfs.FS, name string, fields int) ([][]string, error) {
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("log: read %s: %w", name, err)
	}
	entries, err := parseCheckpoint(data, fields)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return entries, nil
}

// writeFileAtomic replaces name with data whole, or leaves the old file.
func writeFileAtomic(fsys vfs.FS, name string, data []byte) error {
	if err := vfs.WriteFileAtomic(fsys, name, data); err != nil {
		return fmt.Errorf("log: write %s: %w", name, err)
	}
	return nil
}

// parseInt64 parses a checkpoint field.
func parseInt64(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a number", ErrBadCheckpoint, s)
	}
	return v, nil
}
