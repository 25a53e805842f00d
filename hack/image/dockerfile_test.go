package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	Line int
	Cmd  string // upper case: FROM, RUN, COPY...
	Args string
}

type stage struct {
	Name, Image, Platform string
	Instructions          []instruction
}

// parseDockerfile splits a Dockerfile into stages. It understands what this
// repository's Dockerfile uses: comments, backslash continuations, FROM with
// --platform and AS.
func parseDockerfile(t *testing.T, file string) []stage {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var stages []stage
	var cur strings.Builder
	start := 0
	flush := func() {
		text := strings.TrimSpace(cur.String())
		cur.Reset()
		if text == "" {
			return
		}
		cmd, args, _ := strings.Cut(text, " ")
		in := instruction{Line: start, Cmd: strings.ToUpper(cmd), Args: strings.TrimSpace(args)}
		if in.Cmd == "FROM" {
			st := stage{}
			for _, f := range strings.Fields(in.Args) {
				switch {
				case strings.HasPrefix(f, "--platform="):
					st.Platform = strings.TrimPrefix(f, "--platform=")
				case strings.EqualFold(f, "AS"):
				case st.Image == "":
					st.Image = f
				default:
					st.Name = f
				}
			}
			stages = append(stages, st)
		}
		if len(stages) == 0 {
			if in.Cmd != "ARG" {
				t.Fatalf("%s:%d: %s before the first FROM", file, in.Line, in.Cmd)
			}
			return
		}
		s := &stages[len(stages)-1]
		s.Instructions = append(s.Instructions, in)
	}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if body, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	flush()
	return stages
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.Instructions {
		if in.Cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

var pinned = regexp.MustCompile(`^[a-z0-9.\-/:]+(:[\w.\-]+)?@sha256:[0-9a-f]{64}$`)

// TestDockerfileBasesPinned: every stage starts from scratch, an earlier
// stage, or an image pinned by digest, so a rebuild of the same commit pulls
// the same bytes whatever a tag points at today.
func TestDockerfileBasesPinned(t *testing.T) {
	stages := parseDockerfile(t, "../../Dockerfile")
	if len(stages) < 2 {
		t.Fatalf("Dockerfile: %d stages, want a build stage and a final stage", len(stages))
	}
	names := map[string]bool{}
	for _, s := range stages {
		switch {
		case s.Image == "scratch", names[s.Image]:
		case !pinned.MatchString(s.Image):
			t.Errorf("Dockerfile: FROM %s is not pinned: write it as name:tag@sha256:<64 hex digits>", s.Image)
		}
		if s.Name != "" {
			names[s.Name] = true
		}
	}
}

// TestDockerfileMatchesBuilder holds the Dockerfile and the engine-free
// builder to the same image: the build stage cross-compiles on the build
// machine's platform with the builder's go build arguments and a Go of the
// go.mod's release, and the final stage is scratch with the binary at the
// same path, the same user and the same entrypoint.
func TestDockerfileMatchesBuilder(t *testing.T) {
	stages := parseDockerfile(t, "../../Dockerfile")
	build, final := stages[0], stages[len(stages)-1]

	if build.Platform != "$BUILDPLATFORM" {
		t.Errorf("Dockerfile: the build stage's FROM has --platform=%q, want $BUILDPLATFORM: Go cross-compiles, so there is no need to emulate the target", build.Platform)
	}
	goImage := regexp.MustCompile(`^(?:docker\.io/)?(?:library/)?golang:(1\.\d+)\.(\d+)@`).FindStringSubmatch(build.Image)
	if goImage == nil {
		t.Errorf("Dockerfile: the build stage is FROM %s, want golang:<go version>@sha256:...", build.Image)
	} else {
		out, err := exec.Command(goTool(), "mod", "edit", "-json", "../../go.mod").Output()
		if err != nil {
			t.Fatal(err)
		}
		var mod struct{ Go string }
		if err := json.Unmarshal(out, &mod); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(mod.Go+".", goImage[1]+".") {
			t.Errorf("Dockerfile: the build stage has Go %s.%s, go.mod says go %s: use the golang image of go.mod's release", goImage[1], goImage[2], mod.Go)
		}
	}

	var run string
	for _, in := range build.all("RUN") {
		if strings.Contains(in.Args, "go build") {
			run = in.Args
		}
	}
	if run == "" {
		t.Fatal("Dockerfile: the build stage has no RUN ... go build")
	}
	for _, want := range []string{"CGO_ENABLED=0", "GOOS=$TARGETOS", "GOARCH=$TARGETARCH"} {
		if !strings.Contains(run, want) {
			t.Errorf("Dockerfile: the go build does not set %s", want)
		}
	}
	args := GoBuildArgs("${VERSION}", "${COMMIT}", "OUT")
	for i := 0; i < len(args); i++ {
		want := args[i]
		switch {
		case want == "-ldflags":
			i++
			want = `-ldflags "` + args[i] + `"`
		case want == "-o":
			i++
			continue // the output path is the Dockerfile's business
		}
		if !strings.Contains(run, want) {
			t.Errorf("Dockerfile: the go build lacks %s, which the engine-free builder passes (GoBuildArgs)", want)
		}
	}
	outPath := regexp.MustCompile(`-o\s+(\S+)`).FindStringSubmatch(run)
	if outPath == nil {
		t.Fatal("Dockerfile: the go build has no -o")
	}

	if final.Image != "scratch" {
		t.Errorf("Dockerfile: the final stage is FROM %s, want scratch: there is no runtime base to pull or patch", final.Image)
	}
	copies := final.all("COPY")
	if len(copies) != 1 {
		t.Fatalf("Dockerfile: the final stage has %d COPY, want 1 (the binary)", len(copies))
	}
	f := strings.Fields(copies[0].Args)
	if len(f) != 3 || f[0] != "--from="+build.Name || path.Clean(f[1]) != path.Clean(outPath[1]) || f[2] != BinaryPath {
		t.Errorf("Dockerfile: COPY %s, want COPY --from=%s %s %s", copies[0].Args, build.Name, outPath[1], BinaryPath)
	}
	if users := final.all("USER"); len(users) != 1 || users[0].Args != User {
		t.Errorf("Dockerfile: the final stage's USER is %v, want %s", users, User)
	}
	eps := final.all("ENTRYPOINT")
	var ep []string
	if len(eps) != 1 || json.Unmarshal([]byte(eps[0].Args), &ep) != nil || !equal(ep, Entrypoint) {
		t.Errorf("Dockerfile: the final stage's ENTRYPOINT is %v, want the JSON form %q", eps, Entrypoint)
	}
	for _, cmd := range []string{"RUN", "CMD", "ENV", "WORKDIR"} {
		if got := final.all(cmd); len(got) > 0 {
			t.Errorf("Dockerfile: the final stage has %s at line %d; the engine-free builder writes none", cmd, got[0].Line)
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
