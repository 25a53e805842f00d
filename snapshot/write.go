package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// CheckDir says whether dir may receive a snapshot: it must not exist, or
// be an empty directory.
func CheckDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		if info, statErr := os.Stat(dir); statErr == nil && !info.IsDir() {
			return fmt.Errorf("%s is a file: name a new directory for the snapshot", dir)
		}
		return err
	case len(entries) > 0:
		return fmt.Errorf("%s exists and is not empty: name a new or empty directory, so that no file of an older snapshot is mixed in", dir)
	}
	return nil
}

// Write creates dir (it must not exist, or be empty, as CheckDir says) and
// writes the files into it.
func Write(dir string, files []File) error {
	if err := CheckDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if f.Name != filepath.Base(f.Name) {
			return fmt.Errorf("file name %q is not a plain name", f.Name)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
