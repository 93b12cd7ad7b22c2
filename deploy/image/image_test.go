package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// archive is the image make image wrote; make test-deploy makes it before the tests run.
var archive = filepath.Join("..", "..", "dist", "throttled-image.tar")

// openArchive untars the archive at path into a temporary OCI layout and opens its
// index.json.
func openArchive(t *testing.T, path string) v1.ImageIndex {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err, "make image writes it: run make test-deploy, or make image first")
	defer f.Close()
	dir := t.TempDir()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.False(t, strings.Contains(h.Name, ".."), h.Name)
		path := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(path, 0o755))
		case tar.TypeReg:
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			out, err := os.Create(path)
			require.NoError(t, err)
			_, err = io.Copy(out, tr)
			require.NoError(t, err)
			require.NoError(t, out.Close())
		default:
			t.Fatalf("%s: unexpected type %c in the archive", h.Name, h.Typeflag)
		}
	}
	ociLayout, err := os.ReadFile(filepath.Join(dir, "oci-layout"))
	require.NoError(t, err)
	require.JSONEq(t, `{"imageLayoutVersion": "1.0.0"}`, string(ociLayout))
	p, err := layout.FromPath(dir)
	require.NoError(t, err)
	top, err := p.ImageIndex()
	require.NoError(t, err)
	return top
}

// platformIndex is the multi-platform index that the index.json of the archive at path
// names, with its tag.
func platformIndex(t *testing.T, path string) (v1.ImageIndex, *v1.IndexManifest) {
	t.Helper()
	top := openArchive(t, path)
	topManifest, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, topManifest.Manifests, 1)
	desc := topManifest.Manifests[0]
	require.Equal(t, types.OCIImageIndex, desc.MediaType)
	require.NotEmpty(t, desc.Annotations["org.opencontainers.image.ref.name"])
	require.Equal(t, desc.Annotations["org.opencontainers.image.ref.name"], desc.Annotations["io.containerd.image.name"])
	idx, err := top.ImageIndex(desc.Digest)
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	return idx, im
}

// checkIndex checks every image of the archive at path, as a runtime reads it, and that they
// share the base layer; it returns their platforms, os/arch, and their images by platform.
func checkIndex(t *testing.T, path string) ([]string, map[string]v1.Image) {
	t.Helper()
	idx, im := platformIndex(t, path)
	require.Equal(t, types.OCIImageIndex, im.MediaType)
	var platforms []string
	images := map[string]v1.Image{}
	var baseDigests []v1.Hash
	for _, m := range im.Manifests {
		require.Equal(t, types.OCIManifestSchema1, m.MediaType)
		require.NotNil(t, m.Platform)
		platform := m.Platform.OS + "/" + m.Platform.Architecture
		platforms = append(platforms, platform)
		img, err := idx.Image(m.Digest)
		require.NoError(t, err)
		images[platform] = img
		manifest, err := img.Manifest()
		require.NoError(t, err)
		require.Equal(t, types.OCIConfigJSON, manifest.Config.MediaType)
		require.Len(t, manifest.Layers, 2, "the shared files, then the binary")
		for _, l := range manifest.Layers {
			require.Equal(t, types.OCILayer, l.MediaType)
		}
		baseDigests = append(baseDigests, manifest.Layers[0].Digest)

		cf, err := img.ConfigFile()
		require.NoError(t, err)
		require.Equal(t, m.Platform.OS, cf.OS)
		require.Equal(t, m.Platform.Architecture, cf.Architecture)
		require.Equal(t, "65532:65532", cf.Config.User)
		require.Equal(t, []string{BinaryPath, ConfigPath}, cf.Config.Entrypoint)
		require.Empty(t, cf.Config.Cmd, "options go after the entrypoint: docker run image --requirepass ...")
		require.Equal(t, map[string]struct{}{"6379/tcp": {}, "8080/tcp": {}, "8081/tcp": {}, "9121/tcp": {}}, cf.Config.ExposedPorts)
		require.Equal(t, map[string]struct{}{"/data": {}}, cf.Config.Volumes)
		require.Equal(t, "SIGTERM", cf.Config.StopSignal)
		for _, label := range []string{"title", "description", "source", "licenses", "version", "created"} {
			require.NotEmpty(t, cf.Config.Labels["org.opencontainers.image."+label], label)
		}
		require.Equal(t, "throttled", cf.Config.Labels["org.opencontainers.image.title"])
		require.Equal(t, "Apache-2.0", cf.Config.Labels["org.opencontainers.image.licenses"])
		require.Len(t, cf.History, 2)
	}
	require.Len(t, images, len(platforms), "a platform twice: %v", platforms)
	for _, d := range baseDigests {
		require.Equal(t, baseDigests[0], d, "the platforms share the base layer")
	}
	return platforms, images
}

