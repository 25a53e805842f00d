//go:build unix

package validation

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pathsWithin runs Paths, failing the test instead of hanging when reading
// blocks.
func pathsWithin(t *testing.T, v *Validator, paths []string) ([]Problem, error) {
	t.Helper()
	type result struct {
		problems []Problem
		err      error
	}
	done := make(chan result, 1)
	go func() {
		p, err := v.Paths(paths, nil)
		done <- result{p, err}
	}()
	select {
	case r := <-done:
		return r.problems, r.err
	case <-time.After(20 * time.Second):
		t.Fatalf("reading %v blocks", paths)
		return nil, nil
	}
}

// TestNamedPipes checks that reading a directory skips what is not a regular
// file, with a warning, and that such a file named on its own is refused:
// reading a named pipe would wait for a writer forever.
func TestNamedPipes(t *testing.T) {
	v := testValidator(t)
	dir := writeFiles(t, map[string]string{"a.yaml": configMap})
	pipe := filepath.Join(dir, "b.yaml")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	// A link to a regular file is still read.
	if err := os.Symlink(filepath.Join(dir, "a.yaml"), filepath.Join(dir, "c.yaml")); err != nil {
		t.Fatal(err)
	}
	problems, err := pathsWithin(t, v, []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 2 {
		t.Errorf("want the warning about the pipe and the link's duplicate ConfigMap, got:%s", dump(problems))
	}
	if p, ok := find(problems, "", SeverityWarning, "skipped: a named pipe, not a regular file"); !ok || p.Source != pipe {
		t.Errorf("no warning about %s:%s", pipe, dump(problems))
	}
	if p, ok := find(problems, "metadata.name", SeverityError, "defined twice"); !ok || p.Source != filepath.Join(dir, "c.yaml#1") {
		t.Errorf("the link was not read:%s", dump(problems))
	}

	_, err = pathsWithin(t, v, []string{pipe})
	if err == nil || !strings.Contains(err.Error(), "is a named pipe, not a regular file or a directory") {
		t.Errorf("reading the pipe by name: err = %v", err)
	}

	// A directory with nothing else holds no objects.
	only := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(only, "a.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	problems, err = pathsWithin(t, v, []string{only})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := find(problems, "", SeverityError, "it has no .yaml, .yml or .json files that are regular files"); !ok || len(problems) != 2 {
		t.Errorf("a directory with only a pipe:%s", dump(problems))
	}
}

// A symbolic link that leads nowhere (its target missing, or a loop) is
// skipped with a warning, and the rest of the directory is read.
func TestBrokenSymlinksAreSkipped(t *testing.T) {
	v := testValidator(t)
	dir := writeFiles(t, map[string]string{"a.yaml": configMap})
	dangling := filepath.Join(dir, "b.yaml")
	loop := filepath.Join(dir, "c.yaml")
	if err := os.Symlink(filepath.Join(dir, "missing.yaml"), dangling); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	problems, err := pathsWithin(t, v, []string{dir})
	if err != nil {
		t.Fatalf("the directory was not read: %v", err)
	}
	for path, why := range map[string]string{dangling: "its target does not exist", loop: "it loops"} {
		_, ok := find(problems, "", SeverityWarning, "skipped: a symbolic link that leads to no file")
		found := false
		for _, q := range problems {
			if q.Source == path && strings.Contains(q.Message, why) {
				found = true
			}
		}
		if !ok || !found {
			t.Errorf("no warning about %s (%s):%s", path, why, dump(problems))
		}
	}
	if len(errorsOf(problems)) != 0 {
		t.Errorf("errors:%s", dump(problems))
	}
}
