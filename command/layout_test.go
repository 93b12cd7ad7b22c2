package command_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/throttledhq/throttled"

// TestFamiliesDoNotImportServer: a command family gets a narrow context, never the server.
// Every package that declares commands (it imports this one) but the server itself must
// not depend on server/, directly or through another package.
func TestFamiliesDoNotImportServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").Output()
	require.NoError(t, err)
	var families []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if pkg != module+"/server" && pkg != module+"/command" && strings.Contains(" "+imports+" ", " "+module+"/command ") &&
			!strings.HasPrefix(pkg, module+"/cmd/") {
			families = append(families, pkg)
		}
	}
	require.Contains(t, families, module+"/datatype")
	require.Contains(t, families, module+"/ratelimit")
	for _, pkg := range families {
		deps, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
		require.NoError(t, err)
		for _, dep := range strings.Fields(string(deps)) {
			require.NotEqual(t, module+"/server", dep, "%s imports server/: a family gets what it needs through command.Ctx and its Config", pkg)
		}
	}
}
