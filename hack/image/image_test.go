package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	testVersion = "v0.0.0-imagetest"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
	testRef     = "example.com/stevedore:" + testVersion
)

// The image is built once, by the first test that needs it: cross-compiling
// the binary twice is the expensive part, and the Dockerfile tests need none
// of it.
var (
	buildDir string
	bins     []Binary
	epoch    = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	index    v1.ImageIndex

	buildOnce sync.Once
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// built compiles both binaries and assembles the index, once.
func built(t *testing.T) {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "stevedore-imagetest-"); buildErr != nil {
			return
		}
		for _, p := range Platforms {
			b := Binary{Platform: p, Path: filepath.Join(buildDir, p.Arch, "stevedore")}
			if buildErr = Compile(context.Background(), "../..", testVersion, testCommit, p, b.Path); buildErr != nil {
				return
			}
			bins = append(bins, b)
		}
		index, buildErr = Assemble(bins, epoch)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

// readBack writes the index as a layout and an archive, unpacks the archive
// into a fresh directory and reads the multi-arch index from there, so the
// tests see what `skopeo copy oci-archive:` or `crane push` would.
func readBack(t *testing.T) v1.ImageIndex {
	t.Helper()
	built(t)
	dir := t.TempDir()
	if err := WriteLayout(filepath.Join(dir, "oci"), index, testRef, testVersion); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "stevedore-oci.tar")
	if err := WriteArchive(archive, filepath.Join(dir, "oci"), epoch); err != nil {
		t.Fatal(err)
	}
	unpacked := filepath.Join(dir, "unpacked")
	untar(t, archive, unpacked)
	top, err := layout.ImageIndexFromPath(unpacked)
	if err != nil {
		t.Fatalf("reading the unpacked archive as an OCI layout: %v", err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 || tm.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json: want one OCI image index, got %+v", tm.Manifests)
	}
	if got := tm.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != testVersion {
		t.Errorf("index.json ref.name = %q, want %q", got, testVersion)
	}
	if got := tm.Manifests[0].Annotations["io.containerd.image.name"]; got != testRef {
		t.Errorf("index.json io.containerd.image.name = %q, want %q", got, testRef)
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIndexPlatforms: the index lists exactly linux/amd64 and linux/arm64,
// each an OCI image whose config names the same platform.
func TestIndexPlatforms(t *testing.T) {
	idx := readBack(t)
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %q, want %q", im.MediaType, types.OCIImageIndex)
	}
	var got []string
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		got = append(got, d.Platform.OS+"/"+d.Platform.Architecture)
		if d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%s: media type %q, want %q", got[len(got)-1], d.MediaType, types.OCIManifestSchema1)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != d.Platform.OS || cf.Architecture != d.Platform.Architecture || cf.Variant != d.Platform.Variant {
			t.Errorf("%s: config says %s/%s/%s", got[len(got)-1], cf.OS, cf.Architecture, cf.Variant)
		}
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("index platforms %v, want %v", got, want)
	}
}

// TestImageConfig: the controller runs as 65532:65532 from /stevedore
// controller, and every time in the image is the build's epoch.
func TestImageConfig(t *testing.T) {
	idx := readBack(t)
	for _, p := range Platforms {
		t.Run(p.String(), func(t *testing.T) {
			cf, err := imageFor(t, idx, p).ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.Config.User != "65532:65532" {
				t.Errorf("User = %q, want 65532:65532", cf.Config.User)
			}
			if want := []string{"/stevedore", "controller"}; !reflect.DeepEqual(cf.Config.Entrypoint, want) {
				t.Errorf("Entrypoint = %q, want %q", cf.Config.Entrypoint, want)
			}
			if len(cf.Config.Cmd) != 0 {
				t.Errorf("Cmd = %q, want none: the chart passes the flags", cf.Config.Cmd)
			}
			if !cf.Created.Time.Equal(epoch) {
				t.Errorf("Created = %v, want the epoch %v", cf.Created.Time, epoch)
			}
			if len(cf.RootFS.DiffIDs) != 1 || len(cf.History) != 1 {
				t.Errorf("want one layer and one history entry, got %d and %d", len(cf.RootFS.DiffIDs), len(cf.History))
			}
		})
	}
}

