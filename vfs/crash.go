package vfs

import (
	"cmp"
	"maps"
	"math/rand/v2"
	"slices"
)

// sectorSize is the unit a torn write damages: the last unsynced sector of
// a file may reach the disk only in part.
const sectorSize = 512

// KeepPolicy says which unsynced bytes and directory entries a crash keeps.
type KeepPolicy uint8

const (
	// KeepNone keeps only durable bytes and entries: what a power loss or
	// an OS crash leaves.
	KeepNone KeepPolicy = iota
	// KeepAll keeps everything as it is now, synced or not: what killing
	// the process leaves, since the page cache survives.
	KeepAll
	// KeepRandomPrefix keeps the durable state plus, per file whose current
	// data extends past its durable length, a random prefix (possibly empty,
	// possibly whole) of that unsynced tail. Unsynced overwrites of durable
	// bytes and unsynced truncations are not kept. Each unsynced directory
	// change (a create, a removal, a new directory, a rename as a whole) is
	// kept or dropped at random, and the kept ones are applied in order.
	KeepRandomPrefix
)

// String returns the policy's name, such as "KeepNone".
func (p KeepPolicy) String() string {
	switch p {
	case KeepNone:
		return "KeepNone"
	case KeepAll:
		return "KeepAll"
	case KeepRandomPrefix:
		return "KeepRandomPrefix"
	}
	return "KeepPolicy(?)"
}

// TearPolicy says how a crash damages the last unsynced sector it keeps.
type TearPolicy uint8

const (
	// TearNone keeps unsynced bytes intact.
	TearNone TearPolicy = iota
	// TearZero turns the kept unsynced bytes of the last 512-byte sector,
	// from a random point to the end, into zeros. The file's length does
	// not change: this is a size updated before its data.
	TearZero
	// TearGarbage is TearZero with random bytes instead of zeros.
	TearGarbage
)

// String returns the policy's name, such as "TearZero".
func (p TearPolicy) String() string {
	switch p {
	case TearNone:
		return "TearNone"
	case TearZero:
		return "TearZero"
	case TearGarbage:
		return "TearGarbage"
	}
	return "TearPolicy(?)"
}

// CrashOptions choose the crash state CrashClone builds. The zero value is
// a power loss: only durable bytes and entries survive.
type CrashOptions struct {
	// Seed drives every random choice. The same seed on the same MemFS
	// state gives the same clone.
	Seed int64
	// KeepUnsynced says which unsynced bytes and directory entries survive.
	KeepUnsynced KeepPolicy
	// Tear damages, in each file where unsynced bytes were kept, the last
	// 512-byte sector holding such bytes. Only unsynced bytes are damaged,
	// never durable ones. Under KeepNone nothing is torn.
	Tear TearPolicy
}

// CrashClone returns a new, independent MemFS holding a state that a crash
// at this instant could leave. Everything in the clone is durable. Open
// files and locks do not carry over; the capacity does.
//
// A file's durable bytes are what its last successful Sync wrote, its
// durable entries what its directory's last SyncDir saw: a file created and
// synced in a directory never synced is gone, and a rename or removal not
// followed by SyncDir is undone. Where unsynced bytes overwrite durable
// ones, KeepNone and KeepRandomPrefix keep the durable bytes. Bytes whose
// Sync failed (see WithFaults) never become durable; if a later Sync made
// the size cover them, they read as zeros.
func (m *MemFS) CrashClone(opts CrashOptions) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &crasher{
		opts:     opts,
		rng:      rand.New(rand.NewPCG(uint64(opts.Seed), 0x7061_72746c6f67)), // "partlog"
		files:    map[*node]*node{},
		seenDirs: map[*node]bool{m.root: true},
	}
	switch opts.KeepUnsynced {
	case KeepAll:
		c.entries = func(n *node) map[string]*node { return n.dir.entries }
	case KeepRandomPrefix:
		kept := c.keepSomeChanges(m.root)
		c.entries = func(n *node) map[string]*node {
			if e, ok := kept[n]; ok {
				return e
			}
			return n.dir.durable
		}
	default:
		c.entries = func(n *node) map[string]*node { return n.dir.durable }
	}
	clone := NewMem()
	clone.capacity = m.capacity
	clone.root = c.cloneDir(m.root)
	for _, n := range c.files {
		clone.used += n.file.size()
	}
	return clone
}

