// Package producer sends records to partitions in batches, as Kafka's
// producer does, through a transport.Client: a *partlog.Node in the same
// process, or a network client.
//
//	p, err := producer.New(node.Client(), producer.Linger(5*time.Millisecond))
//	if err != nil { ... }
//	defer p.Close()
//
//	p.Produce(ctx, &producer.Record{Topic: "study", Key: k, Value: v},
//		func(r *producer.Record, err error) { ... }) // r.Partition, r.Offset
//
//	results := p.ProduceSync(ctx, &producer.Record{Topic: "study", Value: v})
//	if err := results.FirstErr(); err != nil { ... }
//
// # How records flow
//
//	Produce ──▶ partitioner ──▶ accumulator ──▶ sender ──▶ Client.Produce ──▶ node
//	            (topic's        (one open batch   (ready batches,     (one request,
//	             partition)      per partition)    ≤ MaxInFlight       several partitions)
//	                                               requests)
//
// Step by step:
//
//  1. Produce picks the partition: the one given to Record.SetPartition, else
//     the Partitioner's choice — by default the xxhash of the key modulo the
//     partition count, or round-robin for records without a key. The first
//     record for a topic fetches its metadata (partition count), waiting up
//     to MaxBlock for a topic that does not exist yet.
//  2. The accumulator encodes the record straight into its partition's open
//     batch (a record.Builder, Kafka's RecordBatch v2), so the caller may
//     reuse the record's key and value at once. A batch holds BatchSize
//     bytes of buffer.memory (BufferMemory) from its first record until its
//     promises have run; when none is left, Produce blocks up to MaxBlock
//     and then fails with ErrBufferFull.
//  3. A batch is ready when it is full (BatchSize), when it has lingered
//     (Linger) since its first record, or at once during Flush and Close and
//     while a Produce waits for memory. The sender collects ready batches,
//     one per partition, into a request of up to MaxRequestSize bytes and
//     sends it; up to MaxInFlight requests await their answers at once.
//  4. The answer settles each batch: its records get their offsets (the
//     batch's base offset plus their position) and their promises run. A
//     retriable error (IsRetriable) sends the batch again after RetryBackoff,
//     up to Retries times and within DeliveryTimeout, refreshing metadata
//     when the error says it is stale; a batch the topic finds too large is
//     split in two; any other error fails the batch's records with it.
//
// # Idempotence
//
// By default, as in Kafka 3+, the producer is idempotent (Idempotent,
// enable.idempotence): before it sends anything it gets a producer id
// from the client (InitProducerId, through transport.ProducerIDClient),
// and it numbers the records of each partition. A batch carries the
// producer id, epoch and the sequence number of its first record, given
// when it is first sent and kept on every retry, so the leader can tell a
// retry of a batch it already wrote — it answers with the original
// offsets and writes nothing — from a new one, and refuses a batch that
// skips ahead. A retry after a lost answer, a timeout or a node restart
// therefore never writes a record twice, and never out of order. Up to
// MaxInFlight (at most 5) batches of a partition may be in flight at once;
// a batch that overtook an older one is refused as out of order and sent
// again, alone, once the older one has landed.
//
// Idempotence needs acks=all, Retries above 0 and MaxInFlight at most 5:
// given explicitly with Idempotent(true), a conflicting option is an
// error; left at its default, such an option turns idempotence off, as in
// Kafka 3.2+. The scope is Kafka's: exactly once per partition for the
// life of one producer.
//
// A batch that had its sequence numbers and then failed for good leaves
// a gap. When no attempt of it can have been written (every answer
// refused it) and no later batch of the partition is in flight, the later
// batches take its numbers and the producer goes on. Otherwise — say it
// timed out after the leader may have written it — the producer bumps its
// epoch, as Kafka 2.5+ does (KIP-360): once nothing is in flight, every
// partition's sequence starts over at 0 in the next epoch, so the leader
// takes what follows and fences anything late from the old epoch. Batches
// waiting to be sent again go in the new epoch, except those an attempt of
// which may have been written: they fail with their last error, since
// resending them could write them twice. When the leader fences the
// producer (INVALID_PRODUCER_EPOCH) or finds a gap
// (OUT_OF_ORDER_SEQUENCE_NUMBER), the producer stops: the batch's records,
// every record not yet acknowledged and every later Produce fail with an
// error that wraps ErrFatal and the cause. A leader that forgot the
// producer after producer.id.expiration.ms answers UNKNOWN_PRODUCER_ID,
// and the producer starts that partition's sequence over at 0.
//
// # Transactions
//
// With TransactionalID the producer is transactional, as Kafka's with
// transactional.id (KIP-98): records go to many partitions, and consumer
// offsets are committed (SendOffsetsToTransaction), as one atomic unit
// that read_committed consumers see whole or not at all. New gets the
// id's producer id from its transaction coordinator, fencing any older
// producer with the id and aborting what it left open. Then, in a loop:
//
//	p.BeginTransaction()
//	p.Produce(...)                              // any partitions
//	p.SendOffsetsToTransaction(ctx, offsets, m) // optional
//	err := p.CommitTransaction(ctx)             // or AbortTransaction
//
// Records can be produced only inside a transaction. A transactional
// producer is idempotent, and its state machine (TransactionState) is
// Kafka's TransactionManager's; errors matching ErrAbortable call for
// AbortTransaction, after which the producer goes on, and errors matching
// ErrFatal for Close. See TransactionState and the Example.
//
// # Guarantees
//
// Every record's promise runs exactly once: with its offset, or with the
// error that failed it. Errors match with errors.Is: the producer's
// sentinels (ErrBufferFull, ErrRecordTooLarge, ErrDeliveryTimeout,
// ErrClosed) and the node's Kafka errors (kafka.ErrMessageTooLarge,
// kafka.ErrNotEnoughReplicas, ...), which a delivery timeout also wraps.
//
// Ordering: records produced to a partition are appended in the order Produce
// was called for them (from one goroutine; calls from several goroutines
// are ordered as they take the partition's lock), and their promises run in
// that same order, which is offset order, one at a time, on a goroutine of
// the producer. This holds across retries too. Without idempotence the
// producer keeps at most one batch per partition in flight, and a batch to
// retry goes back to the front of its partition. Kafka without idempotence
// gives less: with max.in.flight.requests.per.connection above 1, a
// retried batch can land behind a later one. Here MaxInFlight bounds the
// requests in flight across partitions, and one partition's batches follow
// each other: a Client promises no order between concurrent calls, so two
// batches of a partition in flight at once could swap even without a
// retry. An idempotent producer may have several batches of a partition in
// flight, because the leader refuses those that arrive out of order (see
// Idempotence). Records of different partitions have no order between
// them.
//
// What an acknowledgement means is Kafka's acks:
//
//   - kafka.AcksAll (the default): every in-sync replica has the batch,
//     and there are at least the topic's min.insync.replicas. On a node
//     that syncs before it acknowledges (partlog's default, flush.messages=1)
//     the batch is on disk.
//   - kafka.AcksLeader: the leader has appended the batch to its log.
//   - kafka.AcksNone: nothing. The promise runs with offset -1 once the
//     request has been handed to the client, and a failure the node
//     reports is not seen.
//
// A record is not acknowledged twice, but without idempotence a retry after
// a lost answer can append it twice, as in Kafka.
//
// # Goroutines
//
// A Producer is safe for concurrent use. It runs a sender goroutine, a
// goroutine per request in flight (which runs the promises of the batches
// it carried, or of older ones of their partitions whose turn came), one
// for metadata refreshes, and one for InitProducerId; Close stops them
// all.
package producer
