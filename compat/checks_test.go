package compat

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// allChecks returns the checks in the table's order: the data path,
// transactions (txn_test.go), then the admin workflow (admin_test.go).
func allChecks() []check {
	checks := []check{
		{id: "produce", name: "produce keys + headers, acks 0/1/all; read back exact", timeout: 60 * time.Second, run: checkProduce},
		{id: "compression", name: "gzip/snappy/lz4/zstd produced and read by the client", timeout: 60 * time.Second, run: checkCompression},
		{id: "compression-partlog", name: "gzip/snappy/lz4/zstd from partlog's producer, read by the client", timeout: 60 * time.Second, run: checkCompressionPartlog},
		{id: "positions", name: "consume from beginning, offset, timestamp, end", timeout: 60 * time.Second, run: checkPositions},
		{id: "end-of-partition", name: "end of partition (EOF event, or the high watermark)", timeout: 30 * time.Second, run: checkEndOfPartition},
		{id: "group", name: "consumer group: two members share, commit, one leaves, the other takes over", timeout: 90 * time.Second, run: checkGroup},
		{id: "idempotent", name: "idempotent producer", timeout: 30 * time.Second, run: checkIdempotent},
		{id: "secure-refused", name: "SASL_SSL with mutual TLS: a wrong password, no client certificate, or plaintext, writes nothing", timeout: 60 * time.Second,
			secureOnly: true, run: checkSecureRefused},
		{id: "acls", name: "ACLs: without them a user cannot produce, consume, create or delete; granted, it can", timeout: 90 * time.Second,
			secureOnly: true, run: checkACLs},
	}
	checks = append(checks, txnChecks()...)
	checks = append(checks, check{id: "leader-kill", name: "leader SIGKILLed under acks=all: every ack read back once, at its offset", timeout: 90 * time.Second,
		clusterOnly: true, disruptive: true, run: checkLeaderKill})
	return append(checks, adminChecks()...)
}

// codecs are the compression codecs Kafka defines, by compression.type.
var codecs = []struct {
	name  string
	codec record.Compression
}{{"gzip", record.Gzip}, {"snappy", record.Snappy}, {"lz4", record.LZ4}, {"zstd", record.Zstd}}

// acksName spells acks as Kafka's acks setting does.
func acksName(acks int) string {
	if acks == -1 {
		return "all"
	}
	return strconv.Itoa(acks)
}

// checkAcked checks the partitions and offsets a client's acknowledgements
// gave against where the records went: sent[i] landed at want[i]. Offsets
// the client did not report (-1) are not compared.
func checkAcked(what string, acked, want []rec) error {
	if len(acked) != len(want) {
		return fmt.Errorf("%s: %d acknowledgements for %d records", what, len(acked), len(want))
	}
	for i, a := range acked {
		if a.Partition != want[i].Partition || (a.Offset != -1 && a.Offset != want[i].Offset) {
			return fmt.Errorf("%s: record %d acknowledged at partition %d offset %d, want partition %d offset %d",
				what, i, a.Partition, a.Offset, want[i].Partition, want[i].Offset)
		}
	}
	return nil
}

