package driver

// ring is a FIFO on a growing circular buffer: the engines' queues of waiting arrivals
// and the loop's idle connections.
type ring[T comparable] struct {
	buf        []T
	head, size int
}

func (q *ring[T]) len() int { return q.size }

func (q *ring[T]) front() T { return q.buf[q.head] }

func (q *ring[T]) push(v T) {
	if q.size == len(q.buf) {
		nb := make([]T, max(16, 2*len(q.buf)))
		for i := range q.size {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = v
	q.size++
}

func (q *ring[T]) pop() T {
	var zero T
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return v
}

// remove takes v out of the queue, keeping the order of the rest.
func (q *ring[T]) remove(v T) {
	n := q.size
	for range n {
		x := q.pop()
		if x != v {
			q.push(x)
		}
	}
}
