package segment

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// File name suffixes of a segment's files.
const (
	LogSuffix       = ".log"
	IndexSuffix     = ".index"
	TimeIndexSuffix = ".timeindex"
	TxnIndexSuffix  = ".txnindex"
)

// FileSuffixes returns the suffixes of every file a segment may have, the
// log file last: what deleting, renaming or moving a segment must cover.
func FileSuffixes() []string {
	return []string{IndexSuffix, TimeIndexSuffix, TxnIndexSuffix, LogSuffix}
}

// FileName returns the name of a segment file: base offset padded to 20
// digits, then suffix.
func FileName(base int64, suffix string) string {
	return fmt.Sprintf("%020d%s", base, suffix)
}

// ParseFileName splits a segment file name into base offset and suffix. ok
// is false when name is not 20 digits followed by a suffix.
func ParseFileName(name string) (base int64, suffix string, ok bool) {
	name = path.Base(name)
	if len(name) < 21 {
		return 0, "", false
	}
	digits, suffix := name[:20], name[20:]
	if !strings.HasPrefix(suffix, ".") {
		return 0, "", false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || base < 0 {
		return 0, "", false
	}
	return base, suffix, true
}
