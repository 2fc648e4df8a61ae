package homa

// indexedHeap is a container/heap of T whose elements know their index,
// so that one can be fixed (heap.Fix) or removed (heap.Remove) in O(log n)
// after its key changed.
type indexedHeap[T any] struct {
	items []T
	less  func(a, b T) bool
	// setIdx tells x its index in items; -1 as x leaves the heap.
	setIdx func(x T, i int)
}

func (q *indexedHeap[T]) Len() int           { return len(q.items) }
func (q *indexedHeap[T]) Less(i, j int) bool { return q.less(q.items[i], q.items[j]) }
func (q *indexedHeap[T]) Swap(i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	q.setIdx(q.items[i], i)
	q.setIdx(q.items[j], j)
}

func (q *indexedHeap[T]) Push(x any) {
	q.setIdx(x.(T), len(q.items))
	q.items = append(q.items, x.(T))
}

func (q *indexedHeap[T]) Pop() any {
	n := len(q.items) - 1
	x := q.items[n]
	var zero T
	q.items[n] = zero
	q.items = q.items[:n]
	q.setIdx(x, -1)
	return x
}
