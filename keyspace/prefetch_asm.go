//go:build amd64 || arm64

package keyspace

import "unsafe"

// prefetch hints that the cache line at p is about to be read (PREFETCHT0, PRFM PLDL1KEEP).
// It never faults and is not ordered by the locks' atomic instructions.
//
//go:noescape
func prefetch(p unsafe.Pointer)
