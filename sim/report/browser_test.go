//go:build browser

// The browser test opens the HTML report in headless Chromium (Debian's
// chromium package; `make browser` installs it): the DOM the browser builds
// must hold the charts the page means, and a screenshot must show them.
// CHROMIUM names the browser's binary when it is not chromium on PATH.

package report

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/net/html"
)

func chromium(t *testing.T) string {
	t.Helper()
	candidates := []string{"chromium", "chromium-browser", "google-chrome"}
	if c := os.Getenv("CHROMIUM"); c != "" {
		candidates = []string{c}
	}
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	t.Fatalf("no Chromium found (tried %v): install Debian's chromium package (make browser does) or set CHROMIUM", candidates)
	return ""
}

// headless runs the browser on the page with extra arguments and returns
// what it prints on stdout.
func headless(t *testing.T, bin, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+page)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	started := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, stderr.String())
	}
	t.Logf("%s %v: %s", filepath.Base(bin), args, time.Since(started).Round(time.Millisecond))
	return stdout.Bytes()
}

func writePage(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, renderHTML(t, htmlDocument()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBrowserDOM checks the charts in the DOM Chromium builds from the page.
func TestBrowserDOM(t *testing.T) {
	dom := headless(t, chromium(t), writePage(t), "--dump-dom")
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	svgs := findAll(doc, isElement("svg"))
	if len(svgs) != 5 {
		t.Fatalf("%d svg elements in the DOM, want 5 charts", len(svgs))
	}
	checkCharts(t, doc)
}

// TestBrowserScreenshot checks that the charts are painted: the areas'
// colours (drawn at 88% opacity on white) cover a good part of the
// screenshot.
func TestBrowserScreenshot(t *testing.T) {
	dir := t.TempDir()
	shot := filepath.Join(dir, "report.png")
	headless(t, chromium(t), writePage(t), "--screenshot="+shot, "--window-size=1400,2400")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	for name, colour := range map[string][3]int{
		"batch and on-demand (#4e79a7)": {0x4e, 0x79, 0xa7},
		"spot (#f28e2b)":                {0xf2, 0x8e, 0x2b},
		"cost (#b07aa1)":                {0xb0, 0x7a, 0xa1},
	} {
		n := countPixels(img, blend(colour, 0.88))
		t.Logf("%s: %d pixels", name, n)
		if n < 20000 {
			t.Errorf("%s: %d pixels painted, want a chart's worth", name, n)
		}
	}
}

// blend is colour c at opacity a over white.
func blend(c [3]int, a float64) [3]int {
	var out [3]int
	for i, v := range c {
		out[i] = int(255 - a*float64(255-v) + 0.5)
	}
	return out
}

// countPixels counts the pixels within a few levels of c.
func countPixels(img image.Image, c [3]int) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			px := [3]int{int(r >> 8), int(g >> 8), int(bl >> 8)}
			close := true
			for i := range px {
				if d := px[i] - c[i]; d < -3 || d > 3 {
					close = false
				}
			}
			if close {
				n++
			}
		}
	}
	return n
}
