package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's shape. The Dockerfile's final stage must say the same;
// TestDockerfileMatchesBuilder holds the two together.
const (
	// BinaryPath is where the binary sits in the image.
	BinaryPath = "/stevedore"
	// User is the numeric user and group the controller runs as: not root,
	// and numeric so that Kubernetes' runAsNonRoot can verify it without an
	// /etc/passwd (a scratch image has none). 65532 is the "nonroot" user of
	// the distroless images, which many clusters' policies already allow.
	User = "65532:65532"
	// Package is the command the image runs, relative to the module root.
	Package = "./cmd/stevedore"
	// VersionVar is the variable release builds set at link time.
	VersionVar = "github.com/stevedore-autoscaler/stevedore/internal/version.Version"
	// CommitVar is the VCS revision, set at link time: the log lines'
	// commit key and `stevedore version` carry it.
	CommitVar = "github.com/stevedore-autoscaler/stevedore/internal/version.Commit"
)

// Entrypoint runs the controller; the chart passes only flags as args.
var Entrypoint = []string{BinaryPath, "controller"}

// Platform is one target of the multi-arch image.
type Platform struct {
	OS, Arch, Variant string
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Platforms are the image's targets, in index order: the EC2 instance
// families stevedore launches are x86_64 and arm64 (Graviton), and the
// controller runs on either.
var Platforms = []Platform{
	{OS: "linux", Arch: "amd64"},
	{OS: "linux", Arch: "arm64", Variant: "v8"},
}

// GoBuildArgs are the arguments of the go build that produces the image's
// binary; the Dockerfile's build stage runs the same command. -trimpath and
// -buildvcs=false keep machine paths and the state of the work tree out of the
// binary (the Dockerfile's context has no .git), so the same source and Go
// version give the same bytes; -s -w drop the symbol table and DWARF, which a
// container never needs.
func GoBuildArgs(version, commit, out string) []string {
	return []string{"build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X " + VersionVar + "=" + version + " -X " + CommitVar + "=" + commit,
		"-o", out, Package}
}

// Compile cross-compiles the binary for p into out. The environment pins
// what would otherwise come from the caller's: no cgo (the binary must be
// static to run on scratch), the baseline instruction sets the Dockerfile's
// builder uses, and no GOFLAGS.
func Compile(ctx context.Context, root, version, commit string, p Platform, out string) error {
	cmd := exec.CommandContext(ctx, goTool(), GoBuildArgs(version, commit, out)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch,
		"GOAMD64=v1", "GOARM64=v8.0", "GOFLAGS=")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s in %s: %v\n%s", p, root, err, msg)
	}
	return nil
}

// goTool is the go command: the one running this program's tests or `go
// run` when GOROOT says where it is, else the one on PATH.
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Binary is a compiled binary for one platform.
type Binary struct {
	Platform Platform
	Path     string
}

// Assemble builds the multi-arch image index: one OCI image per binary, each a
// single layer holding the binary at BinaryPath, in the order given. Every
// timestamp is epoch, so the same binaries and epoch give the same digests.
func Assemble(bins []Binary, epoch time.Time) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, b := range bins {
		img, err := platformImage(b, epoch)
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{
				OS: b.Platform.OS, Architecture: b.Platform.Arch, Variant: b.Platform.Variant}},
		})
	}
	return mutate.AppendManifests(idx, adds...), nil
}

func platformImage(b Binary, epoch time.Time) (v1.Image, error) {
	data, err := os.ReadFile(b.Path)
	if err != nil {
		return nil, fmt.Errorf("binary for %s: %w", b.Platform, err)
	}
	layerBytes, err := binaryLayer(data, epoch)
	if err != nil {
		return nil, fmt.Errorf("layer for %s: %w", b.Platform, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer for %s: %w", b.Platform, err)
	}
	created := v1.Time{Time: epoch}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "COPY stevedore " + BinaryPath},
	})
	if err != nil {
		return nil, fmt.Errorf("image for %s: %w", b.Platform, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config for %s: %w", b.Platform, err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = b.Platform.OS, b.Platform.Arch, b.Platform.Variant
	cf.Created = created
	cf.Config = v1.Config{
		Entrypoint: append([]string(nil), Entrypoint...),
		User:       User,
	}
	return mutate.ConfigFile(img, cf)
}

// binaryLayer is the gzipped tar of the one file, with fixed headers: owned
// by root (the binary is read-only to the user it runs as), mode 0755, and
// the epoch as its time. compress/gzip writes no name or time in its header,
// so equal input gives equal bytes.
func binaryLayer(bin []byte, epoch time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     BinaryPath[1:],
		Mode:     0o755,
		Size:     int64(len(bin)),
		ModTime:  epoch,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
