package vfs

import (
	"io/fs"
	"slices"
)

// node is a MemFS file or directory: an inode. Directory entries point at
// nodes, so a file renamed or removed after its directory was synced is
// still the same node under its durable name.
type node struct {
	mode fs.FileMode
	file *fileData // nil for a directory
	dir  *dirData  // nil for a file
}

func newFileNode() *node { return &node{mode: 0o644, file: &fileData{}} }

func newDirNode(perm fs.FileMode) *node {
	return &node{
		mode: fs.ModeDir | perm.Perm(),
		dir:  &dirData{entries: map[string]*node{}, durable: map[string]*node{}},
	}
}

// dirData is a directory: the entries as they are now, the entries as the
// last SyncDir left them on disk, and the changes since then in the order
// they were made.
type dirData struct {
	entries map[string]*node
	durable map[string]*node
	pending []dirChange
}

// dirChange is one change to a directory entry since the directory was last
// synced. Both halves of a rename share a seq, so a crash keeps or drops a
// rename as a whole.
type dirChange struct {
	seq  int64
	name string
	node *node // nil: the entry was removed
}

// fileData is a file's contents, modelled the way the Linux page cache
// holds them.
//
// data is what reads return now. The disk holds durLen bytes: data's bytes,
// except where saved has a patch. A write over bytes below durLen first
// copies the bytes it replaces into saved (once per sync), so appending and
// syncing never copies the file. Invariant: every position below durLen
// that saved does not cover is below len(data); patches lie below durLen.
//
// dirty is the set of positions written since the last sync attempt. A
// successful sync writes the dirty positions and the size to disk. A failed
// sync (see failSync) forgets them without writing them, as Linux does after
// a writeback error: the page cache keeps the bytes, but the disk never gets
// them unless they are written again.
type fileData struct {
	data   []byte
	durLen int64
	saved  patchList
	dirty  spanSet
	nlink  int // names in the current tree; counted against MemFS capacity while > 0
}

func (d *fileData) size() int64 { return int64(len(d.data)) }

// preserve copies into saved the durable bytes in [lo, hi) that saved does
// not hold yet, before they are overwritten or truncated away.
func (d *fileData) preserve(lo, hi int64) {
	d.preserveFrom(d.data, lo, hi, true)
}

// preserveFrom is preserve taking the bytes from src, which holds the
// current data, copying them only if copyBytes is set. Without copying, src
// must never be written again.
func (d *fileData) preserveFrom(src []byte, lo, hi int64, copyBytes bool) {
	hi = min(hi, d.durLen)
	if lo >= hi {
		return
	}
	var add []span
	d.saved.gaps(lo, hi, func(lo, hi int64) { add = append(add, span{lo, hi}) })
	for _, sp := range add {
		// By the invariant, a gap below durLen is inside the data.
		b := src[sp.lo:sp.hi:sp.hi]
		if copyBytes {
			b = slices.Clone(b)
		}
		d.saved = d.saved.insert(patch{span: sp, b: b})
	}
}

// resize sets len(data) to size; new bytes are zeros.
func (d *fileData) resize(size int64) {
	old := d.size()
	if size <= old {
		d.data = d.data[:size]
		return
	}
	if size > int64(cap(d.data)) {
		// Double, so that appending costs O(1) per byte whatever the size
		// (append grows large slices by only 1.25x, copying more often).
		grown := make([]byte, old, max(size, 2*int64(cap(d.data))))
		copy(grown, d.data)
		d.data = grown
	}
	d.data = d.data[:size]
	clear(d.data[old:]) // the backing array may hold bytes from before a truncate
}

// writeAt writes p at off, zero-filling any gap past the end.
func (d *fileData) writeAt(p []byte, off int64) {
	end := off + int64(len(p))
	old := d.size()
	d.preserve(off, end)
	if end > old {
		d.resize(end)
	}
	copy(d.data[off:], p)
	d.dirty = d.dirty.add(min(off, old), end)
}

// truncate sets the size, cutting or zero-extending.
func (d *fileData) truncate(size int64) {
	old := d.size()
	switch {
	case size < old:
		if cut := min(old, d.durLen) - size; cut > size {
			// Cutting more durable bytes than are kept (Create over a
			// synced file): hand the old array to saved and copy the
			// kept bytes instead.
			old := d.data
			d.data = slices.Clone(old[:size])
			d.preserveFrom(old, size, int64(len(old)), false)
		} else {
			d.preserve(size, old)
			d.resize(size)
		}
		d.dirty = d.dirty.truncate(size)
	case size > old:
		d.resize(size)
		d.dirty = d.dirty.add(old, size)
	}
}

// sync makes the dirty bytes and the current size durable. Positions below
// the new size that are neither dirty nor already durable are ones whose
// writes a failed sync lost; on disk they read as zeros.
func (d *fileData) sync() {
	size := d.size()
	saved := d.saved.without(d.dirty).truncate(size)
	if d.durLen < size {
		d.dirty.gaps(d.durLen, size, func(lo, hi int64) {
			saved = saved.insert(patch{span: span{lo, hi}})
		})
	}
	d.saved, d.dirty, d.durLen = saved, nil, size
}

// failSync models a sync that returned an error: the dirty bytes are marked
// clean without reaching the disk.
func (d *fileData) failSync() { d.dirty = nil }

// durableImage returns a copy of the bytes on disk.
func (d *fileData) durableImage() []byte {
	buf := make([]byte, d.durLen)
	copy(buf, d.data)
	d.saved.apply(buf)
	return buf
}
