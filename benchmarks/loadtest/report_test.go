package loadtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWriteSection: a tool's section is replaced up to the next one, and added at the end
// of a file that lacks it, leaving the others as they were.
func TestWriteSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "RESULTS.md")
	require.NoError(t, WriteSection(path, "## A", "## A\n\none"))
	require.NoError(t, WriteSection(path, "## B", "## B\n\ntwo"))
	require.NoError(t, WriteSection(path, "## A", "## A\n\nthree\n"))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "## A\n\nthree\n\n## B\n\ntwo\n", string(b))
}
