//go:build !cgo

package persistence

// offHeap says Pebble allocates its memtables and block cache on the Go heap: without cgo
// it has no other allocator.
const offHeap = false
