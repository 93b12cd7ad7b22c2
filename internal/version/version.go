// Package version says which throttled this binary is.
//
// The build stamps it: `make build` (and GoReleaser) link in `git describe --tags --always
// --dirty` with
//
//	-ldflags "-X github.com/throttledhq/throttled/internal/version.stamped=$(git describe ...)"
//
// A binary built without that, by `go install github.com/throttledhq/throttled/cmd/throttled@v0.1.0`,
// has its module's version in its build information instead; one built from a work tree
// without either is "dev".
package version

import (
	"runtime/debug"
	"strings"
)

// stamped is set at link time (-X); empty when the build did not set it.
var stamped string

// String is the version without a leading v: "0.1.0", "0.1.0-3-g12436a3-dirty" (three commits
// after the tag, uncommitted changes), "12436a3" (no tag yet), or "dev".
func String() string {
	var module string
	if bi, ok := debug.ReadBuildInfo(); ok {
		module = bi.Main.Version
	}
	return pick(stamped, module)
}

// pick is the version from what the link stamped and the module version the build recorded.
func pick(stamped, module string) string {
	v := strings.TrimSpace(stamped)
	if v == "" && module != "(devel)" {
		v = module
	}
	if v == "" {
		return "dev"
	}
	return strings.TrimPrefix(v, "v")
}
