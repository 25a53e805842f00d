// Package api_test checks that the API packages stay the bottom layer.
package api_test

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsStayInAPI: the packages under api/ describe objects and the
// rules the API server applies to them; everything else in stevedore (the
// scheduler, the controllers, the simulator, the planner, the cloud
// providers) is built on them. An import from api/ of any other stevedore
// package would run back up the layers, so every Go file under api/, tests
// included, may import stevedore packages under api/ only.
func TestImportsStayInAPI(t *testing.T) {
	module := modulePath(t, filepath.Join("..", "go.mod"))
	files, own := 0, 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if p != module && !strings.HasPrefix(p, module+"/") {
				continue
			}
			own++
			if !strings.HasPrefix(p, module+"/api/") {
				t.Errorf("api/%s imports %s, a package above the API layer", filepath.ToSlash(path), p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk found the API packages and their imports of one another, so
	// an empty result above is no accident of where the test ran.
	if files < 20 || own == 0 {
		t.Fatalf("read %d files with %d imports of %s; the walk did not reach the API packages", files, own, module)
	}
}

// modulePath returns the module path declared in the go.mod file.
func modulePath(t *testing.T, goMod string) string {
	t.Helper()
	f, err := os.Open(goMod)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("%s declares no module", goMod)
	return ""
}
