// Package index holds a segment's two sparse indexes, in Kafka's on-disk
// layouts:
//
//	offset index (.index), 8 bytes an entry, big-endian:
//	+--------------------------+--------------------------+
//	| relative offset (uint32) | file position (uint32)   |
//	+--------------------------+--------------------------+
//
//	time index (.timeindex), 12 bytes an entry, big-endian:
//	+------------------------------------+--------------------------+
//	| timestamp, ms since epoch (int64)  | relative offset (uint32) |
//	+------------------------------------+--------------------------+
//
// A relative offset is an offset minus the segment's base offset. An offset
// index entry maps the last offset of a batch to the file position where that
// batch starts; a time index entry says that no record before the relative
// offset has a larger timestamp than the entry's.
//
// The indexes are sparse: the segment adds an entry once every
// index.interval.bytes of log (4096 by default). A lookup binary-searches for
// the greatest entry at or below its target and the segment scans the log from
// there. An index has room for segment.index.bytes of entries, memory-mapped
// (on the OS filesystem; elsewhere a heap copy stands in, see vfs.MapAhead),
// but its file grows a page at a time as entries come, with the disk space
// allocated before an entry is written; when a segment is sealed or closed
// the file is trimmed to its entries.
//
// An index is damaged when its size is not a whole number of entries or its
// entries are not increasing; SanityCheck reports that as ErrCorrupt and the
// segment rebuilds the index from its log, which is the source of truth.
//
// An index has one writer. Lookups may run concurrently with Append; every
// other method needs exclusive access.
package index
