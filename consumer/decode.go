package consumer

import (
	"errors"
	"slices"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
)

// chunk is what one fetch brought for one partition: whole batches, kept
// as fetched until Poll or Records takes them to decode, so that the
// fetcher goroutine only fetches and the consumer buffers raw bytes, not
// decoded records. A chunk that Poll or Records gave back (see unread)
// starts with records decoded already.
type chunk struct {
	data []byte // the batches; data[pos:] are not taken yet
	pos  int
	from int64 // the position fetched from: records below it are skipped
	// records were decoded and given back; next is the first not taken.
	records []Record
	next    int
	// end is the offset after what was taken (from, before anything
	// was): the position once it is all returned. fetched is the offset
	// after the last batch of data, where the next fetch starts.
	end, fetched int64
	// bytes is what the chunk still counts against FetchMaxBytes: the
	// bytes not taken yet.
	bytes int
	// last says the fetcher could not parse a header in data: the
	// partition is not fetched after this chunk, whose decoding reports
	// the error.
	last bool
	// buf is the reused buffer data and records point into, if any.
	buf *fetchBuf
	// aborted are the base offsets, ascending, of the batches of data
	// that belong to aborted transactions (read_committed only): they
	// are skipped as the markers are.
	aborted []int64

	highWatermark, lastStable, logStart int64
}

// done reports whether everything in ch has been taken.
func (ch *chunk) done() bool { return ch.next == len(ch.records) && ch.pos == len(ch.data) }

// scanBatches returns the part of data, fetched from offset from, to
// queue for Poll: the whole batches below the high watermark hw (when
// known), without a batch cut short at the end, as a fetch's byte limit
// may leave one. It returns the offset after them, where the next fetch
// goes on. bad says the fetcher cannot tell where the next fetch goes (a
// header that does not parse): data is returned whole for the decoder to
// report it.
func scanBatches(data []byte, from, hw int64) (batches []byte, next int64, bad bool) {
	// Leave out the batches wholly below from: they hold nothing to
	// return, and a fetch that brings nothing else brought nothing.
	for len(data) >= record.HeaderSize {
		h, err := record.ParseHeader(data)
		if err != nil || h.Size() > len(data) || h.LastOffset() >= from {
			break
		}
		data = data[h.Size():]
	}
	pos, next := 0, from
	for pos < len(data) {
		h, err := record.ParseHeader(data[pos:])
		if err == nil && h.Size() > len(data)-pos {
			err = record.ErrTruncated
		}
		if err != nil {
			if pos > 0 && errors.Is(err, record.ErrTruncated) {
				break
			}
			return data, next, true
		}
		if hw >= 0 && h.LastOffset() >= hw {
			break // never past the high watermark
		}
		pos += h.Size()
		next = max(next, h.NextOffset())
	}
	return data[:pos], next, false
}

// appendRecords appends to recs the records of src at from and after, of
// the batch with header h.
func appendRecords(recs []Record, src []record.Record, tp kafka.TopicPartition, from int64, h *record.Header) []Record {
	recs = slices.Grow(recs, len(src))
	tsType := h.Attributes.TimestampType()
	epoch := h.PartitionLeaderEpoch
	for i := range src {
		s := &src[i]
		if s.Offset < from {
			continue
		}
		recs = recs[:len(recs)+1]
		r := &recs[len(recs)-1]
		r.Topic = tp.Topic
		r.Partition = tp.Partition
		r.LeaderEpoch = epoch
		r.Offset = s.Offset
		r.Timestamp = timeOf(s.Timestamp)
		r.TimestampType = tsType
		r.Key = s.Key
		r.Value = s.Value
		r.Headers = s.Headers
	}
	return recs
}

// countRecords returns about how many records the batches at the start of
// data hold at offset from and after, counting batches until there are at
// least want: room to decode them into. Control batches hold none a
// consumer returns. A compressed batch's count is believed up to its size
// in bytes, so that a hostile header cannot make the consumer allocate
// more than the fetch's size allows; the slice grows if the guess is
// short.
func countRecords(data []byte, from int64, want int, aborted []int64) int {
	n := 0
	for pos := 0; pos < len(data) && n < want; {
		h, err := record.ParseHeader(data[pos:])
		if err != nil || h.Size() > len(data)-pos {
			break
		}
		pos += h.Size()
		if h.Attributes.IsControl() || h.LastOffset() < from || isAborted(aborted, h.BaseOffset) {
			continue
		}
		if h.Attributes.Compression() == record.None {
			n += int(h.NumRecords) // ParseHeader held it to the batch's size
		} else {
			n += min(int(h.NumRecords), h.Size())
		}
	}
	return n
}

// timeOf returns the time of a record's timestamp in ms.
func timeOf(ms int64) time.Time { return time.UnixMilli(ms) }