// checkProduce: the client produces keyed records (one with a null key)
// with headers (an empty value, a repeated key) to explicit partitions,
// with acks=0, then 1, then all; each acknowledgement must give the
// record's offset, the partitions must hold exactly those records in that
// order, and the client must read them back exactly.
func checkProduce(ctx context.Context, x *run) error {
	topic := x.topic()
	const partitions, perPartition = 3, 3
	if err := x.tg.createTopic(ctx, topic, partitions, nil); err != nil {
		return err
	}
	want := map[int32][]rec{}
	for round, acks := range []int{0, 1, -1} {
		spec := produceSpec{Topic: topic, Acks: acks, Compression: "none"}
		for p := range int32(partitions) {
			headers := []hdr{{"h-partition", fmt.Appendf(nil, "p%d", p)}, {"h-empty", []byte{}}, {"h-twice", []byte("1")}, {"h-twice", []byte("2")}}
			for j := range perPartition {
				r := rec{Partition: p, Offset: int64(round*perPartition + j), Headers: headers,
					Key: fmt.Appendf(nil, "key acks=%s p%d #%d", acksName(acks), p, j), Value: fmt.Appendf(nil, "välue acks=%s p%d #%d", acksName(acks), p, j)}
				if j == perPartition-1 {
					r.Key = nil
				}
				spec.Records = append(spec.Records, r)
				want[p] = append(want[p], r)
			}
		}
		acked, err := x.d.produce(ctx, x.tg, spec)
		if err != nil {
			return fmt.Errorf("acks=%s: %w", acksName(acks), err)
		}
		if err := checkAcked("acks="+acksName(acks), acked, spec.Records); err != nil {
			return err
		}
		// acks=0 returns before the node has the records: the next round,
		// perhaps on another connection, must come after them.
		if err := x.tg.waitEnds(ctx, topic, partitions, int64((round+1)*perPartition)); err != nil {
			return fmt.Errorf("acks=%s: %w", acksName(acks), err)
		}
	}
	for p := range int32(partitions) {
		inLog, err := x.tg.logRecords(ctx, topic, p)
		if err != nil {
			return err
		}
		if err := sameRecords(fmt.Sprintf("partition %d as stored", p), inLog, want[p]); err != nil {
			return err
		}
		got, err := x.d.consume(ctx, x.tg, consumeSpec{Topic: topic, Partition: p, From: start{Kind: "beginning"}, Count: len(inLog)})
		if err != nil {
			return fmt.Errorf("reading partition %d back: %w", p, err)
		}
		if err := sameRecords(fmt.Sprintf("partition %d as the client read it", p), got, inLog); err != nil {
			return err
		}
	}
	return nil
}

// waitEnds waits until every partition of topic has at least end records.
func (tg *target) waitEnds(ctx context.Context, topic string, partitions int32, end int64) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		ends, err := tg.listOffsets(ctx, topic, partitions, kafka.LatestTimestamp)
		if err == nil && !slices.ContainsFunc(slices.Collect(maps.Values(ends)), func(e int64) bool { return e < end }) {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("harness: timed out waiting for every partition of %s to hold %d records: ends %v, %v", topic, end, ends, err)
		}
	}
}

// compressible returns a value that compresses well.
func compressible(codec string, i int) []byte {
	return []byte(strings.Repeat(fmt.Sprintf("%s record %d, ", codec, i), 40))
}

// checkCompression: the client produces five records with each codec to
// a partition of its own; each partition's batches must be compressed
// with that codec and hold exactly those records, and the client must read
// them back exactly.
func checkCompression(ctx context.Context, x *run) error {
	topic := x.topic()
	if err := x.tg.createTopic(ctx, topic, int32(len(codecs)), nil); err != nil {
		return err
	}
	var errs []string
	for i, c := range codecs {
		p := int32(i)
		spec := produceSpec{Topic: topic, Acks: -1, Compression: c.name}
		for j := range 5 {
			spec.Records = append(spec.Records, rec{Partition: p, Offset: int64(j), Key: fmt.Appendf(nil, "%s-%d", c.name, j),
				Value: compressible(c.name, j), Headers: []hdr{{"codec", []byte(c.name)}}})
		}
		err := func() error {
			acked, err := x.d.produce(ctx, x.tg, spec)
			if err != nil {
				return err
			}
			if err := checkAcked("acknowledged", acked, spec.Records); err != nil {
				return err
			}
			inLog, err := x.tg.checkCodec(ctx, topic, p, c.codec)
			if err != nil {
				return err
			}
			if err := sameRecords("as stored", inLog, spec.Records); err != nil {
				return err
			}
			got, err := x.d.consume(ctx, x.tg, consumeSpec{Topic: topic, Partition: p, From: start{Kind: "beginning"}, Count: len(inLog)})
			if err != nil {
				return fmt.Errorf("reading back: %w", err)
			}
			return sameRecords("as the client read it", got, inLog)
		}()
		if err != nil {
			errs = append(errs, c.name+": "+err.Error())
		}
	}
	return joinErrs(errs)
}

