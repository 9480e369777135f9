package record

// Finish returns the batch Build would return, encoded in the Builder's
// own buffer rather than in a copy, when the batch is not compressed; it
// reports false, and returns nil, when it is (use AppendTo then).
//
// The returned slice is the Builder's: it is valid until the next Append,
// AppendWithOffset or Reset, and whoever holds it may rewrite the header in
// place (as a log does when it assigns offsets), since Finish writes the
// whole header and its CRC anew each time it is called. Appending to the
// Builder after Finish continues the batch, as after Build.
//
// A producer sends a batch it no longer appends to with Finish, and saves
// the copy of every byte that AppendTo makes.
func (b *Builder) Finish() ([]byte, bool) {
	if b.compressed() {
		return nil, false
	}
	b.seal(b.buf)
	return b.buf, true
}
