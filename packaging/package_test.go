package packaging

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// nfpm is the nfpm that GoReleaser v2.15.0 (the Makefile's) packages with, run from the module
// proxy: the .deb is built from the same nfpms section as make dist's, without cross-compiling
// every target.
const nfpm = "github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2"

// root is the repository's root, where .goreleaser.yaml's paths start.
const root = ".."

// nfpmConfig turns .goreleaser.yaml's nfpms entry into nfpm's own config for the binary bin:
// the same contents, scripts and fields, less GoReleaser's own keys.
func nfpmConfig(t *testing.T, bin, version string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	require.NoError(t, err)
	var gr struct {
		NFPMs []map[string]any `yaml:"nfpms"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &gr))
	require.Len(t, gr.NFPMs, 1)
	cfg := gr.NFPMs[0]
	name, bindir := cfg["package_name"].(string), cfg["bindir"].(string)
	for _, k := range []string{"id", "ids", "package_name", "file_name_template", "formats", "bindir"} {
		delete(cfg, k)
	}
	cfg["name"], cfg["arch"], cfg["platform"], cfg["version"] = name, runtime.GOARCH, "linux", version
	cfg["contents"] = append(cfg["contents"].([]any), map[string]any{
		"src": bin, "dst": bindir + "/throttled", "file_info": map[string]any{"mode": 0o755}})
	out, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	return out
}

// TestDeb builds the .deb, checks what it installs, and runs it.
func TestDeb(t *testing.T) {
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "throttled")
	build := exec.Command("go", "build", "-trimpath", "-o", bin,
		"-ldflags", "-X github.com/throttledhq/throttled/internal/version.stamped=v0.1.0-test", "./cmd/throttled")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	conf := filepath.Join(tmp, "nfpm.yaml")
	require.NoError(t, os.WriteFile(conf, nfpmConfig(t, bin, "0.1.0~test"), 0o644))
	deb := filepath.Join(tmp, "throttled.deb")
	pkg := exec.Command("go", "run", nfpm, "package", "--config", conf, "--packager", "deb", "--target", deb)
	pkg.Dir = root
	pkg.Env = append(os.Environ(), "CGO_ENABLED=0") // as make deps built it: the race pass's cgo would build it anew
	out, err = pkg.CombinedOutput()
	require.NoError(t, err, string(out))

	// The package's fields, its conffiles and its files.
	fields, err := exec.Command("dpkg-deb", "-f", deb, "Package", "Version", "Architecture").Output()
	require.NoError(t, err)
	require.Equal(t, "Package: throttled\nVersion: 0.1.0~test\nArchitecture: "+runtime.GOARCH+"\n", string(fields))
	control := filepath.Join(tmp, "control")
	out, err = exec.Command("dpkg-deb", "-e", deb, control).CombinedOutput()
	require.NoError(t, err, string(out))
	conffiles, err := os.ReadFile(filepath.Join(control, "conffiles"))
	require.NoError(t, err)
	require.Equal(t, "/etc/throttled/throttled.conf\n", string(conffiles))
	for _, script := range []string{"postinst", "prerm", "postrm"} {
		_, err := os.Stat(filepath.Join(control, script))
		require.NoError(t, err, script)
	}
	fsroot := filepath.Join(tmp, "root")
	out, err = exec.Command("dpkg-deb", "-x", deb, fsroot).CombinedOutput()
	require.NoError(t, err, string(out))
	for _, tc := range []struct {
		path string
		mode os.FileMode
		same string // the repository's file it must equal, if any
	}{
		{"usr/bin/throttled", 0o755, ""},
		{"etc/throttled/throttled.conf", 0o644, "throttled.conf"},
		{"usr/lib/systemd/system/throttled.service", 0o644, "packaging/throttled.service"},
		{"usr/share/doc/throttled/LICENSE", 0o644, "LICENSE"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			st, err := os.Stat(filepath.Join(fsroot, tc.path))
			require.NoError(t, err)
			require.Equal(t, tc.mode, st.Mode().Perm())
			if tc.same != "" {
				want, err := os.ReadFile(filepath.Join(root, tc.same))
				require.NoError(t, err)
				got, err := os.ReadFile(filepath.Join(fsroot, tc.path))
				require.NoError(t, err)
				require.Equal(t, string(want), string(got))
			}
		})
	}

	unit := readUnit(t, filepath.Join(fsroot, "usr/lib/systemd/system/throttled.service"))
	for _, kv := range [][2]string{
		{"Type", "notify"}, {"DynamicUser", "yes"}, {"StateDirectory", "throttled"}, {"NoNewPrivileges", "yes"},
		{"ProtectSystem", "strict"}, {"ProtectHome", "yes"}, {"PrivateTmp", "yes"}, {"CapabilityBoundingSet", ""},
		{"LimitNOFILE", "65536"},
	} {
		require.Contains(t, unit[kv[0]], kv[1], kv[0])
	}

	// systemd-analyze verify, with ExecStart pointing at the extracted binary (it checks the
	// executable exists).
	_, err = exec.LookPath("systemd-analyze")
	require.NoError(t, err, "systemd-analyze is missing; `make deps` installs it (apt-get install systemd)")
	raw, err := os.ReadFile(filepath.Join(fsroot, "usr/lib/systemd/system/throttled.service"))
	require.NoError(t, err)
	verify := filepath.Join(tmp, "verify", "throttled.service")
	require.NoError(t, os.MkdirAll(filepath.Dir(verify), 0o755))
	require.NoError(t, os.WriteFile(verify, []byte(strings.ReplaceAll(string(raw), "/usr/bin/throttled", filepath.Join(fsroot, "usr/bin/throttled"))), 0o644))
	out, err = exec.Command("systemd-analyze", "verify", "--man=no", verify).CombinedOutput()
	require.NoError(t, err, string(out))
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		require.NotContains(t, line, "throttled.service", "systemd-analyze: %s", out)
	}

	// Start it as the unit does: its ExecStart and Environment, paths into the extracted tree,
	// the state directory a temporary one, a free port, and a notify socket as systemd's.
	args := strings.Fields(unit["ExecStart"][0])
	require.Equal(t, "/usr/bin/throttled", args[0])
	for i, a := range args {
		args[i] = strings.Replace(a, "/", fsroot+"/", 1)
	}
	notifyPath := filepath.Join(tmp, "notify")
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyPath, Net: "unixgram"})
	require.NoError(t, err)
	defer notify.Close()
	cmd := exec.Command(args[0], append(args[1:], "--port", "0")...)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+notifyPath)
	for _, e := range unit["Environment"] {
		cmd.Env = append(cmd.Env, strings.ReplaceAll(e, "/var/lib/throttled", filepath.Join(tmp, "state")))
	}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	buf := make([]byte, 512)
	require.NoError(t, notify.SetReadDeadline(time.Now().Add(30*time.Second)))
	n, err := notify.Read(buf)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(buf[:n]), "READY=1\n"), string(buf[:n]))

	var listening string
	select {
	case listening = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatal("no ready to accept connections line in the log")
	}
	rdb := redis.NewClient(&redis.Options{Addr: listening, Protocol: 2})
	defer rdb.Close()
	ctx := context.Background()
	v, err := rdb.Do(ctx, "CL.THROTTLE", "user123", "15", "30", "60").Result()
	require.NoError(t, err)
	require.Equal(t, []any{int64(0), int64(16), int64(15), int64(-1), int64(2)}, v)
	info, err := rdb.Info(ctx, "server", "persistence").Result()
	require.NoError(t, err)
	require.Contains(t, info, "throttled_version:0.1.0-test\r\n")
	_, err = os.Stat(filepath.Join(tmp, "state"))
	require.NoError(t, err, "the state goes to the unit's StateDirectory")

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	require.NoError(t, cmd.Wait())
}

// readyLine is the log line of the listening address (log/slog's text handler).
var readyLine = regexp.MustCompile(`msg="ready to accept connections" addr=(\S+)`)

// readUnit reads a systemd unit's Key=value lines; a key may repeat.
func readUnit(t *testing.T, path string) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	unit := map[string][]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "[") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, line)
		unit[k] = append(unit[k], v)
	}
	return unit
}
