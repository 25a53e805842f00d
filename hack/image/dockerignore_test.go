package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ignoreRule is one .dockerignore line.
type ignoreRule struct {
	re      *regexp.Regexp
	include bool // a "!" line
}

// parseDockerignore reads the rules with Docker's meaning: paths are relative
// to the context root, * and ? do not cross a slash, ** matches any number of
// directories, a later rule overrides an earlier one, and a rule that matches
// a directory covers everything in it.
func parseDockerignore(t *testing.T, file string) []ignoreRule {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v: the build context would include .git and bin/", err)
	}
	var rules []ignoreRule
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := ignoreRule{}
		if rest, ok := strings.CutPrefix(line, "!"); ok {
			r.include, line = true, rest
		}
		line = strings.TrimPrefix(path.Clean("/"+line), "/")
		var re strings.Builder
		re.WriteString("^")
		for i := 0; i < len(line); i++ {
			switch c := line[i]; {
			case strings.HasPrefix(line[i:], "**/"):
				re.WriteString("(.*/)?")
				i += 2
			case strings.HasPrefix(line[i:], "**"):
				re.WriteString(".*")
				i++
			case c == '*':
				re.WriteString("[^/]*")
			case c == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		re.WriteString("$")
		r.re = regexp.MustCompile(re.String())
		rules = append(rules, r)
	}
	return rules
}

// ignored reports whether the context leaves out rel (slash-separated).
func ignored(rules []ignoreRule, rel string) bool {
	out := false
	for _, r := range rules {
		for p := rel; p != "." && p != "/"; p = path.Dir(p) {
			if r.re.MatchString(p) {
				out = !r.include
				break
			}
		}
	}
	return out
}

// TestDockerignore: the build context leaves out the repository's history,
// build output and what the image does not need, and keeps every file the
// Dockerfile's go build reads: go.mod, go.sum, and the Go and embedded files
// of every package of this module the command imports, for both platforms.
func TestDockerignore(t *testing.T) {
	rules := parseDockerignore(t, "../../.dockerignore")
	for _, p := range []string{".git", ".git/config", "bin", "bin/stevedore", "bin/image/stevedore-oci.tar", "docs/operations.md", "cmd/stevedore/main_test.go", "api/validation/testdata/x.yaml"} {
		if !ignored(rules, p) {
			t.Errorf(".dockerignore: %s is in the build context; leave it out", p)
		}
	}
	need := map[string]bool{"go.mod": true, "go.sum": true}
	for _, pl := range Platforms {
		cmd := exec.Command(goTool(), "list", "-deps", "-json", Package)
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+pl.OS, "GOARCH="+pl.Arch, "GOFLAGS=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(strings.NewReader(string(out)))
		for {
			var pkg struct {
				Dir                 string
				GoFiles, EmbedFiles []string
				Module              *struct{ Main bool }
			}
			if err := dec.Decode(&pkg); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			if pkg.Module == nil || !pkg.Module.Main {
				continue
			}
			rel, err := filepath.Rel(root, pkg.Dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range append(pkg.GoFiles, pkg.EmbedFiles...) {
				need[filepath.ToSlash(filepath.Join(rel, f))] = true
			}
		}
	}
	if len(need) < 50 {
		t.Fatalf("go list found only %d files the build needs; is the module root ../..?", len(need))
	}
	for f := range need {
		if ignored(rules, f) {
			t.Errorf(".dockerignore leaves out %s, which the go build in the Dockerfile needs", f)
		}
	}
}
