// Package partlog is Kafka's log design as an embeddable Go library: topics
// split into partitions, each partition an append-only log of Kafka-format
// record batches in segment files with memory-mapped indexes, kept in a data
// directory that Kafka's own tools can read.
//
// # Guarantees
//
// The storage engine, available now, promises:
//
//   - An append is readable when it returns. It is durable once a flush
//     covers it: with sync-before-ack (log.Options.SyncBeforeAck) before the
//     append returns, concurrent appenders sharing one fdatasync; otherwise
//     per flush.messages, flush.ms or an explicit flush.
//   - A crash, at any instant, loses nothing that was durable: recovery
//     scans every batch above the recovery point, checks its length, magic
//     and CRC-32C, cuts the log at the first invalid byte, and rebuilds the
//     indexes. Nothing half-written is ever returned to a reader.
//   - A failed write or fsync is fail-stop: no waiting append is
//     acknowledged, and the log refuses appends until it is reopened (an
//     fsync is never retried and trusted). A full disk fails the append with
//     a typed error, keeps nothing of it, and appends resume once there is
//     room.
//   - A directory is held by one process at a time; a second open fails
//     with a clear error.
//
// # Packages, bottom up
//
//	vfs      the filesystem seam: the OS, and an in-memory filesystem that
//	         can crash and fail chosen operations (for tests)
//	record   Kafka RecordBatch v2, byte for byte, with gzip, snappy, lz4, zstd
//	index    the mmap'd offset index (.index) and time index (.timeindex)
//	segment  one .log file with its indexes: append, read, recover
//	log      one partition's directory of segments: offsets, durability,
//	         retention, truncation, leader epochs; Dir for a node's directory
//
// Partitions with high watermarks, producers, consumers, consumer groups,
// replication and transactions build on these (see the repository's issues
// and DESIGN.md).
//
// # Quick start
//
// Append a batch to a partition's log and read it back:
//
//	l, err := log.Open("/var/lib/app/study-0", log.Options{SyncBeforeAck: true})
//	if err != nil { ... }
//	defer l.Close()
//
//	b := record.NewBuilder(record.DefaultBatchOptions())
//	b.Append(record.Record{Timestamp: time.Now().UnixMilli(), Key: []byte("k"), Value: []byte("hello")})
//	info, err := l.Append(b.Build()) // info.FirstOffset is the record's offset
//
//	data, err := l.Read(nil, info.FirstOffset, l.LogEndOffset(), 1<<20)
//	batch, err := record.Decode(data[:record.HeaderSize+...]) // see log.Example
//
// The program in examples/quickstart does this end to end.
package partlog