// TestImageIndex checks make image's archive: its images, one for each of IMAGE_PLATFORMS,
// among them this machine's, which TestImageFiles and TestImageRuns open. make test builds
// this machine's platform only (a second platform's binary was a second compile of the
// server, 118 s of a cold make test): TestImageIndexPlatforms builds a two-platform index.
func TestImageIndex(t *testing.T) {
	platforms, _ := checkIndex(t, archive)
	require.Contains(t, platforms, "linux/"+runtime.GOARCH)
}

// TestImageIndexPlatforms runs the command as make image does for linux/amd64 and
// linux/arm64, with a file of its own standing in for each platform's binary (the command
// copies a binary as it is): the index has an image for each platform, on the one base
// layer, with that platform's binary in BinaryPath.
func TestImageIndexPlatforms(t *testing.T) {
	dir := t.TempDir()
	bins := platformBinaries{}
	want := map[string]string{}
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		path := filepath.Join(dir, strings.ReplaceAll(p, "/", "-"))
		want[p] = "\x7fELF: the binary for " + p
		require.NoError(t, os.WriteFile(path, []byte(want[p]), 0o755))
		require.NoError(t, bins.Set(p+"="+path))
	}
	out := filepath.Join(dir, "image.tar")
	require.NoError(t, run(out, "/etc/ssl/certs/ca-certificates.crt", "ghcr.io/throttledhq/throttled:test", "test", "", bins))
	platforms, images := checkIndex(t, out)
	require.Equal(t, []string{"linux/amd64", "linux/arm64"}, platforms)
	for p, img := range images {
		root, headers := extract(t, img)
		require.Equal(t, int64(0o755), headers[BinaryPath].Mode, p)
		bin, err := os.ReadFile(filepath.Join(root, BinaryPath))
		require.NoError(t, err)
		require.Equal(t, want[p], string(bin), p)
	}
}

// extract unpacks img's layers in order into a new directory and returns it with the
// owners, modes and kinds the layers gave each path.
func extract(t *testing.T, img v1.Image) (string, map[string]*tar.Header) {
	t.Helper()
	root := t.TempDir()
	headers := map[string]*tar.Header{}
	layers, err := img.Layers()
	require.NoError(t, err)
	for _, l := range layers {
		rc, err := l.Uncompressed()
		require.NoError(t, err)
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			name := "/" + strings.TrimSuffix(h.Name, "/")
			require.False(t, strings.Contains(name, ".."), name)
			headers[name] = h
			path := filepath.Join(root, name)
			switch h.Typeflag {
			case tar.TypeDir:
				require.NoError(t, os.MkdirAll(path, 0o755))
			case tar.TypeReg:
				data, err := io.ReadAll(tr)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(path, data, os.FileMode(h.Mode)&0o777))
			default:
				t.Fatalf("%s: unexpected type %c", name, h.Typeflag)
			}
		}
		require.NoError(t, rc.Close())
	}
	return root, headers
}

// hostImage is the image of the platform the test runs on.
func hostImage(t *testing.T) v1.Image {
	t.Helper()
	idx, im := platformIndex(t, archive)
	for _, m := range im.Manifests {
		if m.Platform.OS == "linux" && m.Platform.Architecture == runtime.GOARCH {
			img, err := idx.Image(m.Digest)
			require.NoError(t, err)
			return img
		}
	}
	t.Fatalf("no linux/%s image in %s", runtime.GOARCH, archive)
	return nil
}

