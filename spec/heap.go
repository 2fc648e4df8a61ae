package spec

// minHeap is a binary min-heap of T ordered by less: the trace's and the
// checker's deadline queues (RPCs by eviction deadline, messages by
// completion time, After keys by age), so that what comes due is found
// without a scan.
type minHeap[T any] struct {
	s    []T
	less func(a, b T) bool
	// at, if set, is told every entry's new position (so that its owner
	// can Fix it); -1 when it leaves the heap.
	at func(x T, i int)
}

// Len returns the number of entries.
func (h *minHeap[T]) Len() int { return len(h.s) }

// Min returns the smallest entry; the heap must not be empty.
func (h *minHeap[T]) Min() T { return h.s[0] }

// Push adds x.
func (h *minHeap[T]) Push(x T) {
	h.s = append(h.s, x)
	h.moved(len(h.s) - 1)
	h.up(len(h.s) - 1)
}

// Pop removes and returns the smallest entry; the heap must not be empty.
func (h *minHeap[T]) Pop() T {
	top := h.s[0]
	n := len(h.s) - 1
	h.s[0] = h.s[n]
	var zero T
	h.s[n] = zero
	h.s = h.s[:n]
	if n > 0 {
		h.moved(0)
		h.down(0)
	}
	if h.at != nil {
		h.at(top, -1)
	}
	return top
}

// Remove takes out the entry at position i.
func (h *minHeap[T]) Remove(i int) {
	x := h.s[i]
	n := len(h.s) - 1
	if i != n {
		h.swap(i, n)
	}
	var zero T
	h.s[n] = zero
	h.s = h.s[:n]
	if i < n {
		h.Fix(i)
	}
	if h.at != nil {
		h.at(x, -1)
	}
}

// Fix restores the order after the entry at position i changed.
func (h *minHeap[T]) Fix(i int) {
	h.up(i)
	h.down(i)
}

func (h *minHeap[T]) moved(i int) {
	if h.at != nil {
		h.at(h.s[i], i)
	}
}

func (h *minHeap[T]) swap(i, j int) {
	h.s[i], h.s[j] = h.s[j], h.s[i]
	h.moved(i)
	h.moved(j)
}

func (h *minHeap[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.s[i], h.s[p]) {
			return
		}
		h.swap(p, i)
		i = p
	}
}

// Keep drops the entries for which keep is false, in O(n).
func (h *minHeap[T]) Keep(keep func(T) bool) {
	k := 0
	for _, x := range h.s {
		if keep(x) {
			h.s[k] = x
			h.moved(k)
			k++
		} else if h.at != nil {
			h.at(x, -1)
		}
	}
	clear(h.s[k:])
	h.s = h.s[:k]
	for i := k/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *minHeap[T]) down(i int) {
	n := len(h.s)
	for {
		l, m := 2*i+1, i
		if l < n && h.less(h.s[l], h.s[m]) {
			m = l
		}
		if l+1 < n && h.less(h.s[l+1], h.s[m]) {
			m = l + 1
		}
		if m == i {
			return
		}
		h.swap(i, m)
		i = m
	}
}
