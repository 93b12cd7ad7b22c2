package version

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPick(t *testing.T) {
	for _, tc := range []struct {
		name, stamped, module, want string
	}{
		{"tag", "v0.1.0", "(devel)", "0.1.0"},
		{"after the tag", "v0.1.0-3-g12436a3-dirty", "", "0.1.0-3-g12436a3-dirty"},
		{"no tag yet", "12436a3\n", "(devel)", "12436a3"},
		{"go install", "", "v0.1.0", "0.1.0"},
		{"go install of a commit", "", "v0.0.0-20261127041830-12436a3d2a1c", "0.0.0-20261127041830-12436a3d2a1c"},
		{"the stamp wins", "v0.2.0", "v0.1.0", "0.2.0"},
		{"go build in a work tree", "", "(devel)", "dev"},
		{"no build info", "", "", "dev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, pick(tc.stamped, tc.module))
		})
	}
}
