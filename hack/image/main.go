package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

func main() {
	root := flag.String("root", "../..", "the stevedore module's root directory")
	version := flag.String("version", "devel", "the version stamped into the binary (internal/version.Version)")
	commit := flag.String("commit", "", "the VCS revision stamped into the binary (internal/version.Commit)")
	repo := flag.String("image", "ghcr.io/stevedore-autoscaler/stevedore", "the image repository the layout names")
	tag := flag.String("tag", "", "the tag the layout names (default: the version)")
	out := flag.String("out", "../../bin/image", "output directory: the layout goes to OUT/oci, the archive to OUT/stevedore-oci.tar")
	flag.Parse()
	if *tag == "" {
		*tag = *version
	}
	if err := run(context.Background(), *root, *version, *commit, *repo+":"+*tag, *tag, *out); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, root, version, commit, ref, tag, out string) error {
	epoch, err := sourceDateEpoch()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "stevedore-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	var bins []Binary
	for _, p := range Platforms {
		b := Binary{Platform: p, Path: filepath.Join(work, p.OS+"-"+p.Arch, "stevedore")}
		if err := Compile(ctx, root, version, commit, p, b.Path); err != nil {
			return err
		}
		bins = append(bins, b)
	}
	idx, err := Assemble(bins, epoch)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, "oci")
	if err := WriteLayout(dir, idx, ref, tag); err != nil {
		return err
	}
	archive := filepath.Join(out, "stevedore-oci.tar")
	if err := WriteArchive(archive, dir, epoch); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s\nlayout  %s\narchive %s\n", ref, digest, dir, archive)
	return nil
}

// sourceDateEpoch is the time written into the image: SOURCE_DATE_EPOCH
// (seconds since 1970, the reproducible-builds convention buildkit also
// follows) when set, else the epoch itself.
func sourceDateEpoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want whole seconds since 1970, for example $(git log -1 --format=%%ct)", s)
	}
	return time.Unix(n, 0).UTC(), nil
}
