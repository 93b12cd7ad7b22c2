// Command image writes throttled's container image as an OCI image archive, without a
// container daemon (make image):
//
//	go run ./image -o ../dist/throttled-image.tar \
//		-binary linux/amd64=../bin/linux-amd64/throttled -binary linux/arm64=../bin/linux-arm64/throttled
//
// The archive is a tarred OCI image layout (what `docker load`, `podman load`, `skopeo copy
// oci-archive:` and `crane push` read): index.json names one image index, tagged with -ref,
// whose manifests are one image per platform. Each image is two layers on an empty base:
//
//   - the files every platform shares, so that the layer is stored once: /etc/passwd and
//     /etc/group with the user throttled (65532, distroless's nonroot), the build machine's
//     CA certificates, /etc/nsswitch.conf, the configuration in /etc/throttled/throttled.conf
//     (throttled.conf beside this file, which the Dockerfile copies too) and /data, owned by
//     the user;
//   - the platform's static binary in /usr/local/bin/throttled.
//
// Every timestamp is -created (SOURCE_DATE_EPOCH, else the Unix epoch), so that the same
// inputs make the same digests.
package main

import (
	"archive/tar"
	"bytes"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed facts, which the tests read back from the archive.
const (
	// UID and GID are the user throttled runs as: 65532, distroless's nonroot, so that the
	// Dockerfile's image and this one own /data alike.
	UID = 65532
	GID = 65532
	// BinaryPath is where the binary lies; ConfigPath the configuration it starts with.
	BinaryPath = "/usr/local/bin/throttled"
	ConfigPath = "/etc/throttled/throttled.conf"
	// DataDir is the volume for persistence (dir in throttled.conf).
	DataDir = "/data"
)

// Ports are the ports the image exposes: RESP, http-port, grpc-port and metrics-port, as
// throttled.conf sets them (grpc-port is off until a ratelimit-config is mounted).
var Ports = []string{"6379/tcp", "8080/tcp", "8081/tcp", "9121/tcp"}

// conf is the configuration baked into the image.
//
//go:embed throttled.conf
var conf []byte

// platformBinaries is the repeated -binary os/arch=path flag.
type platformBinaries []platformBinary

type platformBinary struct {
	platform v1.Platform
	path     string
}

func (p *platformBinaries) String() string { return fmt.Sprint(*p) }

func (p *platformBinaries) Set(v string) error {
	plat, path, ok := strings.Cut(v, "=")
	osName, arch, ok2 := strings.Cut(plat, "/")
	if !ok || !ok2 || path == "" {
		return fmt.Errorf("%q: want os/arch=path, e.g. linux/amd64=bin/linux-amd64/throttled", v)
	}
	*p = append(*p, platformBinary{platform: v1.Platform{OS: osName, Architecture: arch}, path: path})
	return nil
}

func main() {
	var bins platformBinaries
	out := flag.String("o", "dist/throttled-image.tar", "the OCI image archive to write")
	caCerts := flag.String("cacerts", "/etc/ssl/certs/ca-certificates.crt", "the CA certificates to bake in")
	ref := flag.String("ref", "ghcr.io/throttledhq/throttled:dev", "the name index.json gives the image")
	version := flag.String("version", "dev", "org.opencontainers.image.version")
	revision := flag.String("revision", "", "org.opencontainers.image.revision: the git commit")
	flag.Var(&bins, "binary", "os/arch=path of a static throttled binary; once per platform")
	flag.Parse()
	if err := run(*out, *caCerts, *ref, *version, *revision, bins); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(out, caCerts, ref, version, revision string, bins platformBinaries) error {
	if len(bins) == 0 {
		return errors.New("no -binary given")
	}
	created, err := buildTime()
	if err != nil {
		return err
	}
	certs, err := os.ReadFile(caCerts)
	if err != nil {
		return fmt.Errorf("ca certificates: %w", err)
	}
	base, err := baseLayer(certs, created)
	if err != nil {
		return err
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       "throttled",
		"org.opencontainers.image.description": "A rate-limit server that speaks the Redis protocol",
		"org.opencontainers.image.source":      "https://github.com/throttledhq/throttled",
		"org.opencontainers.image.url":         "https://github.com/throttledhq/throttled",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.created":     created.Format(time.RFC3339),
	}
	if revision != "" {
		labels["org.opencontainers.image.revision"] = revision
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range bins {
		img, err := platformImage(b, base, labels, created)
		if err != nil {
			return err
		}
		plat := b.platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &plat}})
	}
	return writeArchive(out, idx, ref)
}

