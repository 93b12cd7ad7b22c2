package deploy

import (
	"os"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/stretchr/testify/require"
)

// TestDockerfile parses ../Dockerfile as BuildKit does, with its linter's checks, and reads
// what the runtime stage makes of the image: the same user, ports, volume, entrypoint and
// configuration as make image's.
func TestDockerfile(t *testing.T) {
	f, err := os.Open("../Dockerfile")
	require.NoError(t, err)
	defer f.Close()
	ast, err := parser.Parse(f)
	require.NoError(t, err)
	require.Empty(t, ast.Warnings)
	var lint []string
	stages, _, err := instructions.Parse(ast.AST, linter.New(&linter.Config{
		Warn: func(rule, _, _, msg string, _ []parser.Range) { lint = append(lint, rule+": "+msg) },
	}))
	require.NoError(t, err)
	require.Empty(t, lint, "BuildKit's checks")
	require.Len(t, stages, 2, "a builder, then the runtime")

	build := stages[0]
	require.Equal(t, "build", build.Name)
	require.True(t, strings.HasPrefix(build.BaseName, "golang:"), build.BaseName)
	var built bool
	for _, c := range build.Commands {
		if run, ok := c.(*instructions.RunCommand); ok {
			line := strings.Join(run.CmdLine, " ")
			if strings.Contains(line, "go build") {
				built = true
				require.Contains(t, line, "CGO_ENABLED=0", "a static binary for the static base")
				require.Contains(t, line, "./cmd/throttled")
			}
		}
	}
	require.True(t, built, "the builder runs go build")

	rt := stages[1]
	require.Equal(t, "gcr.io/distroless/static-debian12:nonroot", rt.BaseName)
	var (
		user, workdir, stop string
		volumes, ports      []string
		entrypoint          []string
		copies              = map[string]*instructions.CopyCommand{}
	)
	for _, c := range rt.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.VolumeCommand:
			volumes = append(volumes, c.Volumes...)
		case *instructions.ExposeCommand:
			ports = append(ports, c.Ports...)
		case *instructions.EntrypointCommand:
			require.False(t, c.PrependShell, "the exec form: SIGTERM reaches throttled, not a shell")
			entrypoint = c.CmdLine
		case *instructions.WorkdirCommand:
			workdir = c.Path
		case *instructions.StopSignalCommand:
			stop = c.Signal
		case *instructions.CopyCommand:
			copies[c.DestPath] = c
		case *instructions.RunCommand:
			t.Fatalf("the runtime stage has no shell to RUN with: %v", c.CmdLine)
		}
	}
	require.Equal(t, "65532:65532", user, "non-root, distroless's nonroot, who owns /data")
	require.Equal(t, []string{"/data"}, volumes)
	require.Equal(t, "/data", workdir)
	require.Equal(t, "SIGTERM", stop)
	require.Equal(t, []string{"6379/tcp", "8080/tcp", "8081/tcp", "9121/tcp"}, ports)
	require.Equal(t, []string{"/usr/local/bin/throttled", "/etc/throttled/throttled.conf"}, entrypoint)

	require.Contains(t, copies, "/usr/local/bin/throttled")
	require.Equal(t, "build", copies["/usr/local/bin/throttled"].From)
	conf := copies["/etc/throttled/throttled.conf"]
	require.NotNil(t, conf)
	require.Equal(t, []string{"deploy/image/throttled.conf"}, conf.SourcePaths, "make image's configuration")
	data := copies["/data"]
	require.NotNil(t, data)
	require.Equal(t, "65532:65532", data.Chown)

	// .dockerignore keeps the configuration in the build context.
	ignore, err := os.ReadFile("../.dockerignore")
	require.NoError(t, err)
	require.Contains(t, strings.Split(string(ignore), "\n"), "!deploy/image/throttled.conf")
}
