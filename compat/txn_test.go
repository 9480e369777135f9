package compat

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// txnChecks returns the transaction checks, in the table's order.
func txnChecks() []check {
	return []check{
		{id: "txn", name: "transactions: commit, abort, commit; read_committed and read_uncommitted", timeout: 90 * time.Second, run: checkTxn},
		{id: "txn-offsets", name: "consume-transform-produce with the offsets in the transaction (KIP-447)", timeout: 120 * time.Second, run: checkTxnOffsets},
	}
}

// checkTxn: the client, as one transactional producer, writes a
// transaction of three records to each of two partitions and commits it,
// then one it aborts, then one it commits. Then:
//
//   - each partition's log must hold the three transactions in order, each
//     its records, as sent and at the offsets acknowledged, in
//     transactional batches of one producer id, followed by a control
//     batch of that producer id and epoch holding a COMMIT or ABORT marker
//     as the transaction ended (the aborted records are in the log, marked
//     transactional);
//   - partlog's read_committed fetch must give the high watermark as the
//     last stable offset (no transaction is open) and list the aborted
//     transaction: its producer id and first offset;
//   - the client, reading with read_committed, must get exactly the
//     committed records, in order, and none of the aborted;
//   - the client, reading with read_uncommitted, must get every record.
func checkTxn(ctx context.Context, x *run) error {
	const partitions = 2
	topic := x.topic()
	if err := x.tg.createTopic(ctx, topic, partitions, nil); err != nil {
		return err
	}
	spec := txnSpec{Topic: topic, TransactionalID: topic + "-txn"}
	for i, commit := range []bool{true, false, true} {
		t := txn{Commit: commit}
		ending := map[bool]string{true: "committed", false: "aborted"}[commit]
		for j := range 3 * partitions {
			t.Records = append(t.Records, rec{Partition: int32(j % partitions), Offset: -1, Key: fmt.Appendf(nil, "txn-%d-%d", i+1, j),
				Value: fmt.Appendf(nil, "%s transaction %d, record %d", ending, i+1, j), Headers: []hdr{{"txn", strconv.AppendInt(nil, int64(i+1), 10)}}})
		}
		spec.Transactions = append(spec.Transactions, t)
	}
	acked, err := x.d.transact(ctx, x.tg, spec)
	if err != nil {
		return err
	}
	if err := x.tg.waitStable(ctx, topic, partitions); err != nil {
		return err
	}

	// The log, batch by batch.
	stored := map[int32][]txnInLog{}
	var producerID int64 = -1
	for p := range int32(partitions) {
		batches, err := x.tg.readLog(ctx, topic, p)
		if err != nil {
			return err
		}
		txns, err := txnsInLog(p, batches, x.d.transactionVersion())
		if err != nil {
			return err
		}
		if len(txns) != len(spec.Transactions) {
			return fmt.Errorf("partition %d holds %d transactions, want %d", p, len(txns), len(spec.Transactions))
		}
		for i, t := range txns {
			want := map[bool]record.ControlType{true: record.ControlCommit, false: record.ControlAbort}[spec.Transactions[i].Commit]
			switch {
			case producerID == -1:
				producerID = t.producerID
			case t.producerID != producerID:
				return fmt.Errorf("partition %d: transaction %d has producer id %d, an earlier one %d: one transactional producer wrote them all",
					p, i+1, t.producerID, producerID)
			}
			if t.marker != want {
				return fmt.Errorf("partition %d: transaction %d ends with a %v marker (offset %d), want %v", p, i+1, t.marker, t.markerOffset, want)
			}
			if n := len(recordsTo(p, spec.Transactions[i].Records)); len(t.records) != n {
				return fmt.Errorf("partition %d: transaction %d has %d records before its marker, want %d", p, i+1, len(t.records), n)
			}
		}
		stored[p] = txns
	}

	// Every record as sent, with its offset in the log; and what a
	// read_committed and a read_uncommitted consumer of each partition
	// should see.
	var sent []rec
	all, committed := map[int32][]rec{}, map[int32][]rec{}
	for i, t := range spec.Transactions {
		next := map[int32]int{}
		for _, r := range t.Records {
			r.Offset = stored[r.Partition][i].records[next[r.Partition]].Offset
			next[r.Partition]++
			sent = append(sent, r)
			all[r.Partition] = append(all[r.Partition], r)
			if t.Commit {
				committed[r.Partition] = append(committed[r.Partition], r)
			}
		}
	}
	for p := range int32(partitions) {
		var inLog []rec
		for _, t := range stored[p] {
			inLog = append(inLog, t.records...)
		}
		if err := sameRecords(fmt.Sprintf("partition %d as stored", p), inLog, all[p]); err != nil {
			return err
		}
	}
	if err := checkAcked("acknowledged", acked, sent); err != nil {
		return err
	}

	// partlog's read_committed fetch.
	for p := range int32(partitions) {
		pr, err := x.tg.fetchCommitted(ctx, topic, p)
		if err != nil {
			return err
		}
		var want []transport.AbortedTransaction
		for i, t := range spec.Transactions {
			if !t.Commit {
				want = append(want, transport.AbortedTransaction{ProducerID: producerID, FirstOffset: stored[p][i].records[0].Offset})
			}
		}
		if !slices.Equal(pr.AbortedTransactions, want) {
			return fmt.Errorf("partition %d: partlog's read_committed fetch lists the aborted transactions %+v, want %+v", p, pr.AbortedTransactions, want)
		}
		if pr.LastStableOffset != pr.HighWatermark {
			return fmt.Errorf("partition %d: the last stable offset is %d, the high watermark %d, with every transaction ended", p, pr.LastStableOffset, pr.HighWatermark)
		}
	}

	// The client's reads.
	for p := range int32(partitions) {
		for _, read := range []struct {
			isolation string
			want      []rec
		}{{"read_committed", committed[p]}, {"read_uncommitted", all[p]}} {
			got, err := x.d.consume(ctx, x.tg, consumeSpec{Topic: topic, Partition: p, From: start{Kind: "beginning"}, Count: len(read.want), Isolation: read.isolation})
			if err != nil {
				return fmt.Errorf("partition %d, %s: %w", p, read.isolation, err)
			}
			if err := sameRecords(fmt.Sprintf("partition %d as the client read it with %s", p, read.isolation), got, read.want); err != nil {
				return err
			}
		}
	}
	return nil
}

