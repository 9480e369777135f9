// Package props reads and writes the small state files partlog keeps
// beside its logs — meta.properties, producer-ids, controller-epoch — as
// Java properties files, as Kafka writes them: "key=value" lines, with
// blank lines and "#" comments; and reads the client properties files
// that partlog's commands take (--command-config) as Kafka's tools do.
package props

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/partlog/partlog/vfs"
)

// Parse parses a properties file's lines into a map.
func Parse(data []byte) (map[string]string, error) {
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("malformed line %q", line)
		}
		props[k] = v
	}
	return props, sc.Err()
}

// Read reads the properties file name. A missing file is a nil
// map and no error.
func Read(fsys vfs.FS, name string) (map[string]string, error) {
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("props: open %s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("props: read %s: %w", name, err)
	}
	props, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("props: %s: %w", name, err)
	}
	return props, nil
}

// WriteAtomic replaces name with data whole, durably, or leaves the old
// file.
func WriteAtomic(fsys vfs.FS, name string, data []byte) error {
	if err := vfs.WriteFileAtomic(fsys, name, data); err != nil {
		return fmt.Errorf("props: write %s: %w", name, err)
	}
	return nil
}
