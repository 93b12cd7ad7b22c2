//go:build !amd64 && !arm64

package keyspace

import "unsafe"

// prefetch does nothing where the package has no instruction for it.
func prefetch(p unsafe.Pointer) {}
