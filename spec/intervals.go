package spec

// intervals is a set of byte ranges [start, end), kept sorted and merged.
type intervals []span

type span struct{ start, end uint32 }

// add inserts [s, e) and returns the number of bytes that were new.
func (iv *intervals) add(s, e uint32) uint32 {
	if e <= s {
		return 0
	}
	// Fast paths: in-order data extends or lies inside the last range, or
	// starts a new range after it.
	if n := len(*iv); n > 0 {
		last := &(*iv)[n-1]
		switch {
		case s >= last.start && s <= last.end:
			if e <= last.end {
				return 0
			}
			added := e - last.end
			last.end = e
			return added
		case s > last.end:
			*iv = append(*iv, span{s, e})
			return e - s
		}
	} else {
		*iv = append(*iv, span{s, e})
		return e - s
	}
	before := iv.total()
	out := (*iv)[:0:0]
	placed := false
	for _, x := range *iv {
		switch {
		case x.end < s:
			out = append(out, x)
		case e < x.start:
			if !placed {
				out = append(out, span{s, e})
				placed = true
			}
			out = append(out, x)
		default:
			s, e = min(s, x.start), max(e, x.end)
		}
	}
	if !placed {
		out = append(out, span{s, e})
	}
	*iv = out
	return iv.total() - before
}

func (iv intervals) total() uint32 {
	var n uint32
	for _, x := range iv {
		n += x.end - x.start
	}
	return n
}

// covers reports whether [s, e) is entirely inside the set.
func (iv intervals) covers(s, e uint32) bool {
	if e <= s {
		return true
	}
	for _, x := range iv {
		if x.start <= s && e <= x.end {
			return true
		}
	}
	return false
}

// contiguous returns the end of the range starting at 0, or 0.
func (iv intervals) contiguous() uint32 {
	if len(iv) > 0 && iv[0].start == 0 {
		return iv[0].end
	}
	return 0
}

// overlap returns the number of bytes of [s, e) inside the set.
func (iv intervals) overlap(s, e uint32) uint32 {
	var n uint32
	for _, x := range iv {
		if x.start >= e {
			break
		}
		if lo, hi := max(s, x.start), min(e, x.end); lo < hi {
			n += hi - lo
		}
	}
	return n
}

// coversWith reports whether [s, e) is inside the set together with the
// range [a, b) (the set is not changed).
func (iv intervals) coversWith(s, e, a, b uint32) bool {
	if iv.covers(s, e) {
		return true
	}
	c := append(intervals(nil), iv...)
	c.add(a, b)
	return c.covers(s, e)
}

// overlaps reports whether any byte of [s, e) is in the set.
func (iv intervals) overlaps(s, e uint32) bool {
	for _, x := range iv {
		if x.start < e && s < x.end {
			return true
		}
	}
	return false
}
