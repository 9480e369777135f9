package consumer

import (
	"slices"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
)

// Poll and Records share one way of reading the partitions' queues: under
// the lock, take a run of records from one partition — records decoded
// before, or whole batches — and move the partition's position past it;
// without the lock, decode the batches; give back, under the lock again,
// what was taken and not returned. Decoding so leaves the lock free for
// the fetcher, which would otherwise wait on it while the consumer's
// bottleneck, its fetches, stood still.

// run is what takeLocked takes from one partition.
type run struct {
	p  *partState // for identity only: read its fields under the lock
	tp kafka.TopicPartition
	// moves and seeks are the partition's when the run was taken.
	moves, seeks uint64
	// records were decoded before; batches are whole batches to decode,
	// of which records below from are not returned.
	records []Record
	batches []byte
	from    int64
	// start is the partition's position before the run, end after it.
	start, end int64
	// buf is the reused buffer records and batches point into, if any.
	buf *fetchBuf
	// aborted are the base offsets of the batches to skip (chunk.aborted).
	aborted []int64

	highWatermark, lastStable, logStart int64
}

// takeLocked takes a run from the next partition with records, going
// round the partitions from where the last call stopped, so that a busy
// partition cannot starve the others, and skipping those in skip: up to
// limit records decoded already, or whole batches holding about limit
// records (at least one batch). The partition's position moves past the run.
//
// A partition with an error to report comes next in turn like one with
// records. When report is set, takeLocked returns the error (once: the
// partition is stopped, or keeps retrying, as Poll says); when it is not,
// it returns nothing, leaving the error to the next call.
func (c *Consumer) takeLocked(limit int, report bool, skip []*partState) (r run, ok bool, err error) {
	if err := c.pending; err != nil {
		if !report {
			return r, false, nil
		}
		c.pending = nil
		return r, false, err
	}
	count, start := len(c.order), c.next
	for i := range count {
		idx := (start + i) % count
		p := c.order[idx]
		if p.paused || slices.Contains(skip, p) {
			continue
		}
		if err := p.pending; err != nil {
			if !report {
				return r, false, nil
			}
			p.pending = nil
			c.next = (idx + 1) % count
			return r, false, err
		}
		for len(p.chunks) > 0 {
			ch := p.chunks[0]
			r = run{
				p: p, tp: p.tp, moves: p.moves, seeks: p.seeks, from: ch.from, start: p.position, buf: ch.buf, aborted: ch.aborted,
				highWatermark: ch.highWatermark, lastStable: ch.lastStable, logStart: ch.logStart,
			}
			switch {
			case ch.next < len(ch.records):
				take := min(len(ch.records)-ch.next, limit)
				r.records = ch.records[ch.next : ch.next+take : ch.next+take]
				ch.next += take
				p.position = r.records[take-1].Offset + 1
				if ch.next == len(ch.records) {
					p.position = ch.end // past the markers after them too
				}
			case ch.pos < len(ch.data):
				n := batchesFor(ch.data[ch.pos:], ch.from, limit, ch.aborted)
				r.batches = ch.data[ch.pos : ch.pos+n]
				ch.pos += n
				counted := min(n, ch.bytes) // none in a chunk given back
				ch.bytes -= counted
				c.releaseLocked(counted)
				ch.end = batchesEnd(r.batches, ch.end)
				p.position = ch.end
			default:
				c.popLocked(p)
				continue
			}
			r.end = p.position
			if ch.done() {
				c.popLocked(p)
			}
			c.next = (idx + 1) % count
			return r, true, nil
		}
	}
	return run{}, false, nil
}

// popLocked removes p's first chunk, which has been taken whole, and
// moves p's position to its end.
func (c *Consumer) popLocked(p *partState) {
	ch := p.chunks[0]
	p.position = ch.end
	c.releaseLocked(ch.bytes)
	c.unrefLocked(ch)
	p.chunks[0] = nil
	p.chunks = p.chunks[1:]
	c.wakeFetcherLocked(p, false)
}

