// Package byteranges is the sorted, merged set of byte ranges that both the
// reference implementation (package homa, which bytes of a message arrived)
// and the checker (package spec, which bytes a capture showed) keep per
// message. It is a plain data structure with no protocol meaning, so sharing
// it does not couple the implementation to the checker.
package byteranges

// Range is the byte range [Start, End) of a message, in bytes from offset 0.
type Range struct{ Start, End uint32 }

// Set is a set of byte ranges kept sorted by Start with no two ranges
// touching or overlapping. The zero value is the empty set. In-order
// additions (the common case for DATA) take constant time and do not
// allocate beyond appending.
type Set []Range

// Add inserts [s, e) and returns the number of bytes that were not in the
// set before. An empty or inverted range adds nothing and returns 0.
func (set *Set) Add(s, e uint32) uint32 {
	if e <= s {
		return 0
	}
	// Fast paths: in-order data extends or lies inside the last range, or
	// starts a new range after it.
	if n := len(*set); n > 0 {
		last := &(*set)[n-1]
		switch {
		case s >= last.Start && s <= last.End:
			if e <= last.End {
				return 0
			}
			added := e - last.End
			last.End = e
			return added
		case s > last.End:
			*set = append(*set, Range{s, e})
			return e - s
		}
	} else {
		*set = append(*set, Range{s, e})
		return e - s
	}
	before := set.Total()
	out := (*set)[:0:0]
	placed := false
	for _, x := range *set {
		switch {
		case x.End < s:
			out = append(out, x)
		case e < x.Start:
			if !placed {
				out = append(out, Range{s, e})
				placed = true
			}
			out = append(out, x)
		default:
			s, e = min(s, x.Start), max(e, x.End)
		}
	}
	if !placed {
		out = append(out, Range{s, e})
	}
	*set = out
	return set.Total() - before
}

// Total returns the number of bytes in the set.
func (set Set) Total() uint32 {
	var n uint32
	for _, x := range set {
		n += x.End - x.Start
	}
	return n
}

// Covers reports whether every byte of [s, e) is in the set; an empty range
// is always covered.
func (set Set) Covers(s, e uint32) bool {
	if e <= s {
		return true
	}
	for _, x := range set {
		if x.Start <= s && e <= x.End {
			return true
		}
	}
	return false
}

// Overlap returns the number of bytes of [s, e) that are in the set.
func (set Set) Overlap(s, e uint32) uint32 {
	var n uint32
	for _, x := range set {
		if x.Start >= e {
			break
		}
		if lo, hi := max(s, x.Start), min(e, x.End); lo < hi {
			n += hi - lo
		}
	}
	return n
}

// Overlaps reports whether any byte of [s, e) is in the set.
func (set Set) Overlaps(s, e uint32) bool {
	for _, x := range set {
		if x.Start < e && s < x.End {
			return true
		}
	}
	return false
}

// CoversWith reports whether [s, e) would be covered by the set plus the
// range [a, b). The set is not changed.
func (set Set) CoversWith(s, e, a, b uint32) bool {
	if set.Covers(s, e) {
		return true
	}
	// Every gap of the set inside [s, e) must lie inside [a, b) (the set
	// is sorted and merged); no copy of the set is made.
	pos := s
	for _, x := range set {
		if x.End <= pos {
			continue
		}
		if x.Start >= e {
			break
		}
		if x.Start > pos && (pos < a || x.Start > b) {
			return false
		}
		pos = x.End
		if pos >= e {
			return true
		}
	}
	return a <= pos && e <= b
}

// Gaps returns, in order, the ranges below limit that are not in the set
// (the bytes a receiver would ask for in RESENDs). It returns nil when
// [0, limit) is covered.
func (set Set) Gaps(limit uint32) []Range {
	var out []Range
	var pos uint32
	for _, x := range set {
		if pos >= limit {
			break
		}
		if x.Start > pos {
			out = append(out, Range{pos, min(x.Start, limit)})
		}
		pos = max(pos, x.End)
	}
	if pos < limit {
		out = append(out, Range{pos, limit})
	}
	return out
}
