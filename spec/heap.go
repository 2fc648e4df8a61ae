package spec

// minHeap is a binary min-heap of T ordered by less: the trace's and the
// checker's deadline queues (RPCs by eviction deadline, messages by
// completion time, After keys by age), so that what comes due is found
// without a scan.
type minHeap[T any] struct {
	s    []T
	less func(a, b T) bool
}

// Len returns the number of entries.
func (h *minHeap[T]) Len() int { return len(h.s) }

// Min returns the smallest entry; the heap must not be empty.
func (h *minHeap[T]) Min() T { return h.s[0] }

// Push adds x.
func (h *minHeap[T]) Push(x T) {
	h.s = append(h.s, x)
	for i := len(h.s) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(h.s[i], h.s[p]) {
			break
		}
		h.s[p], h.s[i] = h.s[i], h.s[p]
		i = p
	}
}

// Pop removes and returns the smallest entry; the heap must not be empty.
func (h *minHeap[T]) Pop() T {
	top := h.s[0]
	n := len(h.s) - 1
	h.s[0] = h.s[n]
	var zero T
	h.s[n] = zero
	h.s = h.s[:n]
	h.down(0)
	return top
}

// Keep drops the entries for which keep is false, in O(n).
func (h *minHeap[T]) Keep(keep func(T) bool) {
	k := 0
	for _, x := range h.s {
		if keep(x) {
			h.s[k] = x
			k++
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
		h.s[i], h.s[m] = h.s[m], h.s[i]
		i = m
	}
}