// buildTime is SOURCE_DATE_EPOCH's time, or the Unix epoch.
func buildTime() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH: %q is not a number of seconds", s)
	}
	return time.Unix(n, 0).UTC(), nil
}

// platformImage is one platform's image: the shared base layer, the binary's layer and the
// config.
func platformImage(b platformBinary, base v1.Layer, labels map[string]string, created time.Time) (v1.Image, error) {
	bin, err := os.ReadFile(b.path)
	if err != nil {
		return nil, fmt.Errorf("binary for %s/%s: %w", b.platform.OS, b.platform.Architecture, err)
	}
	binLayer, err := layer([]entry{
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(BinaryPath, "/"), mode: 0o755, data: bin},
	}, created)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "image: users, CA certificates, " + ConfigPath + ", " + DataDir}},
		mutate.Addendum{Layer: binLayer, History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "image: " + BinaryPath}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = b.platform.OS, b.platform.Architecture, b.platform.Variant
	cf.Created = v1.Time{Time: created}
	cf.Config = v1.Config{
		User:         fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint:   []string{BinaryPath, ConfigPath},
		Env:          []string{"PATH=/usr/local/bin"},
		WorkingDir:   DataDir,
		ExposedPorts: map[string]struct{}{},
		Volumes:      map[string]struct{}{DataDir: {}},
		Labels:       labels,
		StopSignal:   "SIGTERM",
	}
	for _, p := range Ports {
		cf.Config.ExposedPorts[p] = struct{}{}
	}
	return mutate.ConfigFile(img, cf)
}

// baseLayer holds what every platform's image shares.
func baseLayer(certs []byte, created time.Time) (v1.Layer, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nthrottled:x:%d:%d:throttled:%s:/sbin/nologin\n", UID, GID, DataDir)
	group := fmt.Sprintf("root:x:0:\nthrottled:x:%d:\n", GID)
	return layer([]entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		// Go's resolver reads it; without it, glibc's order would be guessed.
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: certs},
		{name: "etc/throttled/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(ConfigPath, "/"), mode: 0o644, data: conf},
		{name: strings.TrimPrefix(DataDir, "/") + "/", mode: 0o700, dir: true, uid: UID, gid: GID},
		// A scratch /tmp, as a base image has one (a read-only root mounts an emptyDir on it).
		{name: "tmp/", mode: 0o1777, dir: true},
	}, created)
}

// entry is one file or directory of a layer.
type entry struct {
	name     string
	mode     int64
	dir      bool
	data     []byte
	uid, gid int
}

// layer is a gzipped OCI layer of entries, in order, every timestamp created.
func layer(entries []entry, created time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: created, Format: tar.FormatPAX}
		if e.uid == UID {
			h.Uname, h.Gname = "throttled", "throttled"
		} else {
			h.Uname, h.Gname = "root", "root"
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// writeArchive writes idx as an OCI image layout, tagged ref, and tars the layout into out.
func writeArchive(out string, idx v1.ImageIndex, ref string) error {
	dir, err := os.MkdirTemp("", "throttled-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref, // skopeo, podman
		"io.containerd.image.name":          ref, // docker load, ctr import
	})); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := tarDir(f, dir); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// tarDir writes the files under dir to w, sorted, with fixed owners and times.
func tarDir(w io.Writer, dir string) error {
	var paths []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		paths = append(paths, path)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	tw := tar.NewWriter(w)
	for _, path := range paths {
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, dir+string(filepath.Separator)))
		h := &tar.Header{Name: rel, Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if st.IsDir() {
			h.Name, h.Mode, h.Typeflag = rel+"/", 0o755, tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, st.Size()
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if st.IsDir() {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return tw.Close()
}
