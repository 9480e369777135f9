package record

import "math/bits"

// Records use Kafka's variable-length integers: zigzag encoding (so small
// negative numbers stay short) followed by base-128 groups, low group
// first, with the high bit of each byte saying another byte follows. A
// varint holds an int32 in at most 5 bytes, a varlong an int64 in at most
// 10. This is the same encoding as Protocol Buffers' sint32 and sint64.

const (
	maxVarintLen  = 5  // bytes of the longest int32 varint
	maxVarlongLen = 10 // bytes of the longest int64 varlong
)

// Results of readVarint and readVarlong in place of a position, when no
// value could be read.
const (
	varintTruncated = -1 // the bytes ended inside the varint
	varintOverlong  = -2 // more bytes, or more bits, than the type holds
)

// zigzag maps signed to unsigned so that values near zero, of either sign,
// become small: 0, -1, 1, -2 ... become 0, 1, 2, 3 ...
func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// varlongLen returns how many bytes appendVarlong writes for v. An int32
// varint is the varlong of the same value, so this serves both.
func varlongLen(v int64) int {
	return (bits.Len64(zigzag(v)|1) + 6) / 7
}

// varintLen returns how many bytes a varint of v takes.
func varintLen(v int32) int { return varlongLen(int64(v)) }

// bytesLen returns how many bytes a length-prefixed field holding b takes:
// a varint length (-1 for nil) and the bytes.
func bytesLen(b []byte) int {
	if b == nil {
		return 1 // varint -1
	}
	return varlongLen(int64(len(b))) + len(b)
}

// appendVarlong appends v as a varlong. Called with an int32, it writes
// that int32's varint.
func appendVarlong(dst []byte, v int64) []byte {
	u := zigzag(v)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// appendBytes appends b as a length-prefixed field: -1 and nothing else for
// nil, otherwise the length and the bytes.
func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, 1) // varint -1
	}
	dst = appendVarlong(dst, int64(len(b)))
	return append(dst, b...)
}

// readVarint decodes the int32 varint at b[pos:] and returns it with the
// position after it. When there is none, the position is varintTruncated
// or varintOverlong.
func readVarint(b []byte, pos int) (int32, int) {
	if uint(pos) < uint(len(b)) && b[pos] < 0x80 { // one byte: most lengths and deltas
		u := int32(b[pos])
		return u>>1 ^ -(u & 1), pos + 1
	}
	return readVarintSlow(b, pos)
}

// readVarintSlow is readVarint for varints of more than one byte, apart so
// that readVarint is small. Two bytes, as lengths of 64 to 8191 take, are
// decoded without the loop.
//
//go:noinline
func readVarintSlow(b []byte, pos int) (int32, int) {
	if uint(pos+1) < uint(len(b)) && b[pos+1] < 0x80 { // b[pos] >= 0x80: readVarint's fast path failed
		u := uint32(b[pos]&0x7f) | uint32(b[pos+1])<<7
		return int32(u>>1) ^ -int32(u&1), pos + 2
	}
	var u uint32
	for i := 0; i < maxVarintLen; i++ {
		if pos >= len(b) {
			return 0, varintTruncated
		}
		c := b[pos]
		pos++
		if i == maxVarintLen-1 && c > 0x0f { // bits past 32, or a 6th byte
			return 0, varintOverlong
		}
		u |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(u>>1) ^ -int32(u&1), pos
		}
	}
	return 0, varintOverlong // unreachable: the 5th byte is < 0x10
}

// readVarlong decodes the int64 varlong at b[pos:] and returns it with the
// position after it. When there is none, the position is varintTruncated
// or varintOverlong.
func readVarlong(b []byte, pos int) (int64, int) {
	if uint(pos) < uint(len(b)) && b[pos] < 0x80 {
		u := int64(b[pos])
		return u>>1 ^ -(u & 1), pos + 1
	}
	return readVarlongSlow(b, pos)
}

// readVarlongSlow is readVarlong for varlongs of more than one byte.
//
//go:noinline
func readVarlongSlow(b []byte, pos int) (int64, int) {
	var u uint64
	for i := 0; i < maxVarlongLen; i++ {
		if pos >= len(b) {
			return 0, varintTruncated
		}
		c := b[pos]
		pos++
		if i == maxVarlongLen-1 && c > 0x01 { // bits past 64, or an 11th byte
			return 0, varintOverlong
		}
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), pos
		}
	}
	return 0, varintOverlong // unreachable: the 10th byte is < 0x02
}

// varintProblem names what readVarint's or readVarlong's failed position
// means, for error reasons.
func varintProblem(pos int) string {
	if pos == varintOverlong {
		return "overlong varint"
	}
	return "truncated varint"
}