func imageFor(t *testing.T, idx v1.ImageIndex, p Platform) v1.Image {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS == p.OS && d.Platform.Architecture == p.Arch {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	t.Fatalf("no %s image in the index", p)
	return nil
}

// TestBinary takes the binary out of each image's layer and checks it is the
// static, stripped-of-paths build the scratch image needs. The host's own
// platform's binary is run: `stevedore version` must exit 0 and print the
// version stamped in; the other platform's is checked as an ELF file.
func TestBinary(t *testing.T) {
	idx := readBack(t)
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, p := range Platforms {
		t.Run(p.String(), func(t *testing.T) {
			path := extractBinary(t, imageFor(t, idx, p))

			f, err := elf.Open(path)
			if err != nil {
				t.Fatalf("the image's %s is not an ELF file: %v", BinaryPath, err)
			}
			defer f.Close()
			if f.Machine != machine[p.Arch] {
				t.Errorf("ELF machine %v, want %v", f.Machine, machine[p.Arch])
			}
			for _, prog := range f.Progs {
				if prog.Type == elf.PT_INTERP {
					t.Errorf("the binary asks for a dynamic loader (PT_INTERP); a scratch image has none: build with CGO_ENABLED=0")
				}
			}
			if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
				t.Errorf("the binary needs shared libraries %v", libs)
			}

			bi, err := buildinfo.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			settings := map[string]string{}
			for _, s := range bi.Settings {
				settings[s.Key] = s.Value
			}
			for k, want := range map[string]string{"CGO_ENABLED": "0", "GOOS": p.OS, "GOARCH": p.Arch, "-trimpath": "true"} {
				if settings[k] != want {
					t.Errorf("build setting %s = %q, want %q", k, settings[k], want)
				}
			}
			if _, ok := settings["vcs.revision"]; ok {
				t.Errorf("the binary records a VCS revision; the Dockerfile's build has no .git, so the two would differ")
			}
			// With -trimpath the build info leaves -ldflags out, so look for
			// the stamped version in the binary itself.
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, stamp := range [][2]string{{testVersion, VersionVar}, {testCommit, CommitVar}} {
				if !bytes.Contains(data, []byte(stamp[0])) {
					t.Errorf("the binary does not contain %q set with -X %s", stamp[0], stamp[1])
				}
			}
			var roots bool
			for _, d := range bi.Deps {
				roots = roots || d.Path == "golang.org/x/crypto/x509roots/fallback"
			}
			if !roots {
				t.Errorf("golang.org/x/crypto/x509roots/fallback is not linked: on scratch the binary would have no CA roots to verify AWS with")
			}

			if p.OS != runtime.GOOS || p.Arch != runtime.GOARCH {
				return
			}
			// As on scratch: no environment, no home, no certificates.
			cmd := exec.Command(path, "version")
			cmd.Env = []string{}
			cmd.Dir = t.TempDir()
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("stevedore version: %v\n%s", err, out)
			}
			if want := "stevedore " + testVersion + " (" + testCommit + ") "; !strings.HasPrefix(string(out), want) {
				t.Errorf("stevedore version printed %q, want it to start with %q", out, want)
			}
			if !strings.Contains(string(out), p.String()) {
				t.Errorf("stevedore version printed %q, want the platform %s", out, p)
			}
		})
	}
}

// extractBinary returns the path of the binary copied out of img's single
// layer, after checking its tar header.
func extractBinary(t *testing.T, img v1.Image) string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("layer media type %q, want %q", mt, types.OCILayer)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var path string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if "/"+strings.TrimPrefix(hdr.Name, "./") != BinaryPath {
			t.Errorf("unexpected entry %q in the layer", hdr.Name)
			continue
		}
		if hdr.Typeflag != tar.TypeReg || hdr.Mode != 0o755 || hdr.Uid != 0 || hdr.Gid != 0 || !hdr.ModTime.Equal(epoch) {
			t.Errorf("%s: type %c mode %o uid %d gid %d time %v; want a regular file, 0755, root, %v",
				hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Uid, hdr.Gid, hdr.ModTime, epoch)
		}
		path = filepath.Join(t.TempDir(), "stevedore")
		out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, tr); err != nil {
			t.Fatal(err)
		}
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if path == "" {
		t.Fatalf("no %s in the layer", BinaryPath)
	}
	return path
}

// TestReproducible: assembling the same binaries again gives the same index
// digest and a byte-identical archive.
func TestReproducible(t *testing.T) {
	built(t)
	again, err := Assemble(bins, epoch)
	if err != nil {
		t.Fatal(err)
	}
	d1, err := index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	d2, err := again.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 {
		t.Fatalf("index digest %s, then %s", d1, d2)
	}
	var sums [2][32]byte
	for i, idx := range []v1.ImageIndex{index, again} {
		dir := t.TempDir()
		if err := WriteLayout(filepath.Join(dir, "oci"), idx, testRef, testVersion); err != nil {
			t.Fatal(err)
		}
		if err := WriteArchive(filepath.Join(dir, "a.tar"), filepath.Join(dir, "oci"), epoch); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, "a.tar"))
		if err != nil {
			t.Fatal(err)
		}
		sums[i] = sha256.Sum256(data)
	}
	if !bytes.Equal(sums[0][:], sums[1][:]) {
		t.Fatalf("archive sha256 %x, then %x", sums[0], sums[1])
	}
	// A different epoch is a different image: the time is really in it.
	other, err := Assemble(bins, epoch.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if d3, _ := other.Digest(); d3 == d1 {
		t.Fatalf("the epoch does not reach the image")
	}
}
