//go:build cgo

package persistence

// offHeap says Pebble allocates its memtables and block cache with C's allocator, outside
// the Go heap: it does whenever cgo is on (in race builds only now and then).
const offHeap = true
