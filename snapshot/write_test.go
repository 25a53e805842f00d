package snapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	base := t.TempDir()
	full := filepath.Join(base, "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "old.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(base, "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	files := []File{{Name: "a.yaml", Data: []byte("a: 1\n")}, {Name: "b.yaml", Data: []byte("b: 2\n")}}
	tests := []struct {
		name    string
		dir     string
		files   []File
		wantErr string
	}{
		{name: "a new directory", dir: filepath.Join(base, "new", "snap"), files: files},
		{name: "an empty directory", dir: empty, files: files},
		{name: "a directory with files", dir: full, files: files, wantErr: "not empty"},
		{name: "a file", dir: file, files: files, wantErr: "is a file"},
		{name: "a path as a name", dir: filepath.Join(base, "bad"), files: []File{{Name: "../escape.yaml"}}, wantErr: "not a plain name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Write(tc.dir, tc.files)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range tc.files {
				data, err := os.ReadFile(filepath.Join(tc.dir, f.Name))
				if err != nil || string(data) != string(f.Data) {
					t.Errorf("%s: %q, %v", f.Name, data, err)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(base, "escape.yaml")); err == nil {
		t.Error("a file was written outside the directory")
	}
}
