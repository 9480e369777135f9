// Package consumer reads records from partlog topics as Kafka's consumer
// does: it pulls record batches from the partitions' leaders with Fetch
// requests, through a transport.Client — a *partlog.Node in the same
// process, or a network client — and hands out their records in offset
// order, partition by partition.
//
//	c, err := consumer.New(node, consumer.Topics("study"), consumer.AutoOffsetReset(consumer.Earliest))
//	if err != nil { ... }
//	defer c.Close()
//	for rec, err := range c.Records(ctx) {
//		if err != nil { ... }
//		fmt.Printf("%s-%d@%d: %s\n", rec.Topic, rec.Partition, rec.Offset, rec.Value)
//	}
//
// # What to consume
//
// A consumer subscribes to topics (Topics: every partition of each,
// found from the cluster's metadata and looked for again every
// MetadataMaxAge, so that added partitions are consumed too), or is
// assigned partitions (Partitions, PartitionsAt). Consumer groups, in
// which several consumers share a subscription, will add a Group option
// to the subscribing form; nothing here changes for it.
//
// # Positions
//
// Each assigned partition has a position: the offset of the next record
// Poll returns for it. A partition starts without one, unless PartitionsAt
// gives it, and looks one up with ListOffsets as AutoOffsetReset says:
// Latest (the default, as in Kafka) at the high watermark, Earliest at the
// log start offset, None not at all — Poll then reports ErrNoOffset and
// the partition waits for a Seek. A position that falls out of the
// partition, because retention deleted the records there or the log was
// truncated, is reset the same way, or with None reported as
// transport.ErrOffsetOutOfRange.
//
// Seek, SeekToBeginning, SeekToEnd and SeekToTimestamp move positions;
// Position reads one. Poll moves a partition's position past the records
// it returns, and past the transaction markers that follow them, which are
// never returned.
//
// # Polling
//
// Poll returns the records ready, at most MaxPollRecords, or waits up to
// its timeout for some: records come as soon as a fetch brings them,
// since the node holds a fetch (up to FetchMaxWait) until records arrive
// rather than being asked again and again. Records is the same as an
// iterator, for a range loop.
//
// A goroutine of the consumer fetches ahead — one fetch in flight, while
// less than FetchMaxBytes of fetched batches wait to be read — so that the
// next fetch is on its way while the caller works through the records
// before it. It only fetches: the batches wait as fetched, and Poll or the
// loop decodes them, outside the consumer's lock, so that the buffer holds
// raw bytes and the fetcher is never held up. Close stops the goroutine
// and waits for it.
//
// Nothing a caller gets is ever reused. Keys, values and header values
// point into the fetched bytes; each fetch gets bytes of its own. Poll
// returns a Fetches: per partition, a slice of records decoded for that
// Poll, which it never touches again. Records yields records by value,
// decoding each batch into a buffer of its own and copying each record
// out, so that it allocates nothing per record: it is the fastest way
// through a partition, and Poll's Fetches.EachRecord the next.
//
// # Guarantees
//
//   - The records of a partition come in offset order, each once, from the
//     position on, with no gap other than the log's own (compacted
//     records, transaction markers), until the position is moved.
//   - No record at or above the high watermark is returned: only records
//     that the partition's in-sync replicas all have (and, on a node that
//     syncs before acknowledging, that are on disk).
//   - A batch whose CRC or structure is wrong is never returned; the
//     records before it are, then Poll reports record.ErrCorrupt at its
//     offset, and the partition stops there.
//   - Retriable errors (a leader moving, a topic whose metadata is
//     catching up) are retried with backoff and reported only once they
//     last RetryTimeout.
//
// Isolation level read_committed is not supported yet: the consumer reads
// every record below the high watermark (read_uncommitted), aborted
// transactions included, skipping only the markers.
package consumer
