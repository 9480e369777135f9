package vfs

import (
	"math"
	"slices"
	"sort"
)

// span is the half-open byte range [lo, hi) of a file.
type span struct{ lo, hi int64 }

// spanSet is a set of byte positions, kept as sorted, disjoint and
// non-adjacent spans. The zero value is empty. Adding at or after the end,
// which is what an append does, is O(1).
type spanSet []span

// add returns s with [lo, hi) added.
func (s spanSet) add(lo, hi int64) spanSet {
	if lo >= hi {
		return s
	}
	n := len(s)
	switch {
	case n == 0 || lo > s[n-1].hi:
		return append(s, span{lo, hi})
	case lo >= s[n-1].lo:
		s[n-1].hi = max(s[n-1].hi, hi)
		return s
	}
	// Spans i..j-1 overlap or touch [lo, hi) and merge with it.
	i := sort.Search(n, func(k int) bool { return s[k].hi >= lo })
	j := sort.Search(n, func(k int) bool { return s[k].lo > hi })
	if i < j {
		lo = min(lo, s[i].lo)
		hi = max(hi, s[j-1].hi)
	}
	return slices.Replace(s, i, j, span{lo, hi})
}

// cut returns s without [lo, hi).
func (s spanSet) cut(lo, hi int64) spanSet {
	if lo >= hi || len(s) == 0 || s[len(s)-1].hi <= lo || s[0].lo >= hi {
		return s
	}
	out := make(spanSet, 0, len(s)+1)
	for _, sp := range s {
		if sp.hi <= lo || sp.lo >= hi {
			out = append(out, sp)
			continue
		}
		if sp.lo < lo {
			out = append(out, span{sp.lo, lo})
		}
		if sp.hi > hi {
			out = append(out, span{hi, sp.hi})
		}
	}
	return out
}

// truncate returns s without the positions at or past size.
func (s spanSet) truncate(size int64) spanSet { return s.cut(size, math.MaxInt64) }

// contains reports whether pos is in s.
func (s spanSet) contains(pos int64) bool {
	i := sort.Search(len(s), func(k int) bool { return s[k].hi > pos })
	return i < len(s) && s[i].lo <= pos
}

// gaps calls fn, in order, for each maximal part of [lo, hi) not in s.
func (s spanSet) gaps(lo, hi int64, fn func(lo, hi int64)) {
	forGaps(len(s), func(i int) span { return s[i] }, lo, hi, fn)
}

// forGaps calls fn, in order, for each maximal part of [lo, hi) covered by
// none of the n sorted, disjoint spans that at returns.
func forGaps(n int, at func(int) span, lo, hi int64, fn func(lo, hi int64)) {
	i := sort.Search(n, func(k int) bool { return at(k).hi > lo })
	for ; i < n && lo < hi; i++ {
		sp := at(i)
		if sp.lo >= hi {
			break
		}
		if sp.lo > lo {
			fn(lo, sp.lo)
		}
		lo = max(lo, sp.hi)
	}
	if lo < hi {
		fn(lo, hi)
	}
}

// patch holds a file's durable bytes for the range [lo, hi) where they may
// differ from its current bytes. A nil b means zeros: a range whose writes
// were lost by a failed sync and which never reached the disk.
type patch struct {
	span
	b []byte
}

// patchList is a sorted list of disjoint patches.
type patchList []patch

// gaps calls fn, in order, for each part of [lo, hi) no patch covers.
func (l patchList) gaps(lo, hi int64, fn func(lo, hi int64)) {
	forGaps(len(l), func(i int) span { return l[i].span }, lo, hi, fn)
}

// insert returns l with p added; p must overlap no patch in l.
func (l patchList) insert(p patch) patchList {
	i := sort.Search(len(l), func(k int) bool { return l[k].lo >= p.hi })
	return slices.Insert(l, i, p)
}

// without returns l with the positions in s removed.
func (l patchList) without(s spanSet) patchList {
	if len(l) == 0 || len(s) == 0 {
		return l
	}
	var out patchList
	for _, p := range l {
		pos := p.lo
		forGaps(len(s), func(i int) span { return s[i] }, p.lo, p.hi, func(lo, hi int64) {
			q := patch{span: span{lo, hi}}
			if p.b != nil {
				q.b = p.b[lo-pos : hi-pos]
			}
			out = append(out, q)
		})
	}
	return out
}

// truncate returns l without the positions at or past size.
func (l patchList) truncate(size int64) patchList {
	i := sort.Search(len(l), func(k int) bool { return l[k].hi > size })
	if i < len(l) && l[i].lo < size {
		p := l[i]
		if p.b != nil {
			p.b = p.b[:size-p.lo]
		}
		p.hi = size
		l[i] = p
		i++
	}
	return l[:i]
}

// apply writes the patches over buf, which must be long enough.
func (l patchList) apply(buf []byte) {
	for _, p := range l {
		if p.b == nil {
			clear(buf[p.lo:p.hi])
		} else {
			copy(buf[p.lo:p.hi], p.b)
		}
	}
}
