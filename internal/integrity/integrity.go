// Package integrity checks, byte for byte, that what a produce path
// acknowledged is what consumers read back and what the segment files
// hold: the project's end-to-end integrity suite (integrity_test.go in the
// root package and cmd/partlog) is built on it.
//
// A check has three sides. A Ledger collects what the producer
// acknowledged — each record with the partition and offset its promise
// reported. Consume reads the topic back through a client, as a user's
// consumer would. ReadDir decodes the partitions' segment files as
// dump-log does. Compare then says what is missing, extra, duplicated or
// altered, naming the first differences.
package integrity

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/partlog/partlog/record"
)

// Record is a record as acknowledged or as read back: where it is and
// every byte of it. Key and Value keep the difference between nil (null)
// and empty; so do header values.
type Record struct {
	Partition int32
	Offset    int64
	// Timestamp is in milliseconds since the epoch.
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []record.RecordHeader
}

// String describes r briefly, for failure messages.
func (r Record) String() string {
	return fmt.Sprintf("%d@%d ts=%d key=%s value=%s headers=%d", r.Partition, r.Offset, r.Timestamp,
		quote(r.Key), quote(r.Value), len(r.Headers))
}

// quote shows the start of b, and its length; nil shows as null.
func quote(b []byte) string {
	if b == nil {
		return "null"
	}
	const show = 24
	if len(b) <= show {
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("%q…(%d bytes)", b[:show], len(b))
}

// Equal reports whether a and b are the same record, byte for byte, at the
// same place.
func Equal(a, b Record) bool {
	return a.Partition == b.Partition && a.Offset == b.Offset && a.Timestamp == b.Timestamp &&
		sameBytes(a.Key, b.Key) && sameBytes(a.Value, b.Value) &&
		slices.EqualFunc(a.Headers, b.Headers, func(x, y record.RecordHeader) bool {
			return x.Key == y.Key && sameBytes(x.Value, y.Value)
		})
}

// sameBytes is bytes.Equal that tells nil from empty.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// Ledger collects acknowledged records. It is safe for concurrent use.
type Ledger struct {
	mu      sync.Mutex
	records map[int32]map[int64]Record
	// twice notes offsets acknowledged for two records.
	twice []string
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{records: map[int32]map[int64]Record{}} }

// Ack records r as acknowledged at r.Partition and r.Offset. The ledger
// copies r's bytes: the caller may reuse them.
func (l *Ledger) Ack(r Record) {
	r.Key, r.Value = clone(r.Key), clone(r.Value)
	r.Headers = slices.Clone(r.Headers)
	for i := range r.Headers {
		r.Headers[i].Value = clone(r.Headers[i].Value)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.records[r.Partition]
	if p == nil {
		p = map[int64]Record{}
		l.records[r.Partition] = p
	}
	if old, ok := p[r.Offset]; ok {
		l.twice = append(l.twice, fmt.Sprintf("offset %d-%d acknowledged for %v and %v", r.Partition, r.Offset, old, r))
	}
	p[r.Offset] = r
}

// clone copies b, keeping nil nil.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// Len returns how many records were acknowledged.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, p := range l.records {
		n += len(p)
	}
	return n
}

// Ends returns, per partition, the offset after the last acknowledged
// record: where a reader has read everything acknowledged.
func (l *Ledger) Ends() map[int32]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	ends := map[int32]int64{}
	for p, rs := range l.records {
		for off := range rs {
			ends[p] = max(ends[p], off+1)
		}
	}
	return ends
}

// Records returns the acknowledged records in partition and offset order,
// or an error if an offset was acknowledged twice.
func (l *Ledger) Records() ([]Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.twice) > 0 {
		return nil, fmt.Errorf("integrity: %d offsets acknowledged twice, first: %s", len(l.twice), l.twice[0])
	}
	var out []Record
	for _, p := range l.records {
		for _, r := range p {
			out = append(out, r)
		}
	}
	Sort(out)
	return out, nil
}

// Sort orders records by partition, then offset.
func Sort(rs []Record) {
	slices.SortFunc(rs, func(a, b Record) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
}

// Compare checks that got holds exactly the records of want, byte for byte
// and at the same partitions and offsets; what names got in the error
// ("the consumer", "node 2's segment files"). Neither slice needs to be
// sorted; Compare sorts copies.
func Compare(what string, want, got []Record) error {
	want, got = slices.Clone(want), slices.Clone(got)
	Sort(want)
	Sort(got)
	var (
		missing, extra, altered, dup int
		examples                     []string
	)
	note := func(format string, args ...any) {
		if len(examples) < 8 {
			examples = append(examples, fmt.Sprintf(format, args...))
		}
	}
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		if j > 0 && j < len(got) && got[j].Partition == got[j-1].Partition && got[j].Offset == got[j-1].Offset {
			dup++
			note("read twice: %v", got[j])
			j++
			continue
		}
		switch {
		case j == len(got) || i < len(want) && before(want[i], got[j]):
			missing++
			note("missing: %v", want[i])
			i++
		case i == len(want) || before(got[j], want[i]):
			extra++
			note("never acknowledged: %v", got[j])
			j++
		default:
			if !Equal(want[i], got[j]) {
				altered++
				note("altered: acknowledged %v, read %v", want[i], got[j])
			}
			i++
			j++
		}
	}
	if missing+extra+altered+dup == 0 {
		return nil
	}
	return fmt.Errorf("integrity: %s differs from the %d acknowledged records: %d missing, %d never acknowledged, %d altered, %d read twice:\n  %s",
		what, len(want), missing, extra, altered, dup, strings.Join(examples, "\n  "))
}

// before orders records by place.
func before(a, b Record) bool {
	return a.Partition < b.Partition || a.Partition == b.Partition && a.Offset < b.Offset
}

// FromBatch appends the records of a decoded batch of partition p to dst.
// The records point into b's bytes.
func FromBatch(dst []Record, p int32, b record.Batch) []Record {
	for _, r := range b.Records {
		dst = append(dst, Record{Partition: p, Offset: r.Offset, Timestamp: r.Timestamp,
			Key: r.Key, Value: r.Value, Headers: r.Headers})
	}
	return dst
}