// checkCodec reads a partition and checks that each of its batches is
// compressed with codec; it returns the records.
func (tg *target) checkCodec(ctx context.Context, topic string, partition int32, codec record.Compression) ([]rec, error) {
	batches, err := tg.readLog(ctx, topic, partition)
	if err != nil {
		return nil, err
	}
	for _, b := range batches {
		if got := b.Attributes.Compression(); got != codec {
			return nil, fmt.Errorf("the batch at offset %d is compressed with %v, not %v", b.BaseOffset, got, codec)
		}
	}
	return recordsOf(partition, batches), nil
}

// joinErrs joins the errors of parts of a check into one, or nil.
func joinErrs(errs []string) error {
	if len(errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}

// checkCompressionPartlog: partlog's producer writes five records with
// each codec to a partition of its own, and the client must read each
// partition exactly.
func checkCompressionPartlog(ctx context.Context, x *run) error {
	topic := x.topic()
	if err := x.tg.createTopic(ctx, topic, int32(len(codecs)), nil); err != nil {
		return err
	}
	var errs []string
	for i, c := range codecs {
		p := int32(i)
		var recs []rec
		for j := range 5 {
			recs = append(recs, rec{Partition: p, Key: fmt.Appendf(nil, "%s-%d", c.name, j), Value: compressible(c.name, j),
				Headers: []hdr{{"codec", []byte(c.name)}}})
		}
		err := func() error {
			if _, err := x.tg.produceWithPartlog(ctx, topic, recs, producer.Compression(c.codec)); err != nil {
				return err
			}
			inLog, err := x.tg.checkCodec(ctx, topic, p, c.codec)
			if err != nil {
				return err
			}
			got, err := x.d.consume(ctx, x.tg, consumeSpec{Topic: topic, Partition: p, From: start{Kind: "beginning"}, Count: len(inLog)})
			if err != nil {
				return err
			}
			return sameRecords("as the client read it", got, inLog)
		}()
		if err != nil {
			errs = append(errs, c.name+": "+err.Error())
		}
	}
	return joinErrs(errs)
}

// checkPositions: ten records an hour old, a second apart; the client
// reads from the beginning, from offset 4, from a timestamp between
// records 6 and 7 and from record 3's exact timestamp — each must give
// exactly the records from there — and from the end, while the harness
// adds a record every 100 ms: what it reads must be records added after
// it started, consecutive, exactly as stored.
func checkPositions(ctx context.Context, x *run) error {
	topic := x.topic()
	if err := x.tg.createTopic(ctx, topic, 1, nil); err != nil {
		return err
	}
	base := time.Now().Add(-time.Hour).UnixMilli()
	var recs []rec
	for i := range 10 {
		recs = append(recs, rec{Timestamp: base + int64(i)*1000, Key: fmt.Appendf(nil, "key-%d", i), Value: fmt.Appendf(nil, "value-%d", i)})
	}
	written, err := x.tg.produceWithPartlog(ctx, topic, recs)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		what string
		from start
		want []rec
	}{
		{"from the beginning", start{Kind: "beginning"}, written},
		{"from offset 4", start{Kind: "offset", At: 4}, written[4:]},
		{"from a timestamp between records 6 and 7", start{Kind: "timestamp", At: base + 6500}, written[7:]},
		{"from record 3's timestamp", start{Kind: "timestamp", At: base + 3000}, written[3:]},
	} {
		got, err := x.d.consume(ctx, x.tg, consumeSpec{Topic: topic, Partition: 0, From: c.from, Count: len(c.want)})
		if err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		if err := sameRecords(c.what, got, c.want); err != nil {
			return err
		}
	}

	// From the end: the harness adds records until the client has read two.
	type answer struct {
		recs []rec
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		recs, err := x.d.consume(ctx, x.tg, consumeSpec{Topic: topic, Partition: 0, From: start{Kind: "end"}, Count: 2})
		done <- answer{recs, err}
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var got answer
	for i := 0; ; i++ {
		select {
		case got = <-done:
		case <-tick.C:
			r := rec{Key: fmt.Appendf(nil, "late-%d", i), Value: fmt.Appendf(nil, "late value %d", i)}
			if _, err := x.tg.produceWithPartlog(ctx, topic, []rec{r}); err != nil {
				return err
			}
			continue
		}
		break
	}
	if got.err != nil {
		return fmt.Errorf("from the end: %w", got.err)
	}
	if len(got.recs) != 2 {
		return fmt.Errorf("from the end: read %d records, want 2", len(got.recs))
	}
	first := got.recs[0].Offset
	if first < int64(len(written)) {
		return fmt.Errorf("from the end: the first record read is at offset %d, before the end (%d) when the client started", first, len(written))
	}
	inLog, err := x.tg.logRecords(ctx, topic, 0)
	if err != nil {
		return err
	}
	if int(first)+2 > len(inLog) {
		return fmt.Errorf("from the end: read offsets %d and %d, but the log ends at %d", first, got.recs[1].Offset, len(inLog))
	}
	return sameRecords("from the end", got.recs, inLog[first:first+2])
}

// checkEndOfPartition: five records; the client reads from the beginning
// until it says the partition has ended, and must have read exactly the
// five and give offset 5 as the end.
func checkEndOfPartition(ctx context.Context, x *run) error {
	topic := x.topic()
	if err := x.tg.createTopic(ctx, topic, 1, nil); err != nil {
		return err
	}
	written, err := x.tg.produceWithPartlog(ctx, topic, keyedRecords(5))
	if err != nil {
		return err
	}
	got, end, err := x.d.consumeToEnd(ctx, x.tg, topic, 0)
	if err != nil {
		return err
	}
	if err := sameRecords("read to the end", got, written); err != nil {
		return err
	}
	if end != int64(len(written)) {
		return fmt.Errorf("the client says the partition ends at %d, want %d", end, len(written))
	}
	return nil
}

// checkIdempotent: the client produces ten records to two partitions with
// idempotence on; each partition must hold exactly its records, in batches
// of one producer id whose sequence numbers start at 0 and run on without
// a gap.
func checkIdempotent(ctx context.Context, x *run) error {
	topic := x.topic()
	if err := x.tg.createTopic(ctx, topic, 2, nil); err != nil {
		return err
	}
	spec := produceSpec{Topic: topic, Acks: -1, Compression: "none", Idempotent: true}
	want := map[int32][]rec{}
	for i := range 10 {
		p := int32(i % 2)
		r := rec{Partition: p, Offset: int64(len(want[p])), Key: fmt.Appendf(nil, "key-%d", i), Value: fmt.Appendf(nil, "value-%d", i)}
		spec.Records = append(spec.Records, r)
		want[p] = append(want[p], r)
	}
	acked, err := x.d.produce(ctx, x.tg, spec)
	if err != nil {
		return err
	}
	if err := checkAcked("acknowledged", acked, spec.Records); err != nil {
		return err
	}
	for p := range int32(2) {
		batches, err := x.tg.readLog(ctx, topic, p)
		if err != nil {
			return err
		}
		if err := sameRecords(fmt.Sprintf("partition %d as stored", p), recordsOf(p, batches), want[p]); err != nil {
			return err
		}
		seq := int32(0)
		for _, b := range batches {
			switch {
			case b.ProducerID < 0 || b.ProducerEpoch < 0:
				return fmt.Errorf("partition %d: the batch at offset %d has no producer id (%d, epoch %d): the producer is not idempotent",
					p, b.BaseOffset, b.ProducerID, b.ProducerEpoch)
			case b.ProducerID != batches[0].ProducerID:
				return fmt.Errorf("partition %d: the batch at offset %d has producer id %d, the first %d", p, b.BaseOffset, b.ProducerID, batches[0].ProducerID)
			case b.BaseSequence != seq:
				return fmt.Errorf("partition %d: the batch at offset %d has base sequence %d, want %d", p, b.BaseOffset, b.BaseSequence, seq)
			}
			seq += b.NumRecords
		}
	}
	return nil
}

// checkGroup: member A joins a group on a topic of four partitions and
// gets them all; then member B joins and they split the partitions; then
// B leaves and A takes them all back. Records produced at each stage must
// each be consumed once by the group, exactly as produced, and at the end
// the group's committed offsets must be the partitions' ends.
func checkGroup(ctx context.Context, x *run) error {
	const partitions = 4
	topic := x.topic()
	group := topic + "-group"
	if err := x.tg.createTopic(ctx, topic, partitions, nil); err != nil {
		return err
	}
	w := newGroupWatch()
	all := []int32{0, 1, 2, 3}
	produced := map[[2]int64]rec{} // partition, offset → record
	stage := 0
	produceStage := func() error {
		stage++
		var recs []rec
		for i := range 2 * partitions {
			recs = append(recs, rec{Partition: int32(i % partitions), Key: fmt.Appendf(nil, "stage-%d-%d", stage, i), Value: fmt.Appendf(nil, "value %d-%d", stage, i)})
		}
		written, err := x.tg.produceWithPartlog(ctx, topic, recs)
		if err != nil {
			return err
		}
		for _, r := range written {
			produced[[2]int64{int64(r.Partition), r.Offset}] = r
		}
		return w.wait(ctx, fmt.Sprintf("the %d records of stage %d to be consumed", len(written), stage), func() bool {
			return len(w.consumed) >= len(produced)
		})
	}

	a, err := x.d.join(ctx, x.tg, group, topic)
	if err != nil {
		return fmt.Errorf("member A: %w", err)
	}
	defer a.Leave()
	w.watch("A", a)
	if err := w.wait(ctx, "A to be assigned every partition", func() bool { return slices.Equal(w.assigned["A"], all) }); err != nil {
		return err
	}
	if err := produceStage(); err != nil {
		return err
	}

	b, err := x.d.join(ctx, x.tg, group, topic)
	if err != nil {
		return fmt.Errorf("member B: %w", err)
	}
	defer b.Leave()
	w.watch("B", b)
	if err := w.wait(ctx, "A and B to share the partitions", func() bool {
		as, bs := w.assigned["A"], w.assigned["B"]
		return len(as) > 0 && len(bs) > 0 && slices.Equal(slices.Sorted(slices.Values(append(slices.Clone(as), bs...))), all)
	}); err != nil {
		return err
	}
	if err := produceStage(); err != nil {
		return err
	}

	if err := b.Leave(); err != nil {
		return fmt.Errorf("member B leaving: %w", err)
	}
	if err := w.wait(ctx, "A to take every partition back", func() bool { return slices.Equal(w.assigned["A"], all) }); err != nil {
		return err
	}
	if err := produceStage(); err != nil {
		return err
	}
	if err := a.Leave(); err != nil {
		return fmt.Errorf("member A leaving: %w", err)
	}
	if err := w.wait(ctx, "both members to end", func() bool { return w.ended["A"] && w.ended["B"] }); err != nil {
		return err
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != "" {
		return errors.New(w.err)
	}
	for at, got := range w.consumed {
		want, ok := produced[at]
		if !ok {
			return fmt.Errorf("consumed a record never produced: %v", got.rec)
		}
		if len(got.by) != 1 {
			return fmt.Errorf("record %v consumed %d times (by %v)", want, len(got.by), got.by)
		}
		if diff := recordDiff(got.rec, want); diff != "" {
			return fmt.Errorf("consumed %v, produced %v (%s differs)", got.rec, want, diff)
		}
	}
	if len(w.consumed) != len(produced) {
		return fmt.Errorf("%d records consumed, %d produced", len(w.consumed), len(produced))
	}
	ends, err := x.tg.listOffsets(ctx, topic, partitions, kafka.LatestTimestamp)
	if err != nil {
		return err
	}
	committed, err := x.tg.committed(ctx, group, topic, partitions)
	if err != nil {
		return err
	}
	if !maps.Equal(committed, ends) {
		return fmt.Errorf("the group committed %v, want the partitions' ends %v", committed, ends)
	}
	return nil
}

// groupWatch follows a group's members' events.
type groupWatch struct {
	mu       sync.Mutex
	assigned map[string][]int32 // member → its assignment, sorted
	consumed map[[2]int64]*consumption
	ended    map[string]bool
	// misplaced says a record was consumed by a member that was not
	// assigned its partition.
	misplaced string
	err       string        // the first member's error
	changed   chan struct{} // closed and replaced at every event
}

type consumption struct {
	rec rec
	by  []string
}

func newGroupWatch() *groupWatch {
	return &groupWatch{assigned: map[string][]int32{}, consumed: map[[2]int64]*consumption{}, ended: map[string]bool{},
		changed: make(chan struct{})}
}

// watch follows m's events on a goroutine of its own until it ends.
func (w *groupWatch) watch(name string, m member) {
	go func() {
		for ev := range m.Events() {
			w.mu.Lock()
			switch {
			case ev.Err != "":
				if w.err == "" {
					w.err = fmt.Sprintf("member %s: %s", name, ev.Err)
				}
			case ev.Record != nil:
				r := *ev.Record
				at := [2]int64{int64(r.Partition), r.Offset}
				if w.consumed[at] == nil {
					w.consumed[at] = &consumption{rec: r}
				}
				w.consumed[at].by = append(w.consumed[at].by, name)
			default:
				w.assigned[name] = slices.Sorted(slices.Values(ev.Assigned))
			}
			w.notifyLocked()
			w.mu.Unlock()
		}
		w.mu.Lock()
		w.ended[name] = true
		w.notifyLocked()
		w.mu.Unlock()
	}()
}

func (w *groupWatch) notifyLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// wait waits until cond, called with w.mu held, holds, or a member fails.
func (w *groupWatch) wait(ctx context.Context, what string, cond func() bool) error {
	for {
		w.mu.Lock()
		ok, err, changed := cond(), w.err, w.changed
		state := fmt.Sprintf("assignments %v, %d records consumed", w.assigned, len(w.consumed))
		w.mu.Unlock()
		switch {
		case err != "":
			return fmt.Errorf("waiting for %s: %s", what, err)
		case ok:
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %s (%s)", what, state)
		}
	}
}

// checkLeaderKill: the client produces numbered records at acks=all,
// idempotently, to a topic of three partitions with replication factor 3
// and min.insync.replicas=2; after 200 acknowledgements the leader of
// partition 0 is killed with SIGKILL, and the client must go on: 200 more
// acknowledgements. Then every acknowledged record must be in the log
// exactly once, at the partition and offset its acknowledgement gave, and
// no record may be in the log twice. The killed node is restarted on its
// directory and port, and back in the ISR, before the check ends.
func checkLeaderKill(ctx context.Context, x *run) (err error) {
	topic := x.topic()
	if err := x.tg.createTopic(ctx, topic, 3, nil); err != nil {
		return err
	}
	md, err := x.tg.metadata(ctx, topic)
	if err != nil {
		return err
	}
	s, err := x.d.produceStream(ctx, x.tg, topic)
	if err != nil {
		return err
	}
	defer s.Stop()
	acks := newAckWatch(s)
	if err := acks.waitAcked(ctx, 200); err != nil {
		return fmt.Errorf("before the kill: %w", err)
	}
	leader := md.Partitions[0].Leader
	x.tg.nodes[leader].kill()
	defer func() {
		if rerr := x.tg.restart(context.WithoutCancel(ctx), leader, topic); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if err := x.tg.waitTopic(ctx, topic, "a new leader of partition 0", func(tm transport.TopicMetadata) bool {
		return tm.Partitions[0].Leader >= 0 && tm.Partitions[0].Leader != leader
	}); err != nil {
		return err
	}
	if err := acks.waitAcked(ctx, 200); err != nil {
		return fmt.Errorf("after killing node %d, the leader of partition 0: %w", leader, err)
	}
	if err := s.Stop(); err != nil {
		return fmt.Errorf("stopping the producer: %w", err)
	}
	acked, failed := acks.result()

	type at struct {
		partition int32
		offset    int64
	}
	inLog := map[int]at{}
	batchOf := map[at]string{} // the producer id, epoch and sequence of each record's batch
	for p := range int32(3) {
		batches, err := x.tg.readLog(ctx, topic, p)
		if err != nil {
			return err
		}
		for _, b := range batches {
			for _, r := range b.Records {
				batchOf[at{p, r.Offset}] = fmt.Sprintf("producer %d epoch %d base sequence %d, batch at %d", b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.BaseOffset)
			}
		}
		for _, r := range recordsOf(p, batches) {
			seq, err := strconv.Atoi(string(r.Value))
			if err != nil {
				return fmt.Errorf("partition %d offset %d holds %q, not a sequence number", p, r.Offset, r.Value)
			}
			if prev, dup := inLog[seq]; dup {
				return fmt.Errorf("record %d is in the log twice: partition %d offset %d (%s) and partition %d offset %d (%s)",
					seq, prev.partition, prev.offset, batchOf[prev], p, r.Offset, batchOf[at{p, r.Offset}])
			}
			if want := fmt.Sprintf("key-%d", seq%30); string(r.Key) != want {
				return fmt.Errorf("record %d at partition %d offset %d has key %q, want %q", seq, p, r.Offset, r.Key, want)
			}
			inLog[seq] = at{p, r.Offset}
		}
	}
	for seq, a := range acked {
		got, ok := inLog[seq]
		if !ok {
			return fmt.Errorf("acknowledged record %d (partition %d offset %d) is not in the log", seq, a.Partition, a.Offset)
		}
		if a.Offset >= 0 && (got != at{a.Partition, a.Offset}) {
			return fmt.Errorf("record %d was acknowledged at partition %d offset %d but is at partition %d offset %d", seq, a.Partition, a.Offset, got.partition, got.offset)
		}
	}
	for seq := range inLog {
		if _, ok := acked[seq]; !ok {
			if _, ok := failed[seq]; !ok {
				return fmt.Errorf("record %d is in the log but the client reported no outcome for it", seq)
			}
		}
	}
	x.t.Logf("%s leader-kill: %d records acknowledged, %d failed, node %d killed", x.d.name(), len(acked), len(failed), leader)
	return nil
}

// restart starts a killed node again on its directory and address, and
// waits until it is back in every ISR of topic.
func (tg *target) restart(ctx context.Context, id int32, topic string) error {
	p := tg.nodes[id]
	if p.cmd != nil {
		return nil
	}
	i := slices.Index(p.args, "--listen")
	p.args[i+1] = p.addr // the same port: clients and peers find it where it was
	if err := p.start(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return tg.waitTopic(ctx, topic, fmt.Sprintf("node %d back in every ISR", id), fullISR)
}

// ackWatch collects a stream's acknowledgements.
type ackWatch struct {
	mu      sync.Mutex
	acked   map[int]streamAck
	failed  map[int]string
	closed  bool
	changed chan struct{}
}

func newAckWatch(s stream) *ackWatch {
	w := &ackWatch{acked: map[int]streamAck{}, failed: map[int]string{}, changed: make(chan struct{})}
	go func() {
		for a := range s.Acks() {
			w.mu.Lock()
			if a.Err != "" {
				w.failed[a.Seq] = a.Err
			} else {
				w.acked[a.Seq] = a
			}
			close(w.changed)
			w.changed = make(chan struct{})
			w.mu.Unlock()
		}
		w.mu.Lock()
		w.closed = true
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
	}()
	return w
}

// waitAcked waits until n more records than now are acknowledged.
func (w *ackWatch) waitAcked(ctx context.Context, n int) error {
	w.mu.Lock()
	want := len(w.acked) + n
	w.mu.Unlock()
	for {
		w.mu.Lock()
		got, failed, closed, changed := len(w.acked), len(w.failed), w.closed, w.changed
		var someErr string
		for _, e := range w.failed {
			someErr = e
			break
		}
		w.mu.Unlock()
		switch {
		case got >= want:
			return nil
		case closed:
			return fmt.Errorf("the producer stopped after %d acknowledgements, %d failures (%s)", got, failed, someErr)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("timed out: %d of %d records acknowledged, %d failed (%s)", got, want, failed, someErr)
		}
	}
}

// result returns the acknowledged and failed records, once the stream
// has stopped.
func (w *ackWatch) result() (map[int]streamAck, map[int]string) {
	for {
		w.mu.Lock()
		closed, changed := w.closed, w.changed
		if closed {
			defer w.mu.Unlock()
			return w.acked, w.failed
		}
		w.mu.Unlock()
		<-changed
	}
}