// recordsTo returns the records of recs that go to partition.
func recordsTo(partition int32, recs []rec) []rec {
	var out []rec
	for _, r := range recs {
		if r.Partition == partition {
			out = append(out, r)
		}
	}
	return out
}

// txnInLog is a transaction as a partition's log holds it: its data
// records, and the marker that ends it.
type txnInLog struct {
	producerID    int64
	producerEpoch int16
	records       []rec
	marker        record.ControlType
	markerOffset  int64
}

// txnsInLog splits a partition's batches, which one transactional producer
// wrote a transaction after the other, into its transactions: each a run
// of transactional data batches of one producer id and epoch, then the
// control batch of that producer id holding the marker that ends it — at
// the transaction's epoch, or, for a client speaking transaction version
// 2 (tv), at the next one. Anything else — a batch outside a transaction,
// a marker ending nothing or at another epoch, another producer's batch
// inside a transaction, records after the last marker — is an error.
func txnsInLog(partition int32, batches []record.Batch, tv int16) ([]txnInLog, error) {
	markerEpoch := func(t *txnInLog) int16 {
		if tv >= 2 {
			return t.producerEpoch + 1
		}
		return t.producerEpoch
	}
	var out []txnInLog
	var cur *txnInLog
	for _, b := range batches {
		a := b.Attributes
		switch {
		case !a.IsTransactional():
			return nil, fmt.Errorf("partition %d: the batch at offset %d is not transactional (%v)", partition, b.BaseOffset, a)
		case b.ProducerID < 0:
			return nil, fmt.Errorf("partition %d: the batch at offset %d has no producer id (%d)", partition, b.BaseOffset, b.ProducerID)
		case cur != nil && !a.IsControl() && (b.ProducerID != cur.producerID || b.ProducerEpoch != cur.producerEpoch):
			return nil, fmt.Errorf("partition %d: the batch at offset %d (%v) has producer id %d epoch %d, inside a transaction of producer id %d epoch %d",
				partition, b.BaseOffset, a, b.ProducerID, b.ProducerEpoch, cur.producerID, cur.producerEpoch)
		case cur != nil && a.IsControl() && (b.ProducerID != cur.producerID || b.ProducerEpoch != markerEpoch(cur)):
			return nil, fmt.Errorf("partition %d: the marker at offset %d has producer id %d epoch %d, ending a transaction of producer id %d epoch %d (transaction version %d: want epoch %d)",
				partition, b.BaseOffset, b.ProducerID, b.ProducerEpoch, cur.producerID, cur.producerEpoch, tv, markerEpoch(cur))
		case !a.IsControl():
			if cur == nil {
				cur = &txnInLog{producerID: b.ProducerID, producerEpoch: b.ProducerEpoch}
			}
			cur.records = append(cur.records, recordsOf(partition, []record.Batch{b})...)
			continue
		case cur == nil:
			return nil, fmt.Errorf("partition %d: the control batch at offset %d (producer id %d) ends no transaction", partition, b.BaseOffset, b.ProducerID)
		case len(b.Records) != 1:
			return nil, fmt.Errorf("partition %d: the control batch at offset %d holds %d records, want 1", partition, b.BaseOffset, len(b.Records))
		}
		c, err := record.ParseControlRecord(b.Records[0])
		if err != nil {
			return nil, fmt.Errorf("partition %d: the control batch at offset %d: %w", partition, b.BaseOffset, err)
		}
		cur.marker, cur.markerOffset = c.Type, b.BaseOffset
		out = append(out, *cur)
		cur = nil
	}
	if cur != nil {
		return nil, fmt.Errorf("partition %d: %d records of producer id %d after the last marker: a transaction left open", partition, len(cur.records), cur.producerID)
	}
	return out, nil
}

