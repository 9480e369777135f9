package partlog

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

// The node's small state files — meta.properties, producer-ids,
// controller-epoch — are Java properties files, as Kafka writes them:
// "key=value" lines, with blank lines and "#" comments.

// parseProperties parses a properties file's lines into a map.
func parseProperties(data []byte) (map[string]string, error) {
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

// readProperties reads the properties file name. A missing file is a nil
// map and no error.
func readProperties(fsys vfs.FS, name string) (map[string]string, error) {
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("partlog: open %s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("partlog: read %s: %w", name, err)
	}
	props, err := parseProperties(data)
	if err != nil {
		return nil, fmt.Errorf("partlog: %s: %w", name, err)
	}
	return props, nil
}