// crasher builds one crash clone.
type crasher struct {
	opts     CrashOptions
	rng      *rand.Rand
	entries  func(dir *node) map[string]*node // the entries that survive
	files    map[*node]*node                  // original file node to its clone
	seenDirs map[*node]bool
}

// keepSomeChanges returns, for each directory with unsynced changes, its
// durable entries with a random subset of those changes applied in order.
// A change is drawn once for all of its directories, so a rename stays
// whole.
func (c *crasher) keepSomeChanges(root *node) map[*node]map[string]*node {
	type change struct {
		dir *node
		dirChange
	}
	// Directories reachable through current, durable or pending entries
	// can all appear in the clone.
	var changes []change
	seen := map[*node]bool{}
	var walk func(n *node)
	walk = func(n *node) {
		if n.dir == nil || seen[n] {
			return
		}
		seen[n] = true
		for _, ch := range n.dir.pending {
			changes = append(changes, change{n, ch})
			if ch.node != nil {
				walk(ch.node)
			}
		}
		for _, child := range n.dir.entries {
			walk(child)
		}
		for _, child := range n.dir.durable {
			walk(child)
		}
	}
	walk(root)
	slices.SortStableFunc(changes, func(a, b change) int {
		return cmp.Compare(a.seq, b.seq) // each directory's pending list is already in order
	})
	kept := map[*node]map[string]*node{}
	keepSeq := map[int64]bool{}
	for _, ch := range changes {
		keep, drawn := keepSeq[ch.seq]
		if !drawn {
			keep = c.rng.IntN(2) == 0
			keepSeq[ch.seq] = keep
		}
		e, ok := kept[ch.dir]
		if !ok {
			e = maps.Clone(ch.dir.dir.durable)
			kept[ch.dir] = e
		}
		if !keep {
			continue
		}
		if ch.node == nil {
			delete(e, ch.name)
		} else {
			e[ch.name] = ch.node
		}
	}
	return kept
}

// cloneDir clones a directory with the entries that survive, in name order
// so that random choices are made in a fixed order. A directory reached a
// second time (possible only when a crash keeps part of a directory rename)
// is left out there; a file reached twice becomes a hard link.
func (c *crasher) cloneDir(d *node) *node {
	out := newDirNode(d.mode)
	entries := c.entries(d)
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		child := entries[name]
		var cloned *node
		if child.dir != nil {
			if c.seenDirs[child] {
				continue
			}
			c.seenDirs[child] = true
			cloned = c.cloneDir(child)
		} else {
			cloned = c.files[child]
			if cloned == nil {
				cloned = &node{mode: child.mode, file: c.cloneFile(child.file)}
				c.files[child] = cloned
			}
			cloned.file.nlink++
		}
		out.dir.entries[name] = cloned
		out.dir.durable[name] = cloned
	}
	return out
}

// cloneFile returns the bytes of d that survive, all durable.
func (c *crasher) cloneFile(d *fileData) *fileData {
	var data []byte
	switch c.opts.KeepUnsynced {
	case KeepAll:
		data = slices.Clone(d.data)
		if last := len(d.dirty) - 1; last >= 0 {
			c.tear(data, d.dirty[last])
		}
	case KeepRandomPrefix:
		data = d.durableImage()
		if tail := d.size() - d.durLen; tail > 0 {
			keep := c.rng.Int64N(tail + 1)
			if keep > 0 {
				kept := span{d.durLen, d.durLen + keep}
				data = append(data, d.data[kept.lo:kept.hi]...)
				// Tail bytes not dirty were lost by a failed sync: zeros.
				d.dirty.gaps(kept.lo, kept.hi, func(lo, hi int64) { clear(data[lo:hi]) })
				c.tear(data, kept)
			}
		}
	default:
		data = d.durableImage()
	}
	return &fileData{data: data, durLen: int64(len(data))}
}

// tear damages data's unsynced bytes in the last sector of unsynced, the
// kept span of unsynced bytes that ends last.
func (c *crasher) tear(data []byte, unsynced span) {
	if c.opts.Tear == TearNone || unsynced.lo >= unsynced.hi {
		return
	}
	sector := (unsynced.hi - 1) / sectorSize * sectorSize
	lo := max(sector, unsynced.lo)
	from := lo + c.rng.Int64N(unsynced.hi-lo)
	torn := data[from:unsynced.hi]
	if c.opts.Tear == TearGarbage {
		for i := range torn {
			torn[i] = byte(c.rng.Uint32())
		}
	} else {
		clear(torn)
	}
}
