package integrity

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"

	"github.com/partlog/partlog/record"
)

// Workload describes records to produce: Producers concurrent producers of
// Records records each, every record derived from Seed, the producer's
// index and the record's, so that a run can be repeated from its seed.
type Workload struct {
	// Seed makes the records; print it with a failure.
	Seed uint64
	// Producers is how many producers (or goroutines) produce at once.
	Producers int
	// Records is how many records each producer produces.
	Records int
	// Keyed gives records keys (a few empty); otherwise keys are null.
	Keyed bool
	// MaxValue bounds value sizes in bytes; zero means 200. A few values
	// are null or empty.
	MaxValue int
	// BigValue, when not zero, gives one record in BigEvery a value of up
	// to BigValue bytes.
	BigValue, BigEvery int
	// Headers gives some records headers, one with a null value.
	Headers bool
}

// Total returns how many records the workload produces.
func (w Workload) Total() int { return w.Producers * w.Records }

// String describes the workload, seed first.
func (w Workload) String() string {
	return fmt.Sprintf("seed=%d producers=%d records=%d keyed=%v maxValue=%d big=%d/%d headers=%v",
		w.Seed, w.Producers, w.Records, w.Keyed, w.MaxValue, w.BigValue, w.BigEvery, w.Headers)
}

// Record returns producer pr's i-th record: its key, value, headers and
// timestamp (zero for most, so the producer stamps them; a record of its
// own time for one in four). Partition and Offset are left zero. Values
// begin with the seed, pr and i, so a misplaced record names itself, and
// go on with bytes from a generator seeded by the same three.
func (w Workload) Record(pr, i int) Record {
	rng := rand.New(rand.NewPCG(w.Seed, uint64(pr)<<32|uint64(i)))
	maxValue := w.MaxValue
	if maxValue == 0 {
		maxValue = 200
	}
	var r Record
	size := rng.IntN(maxValue + 1)
	if w.BigValue > 0 && w.BigEvery > 0 && rng.IntN(w.BigEvery) == 0 {
		size = rng.IntN(w.BigValue + 1)
	}
	switch rng.IntN(97) {
	case 0: // null
	case 1:
		r.Value = []byte{}
	default:
		r.Value = fill(fmt.Appendf(make([]byte, 0, size), "s%d/p%d/r%d|", w.Seed, pr, i), size, rng)
	}
	if w.Keyed {
		if rng.IntN(53) == 0 {
			r.Key = []byte{}
		} else {
			r.Key = fmt.Appendf(nil, "key-%d-%d", pr, rng.IntN(64))
		}
	}
	if w.Headers {
		switch i % 3 {
		case 1:
			r.Headers = []record.RecordHeader{{Key: "trace", Value: fmt.Appendf(nil, "%d-%d", pr, i)}}
		case 2:
			r.Headers = []record.RecordHeader{{Key: "a", Value: fill(nil, rng.IntN(40), rng)}, {Key: "null"}}
		}
	}
	if i%4 == 0 {
		r.Timestamp = 1_700_000_000_000 + int64(pr)*1_000_000 + int64(i)
	}
	return r
}

// fill appends random printable bytes to b until it is size long.
func fill(b []byte, size int, rng *rand.Rand) []byte {
	for len(b) < size {
		b = append(b, byte(' '+rng.IntN(95)))
	}
	return b
}

// NewSeed returns a seed for a run that is not asked to repeat one.
func NewSeed() uint64 { return new(maphash.Hash).Sum64() }