// batchesFor returns how many bytes of data to take for about max
// records: whole batches, at least one. A batch whose header does not
// parse, or that is cut short, is taken with everything after it when it
// is the first, for the decoder to report.
func batchesFor(data []byte, from int64, max int, aborted []int64) int {
	pos, n := 0, 0
	for pos < len(data) && n < max {
		h, err := record.ParseHeader(data[pos:])
		if err != nil || h.Size() > len(data)-pos {
			if pos == 0 {
				return len(data)
			}
			break
		}
		pos += h.Size()
		if !h.Attributes.IsControl() && h.LastOffset() >= from && !isAborted(aborted, h.BaseOffset) {
			n += int(h.NumRecords)
		}
	}
	return pos
}

// batchesEnd returns the offset after the whole batches in data, or end
// when there are none.
func batchesEnd(data []byte, end int64) int64 {
	for pos := 0; pos < len(data); {
		h, err := record.ParseHeader(data[pos:])
		if err != nil || h.Size() > len(data)-pos {
			break
		}
		pos += h.Size()
		end = max(end, h.NextOffset())
	}
	return end
}

// batchReader decodes the batches of a run one at a time.
type batchReader struct {
	data []byte
	from int64
	crc  CRCCheck
	// aborted are the base offsets of the batches of aborted
	// transactions, skipped as control batches are.
	aborted []int64
	// pos is the position before the next batch: where an error in it
	// stops the partition.
	pos int64
}

// next decodes the next batch with records to return into scratch,
// skipping control batches, batches of aborted transactions and batches
// below from. It returns the batch's
// header and records, false at the end, or an error.
func (br *batchReader) next(scratch *[]record.Record) (record.Header, []record.Record, bool, error) {
	for len(br.data) > 0 {
		h, err := record.ParseHeader(br.data)
		if err == nil && h.Size() > len(br.data) {
			err = record.ErrTruncated
		}
		if err != nil {
			return h, nil, false, err
		}
		batch := br.data[:h.Size()]
		if h.LastOffset() < br.from {
			br.data = br.data[h.Size():]
			continue
		}
		if h.Attributes.IsControl() {
			if br.crc == VerifyCRC {
				if _, err := record.Validate(batch); err != nil {
					return h, nil, false, err
				}
			}
			br.data = br.data[h.Size():]
			br.pos = h.NextOffset()
			continue
		}
		if isAborted(br.aborted, h.BaseOffset) {
			br.data = br.data[h.Size():]
			br.pos = h.NextOffset()
			continue
		}
		b, err := record.DecodeInto(*scratch, batch, br.crc)
		if err != nil {
			return h, nil, false, err
		}
		*scratch = b.Records
		br.data = br.data[h.Size():]
		br.pos = h.NextOffset()
		return h, b.Records, true, nil
	}
	return record.Header{}, nil, false, nil
}

// failRun stops r's partition at offset with err, unless it moved since
// r was taken. When report is set the caller reports err; otherwise the
// partition keeps it for the next Poll.
func (c *Consumer) failRun(r *run, offset int64, err error, report bool) error {
	err = &FetchError{Topic: r.tp.Topic, Partition: r.tp.Partition, Offset: offset, Err: err}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.parts[r.tp]
	if p != nil && p.moves == r.moves && p.state == posReady {
		c.stopLocked(p, err)
		p.position = offset
		if report {
			p.pending = nil
		}
		c.broadcastLocked()
	}
	return err
}

// unread gives back what was taken of r and not returned: the records
// recs, which end at end, then the whole batches batches. The partition's
// position goes back to the first of them, and the next Poll or loop
// returns them. A partition moved since is left alone.
func (c *Consumer) unread(r *run, recs []Record, end int64, batches []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.parts[r.tp]
	if c.closed || p == nil || p.moves != r.moves || p.state != posReady || len(recs) == 0 && len(batches) == 0 {
		return
	}
	ch := &chunk{
		records: recs, end: end, data: batches, from: r.from, buf: r.buf, aborted: r.aborted,
		highWatermark: r.highWatermark, lastStable: r.lastStable, logStart: r.logStart,
	}
	if ch.buf != nil {
		ch.buf.refs++ // the records given back stay valid
	}
	p.chunks = append(p.chunks, nil)
	copy(p.chunks[1:], p.chunks)
	p.chunks[0] = ch
	p.position = end
	if len(recs) > 0 {
		p.position = recs[0].Offset
	}
	c.broadcastLocked()
}