// decided splits a partition's data records by how their transactions
// ended, as a read_committed consumer sees them: committed (with records
// written outside a transaction) and aborted, each in offset order. The
// harness reads a partition once it is stable: a transactional record no
// marker has decided is an error.
func decided(partition int32, batches []record.Batch) (committed, aborted []rec, err error) {
	open := map[int64][]rec{} // producer id → its records awaiting a marker
	for _, b := range batches {
		recs := recordsOf(partition, []record.Batch{b})
		switch {
		case b.Attributes.IsControl():
			if len(b.Records) == 0 {
				continue
			}
			c, err := record.ParseControlRecord(b.Records[0])
			if err != nil {
				return nil, nil, fmt.Errorf("partition %d: the control batch at offset %d: %w", partition, b.BaseOffset, err)
			}
			switch c.Type {
			case record.ControlCommit:
				committed = append(committed, open[b.ProducerID]...)
			case record.ControlAbort:
				aborted = append(aborted, open[b.ProducerID]...)
			}
			delete(open, b.ProducerID)
		case b.Attributes.IsTransactional():
			open[b.ProducerID] = append(open[b.ProducerID], recs...)
		default:
			committed = append(committed, recs...)
		}
	}
	for pid, recs := range open {
		return nil, nil, fmt.Errorf("partition %d: %d records of producer id %d (from offset %d) with no marker", partition, len(recs), pid, recs[0].Offset)
	}
	byOffset := func(a, b rec) int { return cmp.Compare(a.Offset, b.Offset) }
	slices.SortFunc(committed, byOffset)
	slices.SortFunc(aborted, byOffset)
	return committed, aborted, nil
}