func TestImageFiles(t *testing.T) {
	root, headers := extract(t, hostImage(t))
	type want struct {
		mode     int64
		uid, gid int
		dir      bool
	}
	for path, w := range map[string]want{
		BinaryPath:                           {mode: 0o755},
		ConfigPath:                           {mode: 0o644},
		"/etc/passwd":                        {mode: 0o644},
		"/etc/group":                         {mode: 0o644},
		"/etc/ssl/certs/ca-certificates.crt": {mode: 0o644},
		"/data":                              {mode: 0o700, uid: UID, gid: GID, dir: true},
	} {
		h := headers[path]
		require.NotNil(t, h, path)
		require.Equal(t, w.mode, h.Mode, path)
		require.Equal(t, w.uid, h.Uid, path)
		require.Equal(t, w.gid, h.Gid, path)
		require.Equal(t, w.dir, h.Typeflag == tar.TypeDir, path)
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	require.NoError(t, err)
	require.Contains(t, strings.Split(string(passwd), "\n"), "throttled:x:65532:65532:throttled:/data:/sbin/nologin")
	group, err := os.ReadFile(filepath.Join(root, "etc/group"))
	require.NoError(t, err)
	require.Contains(t, strings.Split(string(group), "\n"), "throttled:x:65532:")

	certs, err := os.ReadFile(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt"))
	require.NoError(t, err)
	require.Contains(t, string(certs), "-----BEGIN CERTIFICATE-----")

	// The baked configuration is the one in the repository, and says what a container needs.
	baked, err := os.ReadFile(filepath.Join(root, ConfigPath))
	require.NoError(t, err)
	require.Equal(t, string(conf), string(baked))
	options := map[string]string{}
	for _, line := range strings.Split(string(baked), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			name, value, _ := strings.Cut(line, " ")
			options[name] = value
		}
	}
	require.Equal(t, map[string]string{
		"bind": "0.0.0.0", "port": "6379", "dir": "/data", "protected-mode": "no",
		"http-port": "8080", "metrics-port": "9121", "log-format": "json",
	}, options)

	// A static binary: no interpreter, nothing for an empty base to lack.
	bin, err := os.ReadFile(filepath.Join(root, BinaryPath))
	require.NoError(t, err)
	require.Equal(t, "\x7fELF", string(bin[:4]))
	require.NotContains(t, string(bin), "/lib64/ld-linux", "the binary is dynamically linked")
	require.NotContains(t, string(bin), "/lib/ld-linux", "the binary is dynamically linked")
}

// freePort is a port nothing listens on at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestImageRuns starts the binary as the image's entrypoint does, from the extracted layers
// with their baked configuration, overridden only where a host is not a container: the
// loopback and free ports, a temporary /data. It stops it with SIGTERM, as a container
// runtime does, and starts it again on the same data: the limit carried on.
func TestImageRuns(t *testing.T) {
	img := hostImage(t)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	root, _ := extract(t, img)
	data := t.TempDir()

	start := func() (*exec.Cmd, *redis.Client, string) {
		port, metricsPort, httpPort := freePort(t), freePort(t), freePort(t)
		args := []string{filepath.Join(root, cf.Config.Entrypoint[1])}
		args = append(args, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", data,
			"--metrics-port", strconv.Itoa(metricsPort), "--http-port", strconv.Itoa(httpPort), "--requirepass", "s3cret")
		cmd := exec.Command(filepath.Join(root, cf.Config.Entrypoint[0]), args...)
		cmd.Dir = root
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
		})
		rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), Password: "s3cret"})
		t.Cleanup(func() { rdb.Close() })
		ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", metricsPort)
		require.Eventually(t, func() bool {
			resp, err := http.Get(ready)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}, 20*time.Second, 50*time.Millisecond, "/readyz never answered 200")
		return cmd, rdb, fmt.Sprintf("http://127.0.0.1:%d", metricsPort)
	}
	ctx := context.Background()

	cmd, rdb, metricsURL := start()
	require.Equal(t, "PONG", rdb.Ping(ctx).Val())
	resp, err := http.Get(metricsURL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// CL.THROTTLE key max_burst count period: 3 allowed in a burst of 2 plus 1, then denied.
	for i := 0; i < 3; i++ {
		res, err := rdb.Do(ctx, "CL.THROTTLE", "user:42", 2, 1, 3600).Slice()
		require.NoError(t, err)
		require.Equal(t, int64(0), res[0], "request %d", i)
	}
	res, err := rdb.Do(ctx, "CL.THROTTLE", "user:42", 2, 1, 3600).Slice()
	require.NoError(t, err)
	require.Equal(t, int64(1), res[0])

	// SIGTERM: the state is flushed and the process exits 0, well within a grace period.
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("no exit 10s after SIGTERM")
	}

	_, rdb, _ = start()
	res, err = rdb.Do(ctx, "CL.THROTTLE", "user:42", 2, 1, 3600).Slice()
	require.NoError(t, err)
	require.Equal(t, int64(1), res[0], "the restarted server forgot the limit")
}