// fetchCommitted reads a partition from offset 0 with a read_committed
// fetch of partlog's client, and returns the answer: its last stable
// offset and aborted transactions.
func (tg *target) fetchCommitted(ctx context.Context, topic string, partition int32) (transport.FetchPartitionResponse, error) {
	pr, err := retrying(ctx, func() (transport.FetchPartitionResponse, error) {
		resp, err := tg.client.Fetch(ctx, &transport.FetchRequest{ReplicaID: kafka.ConsumerReplicaID, MaxBytes: 8 << 20, Isolation: kafka.ReadCommitted,
			Topics: []transport.FetchTopic{{Topic: topic, Partitions: []transport.FetchPartition{
				{Partition: partition, CurrentLeaderEpoch: -1, FetchOffset: 0, LastFetchedEpoch: -1, LogStartOffset: -1, MaxBytes: 8 << 20}}}}})
		if err != nil {
			return transport.FetchPartitionResponse{}, err
		}
		pr := resp.Topics[0].Partitions[0]
		return pr, pr.Err
	})
	if err != nil {
		return pr, fmt.Errorf("harness: read_committed fetch %s-%d: %w", topic, partition, err)
	}
	return pr, nil
}

// waitStable waits until every partition of topic is stable: its last
// stable offset (ListOffsets latest, read_committed) is its high
// watermark, every transaction's marker written.
func (tg *target) waitStable(ctx context.Context, topic string, partitions int32) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		var state string
		stable := true
		for p := range partitions {
			hw, err := tg.listOffset(ctx, topic, p, kafka.LatestTimestamp)
			if err != nil {
				return err
			}
			lso, err := tg.listOffsetAs(ctx, topic, p, kafka.LatestTimestamp, kafka.ReadCommitted)
			if err != nil {
				return err
			}
			stable = stable && lso == hw
			state += fmt.Sprintf(" partition %d: high watermark %d, last stable offset %d;", p, hw, lso)
		}
		if stable {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("harness: timed out waiting for %s to be stable (every transaction ended):%s", topic, state)
		}
	}
}

// transformed is what transform produces from an input record r: to r's
// partition of the output, r's key, "transformed: " and r's value, and a
// header "input-offset" giving r's offset.
func transformed(r rec) rec {
	return rec{Partition: r.Partition, Offset: -1, Key: r.Key, Value: append([]byte("transformed: "), r.Value...),
		Headers: []hdr{{"input-offset", strconv.AppendInt(nil, r.Offset, 10)}}}
}

// checkTxnOffsets: consume-transform-produce (KIP-447). Ten records in two
// partitions of an input topic; the client consumes them in a new group
// and produces transformed(r) of each to an output topic in transactions
// that carry the consumed offsets (sendOffsetsToTransaction). First a run
// that aborts its first transaction and stops: the group must have
// committed nothing, and what it wrote must be in the output as aborted.
// Then a run that carries every record over: the output read with
// read_committed — partlog's own read of the log, and the client's —
// must hold each input record's transform exactly once, in order, and the
// group's committed offsets (OffsetFetch) must be the input's ends.
func checkTxnOffsets(ctx context.Context, x *run) error {
	const partitions, perPartition = 2, 5
	input, output := x.topic(), x.topic()
	for _, topic := range []string{input, output} {
		if err := x.tg.createTopic(ctx, topic, partitions, nil); err != nil {
			return err
		}
	}
	var recs []rec
	for i := range partitions * perPartition {
		recs = append(recs, rec{Partition: int32(i % partitions), Key: fmt.Appendf(nil, "in-%d", i), Value: fmt.Appendf(nil, "input record %d", i)})
	}
	written, err := x.tg.produceWithPartlog(ctx, input, recs)
	if err != nil {
		return err
	}
	in := map[int32][]rec{}
	for _, r := range written {
		in[r.Partition] = append(in[r.Partition], r)
	}
	spec := transformSpec{Input: input, Output: output, Group: input + "-group", TransactionalID: input + "-txn", Count: len(written)}
	noneCommitted := map[int32]int64{}
	for p := range int32(partitions) {
		noneCommitted[p] = -1
	}

	// The run that aborts.
	spec.Abort = true
	n, err := x.d.transform(ctx, x.tg, spec)
	if err != nil {
		return fmt.Errorf("the run that aborts: %w", err)
	}
	if n < 1 || n > len(written) {
		return fmt.Errorf("the run that aborts says its transaction held %d records, want 1 to %d", n, len(written))
	}
	if err := x.tg.waitStable(ctx, output, partitions); err != nil {
		return fmt.Errorf("after the run that aborts: %w", err)
	}
	committed, err := x.tg.committed(ctx, spec.Group, input, partitions)
	if err != nil {
		return err
	}
	if !maps.Equal(committed, noneCommitted) {
		return fmt.Errorf("after the aborted transaction the group has committed %v, want nothing: the offsets of an aborted transaction must not count", committed)
	}
	abortedN := 0
	for p := range int32(partitions) {
		batches, err := x.tg.readLog(ctx, output, p)
		if err != nil {
			return err
		}
		ok, aborted, err := decided(p, batches)
		if err != nil {
			return fmt.Errorf("after the run that aborts: %w", err)
		}
		if len(ok) > 0 {
			return fmt.Errorf("after the run that aborts, output partition %d holds %d committed records: %v", p, len(ok), ok[0])
		}
		if err := sameTransforms(fmt.Sprintf("output partition %d, aborted", p), aborted, in[p][:min(len(aborted), len(in[p]))]); err != nil {
			return err
		}
		abortedN += len(aborted)
	}
	if abortedN != n {
		return fmt.Errorf("the run that aborts says its transaction held %d records, the output holds %d aborted", n, abortedN)
	}

	// The run that carries every record over.
	spec.Abort = false
	if n, err = x.d.transform(ctx, x.tg, spec); err != nil {
		return fmt.Errorf("the run that commits: %w", err)
	}
	if n != len(written) {
		return fmt.Errorf("the run that commits says its transactions held %d records, want %d", n, len(written))
	}
	if err := x.tg.waitStable(ctx, output, partitions); err != nil {
		return err
	}
	ends, err := x.tg.listOffsets(ctx, input, partitions, kafka.LatestTimestamp)
	if err != nil {
		return err
	}
	if committed, err = x.tg.committed(ctx, spec.Group, input, partitions); err != nil {
		return err
	}
	if !maps.Equal(committed, ends) {
		return fmt.Errorf("the group committed %v, want the input's ends %v", committed, ends)
	}
	for p := range int32(partitions) {
		batches, err := x.tg.readLog(ctx, output, p)
		if err != nil {
			return err
		}
		ok, _, err := decided(p, batches)
		if err != nil {
			return err
		}
		if err := sameTransforms(fmt.Sprintf("output partition %d, committed", p), ok, in[p]); err != nil {
			return err
		}
		got, err := x.d.consume(ctx, x.tg, consumeSpec{Topic: output, Partition: p, From: start{Kind: "beginning"}, Count: len(ok), Isolation: "read_committed"})
		if err != nil {
			return fmt.Errorf("reading output partition %d with read_committed: %w", p, err)
		}
		if err := sameRecords(fmt.Sprintf("output partition %d as the client read it with read_committed", p), got, ok); err != nil {
			return err
		}
	}
	return nil
}

// sameTransforms reports how out, records of the output, differs from
// the transforms of in, record by record; offsets are the output's own,
// and not compared.
func sameTransforms(what string, out, in []rec) error {
	want := make([]rec, len(in))
	for i, r := range in {
		want[i] = transformed(r)
		if i < len(out) {
			want[i].Offset = out[i].Offset
		}
	}
	return sameRecords(what, out, want)
}
