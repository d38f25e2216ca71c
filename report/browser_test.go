package report

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromium finds a headless-capable Chromium. Without one the test skips, except in CI (CI=true), where a missing
// browser is a broken environment and fails.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found on PATH and CI=true: install it (apt-get install -y chromium)")
	}
	t.Skip("chromium not found on PATH: install it (apt-get install -y chromium) to render report.html headlessly")
	return ""
}

func chromiumArgs(userData string, extra ...string) []string {
	return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir=" + userData}, extra...)
}

// TestHTMLInChromium renders report.html of the sample run in headless Chromium: the DOM it builds must hold every
// table and chart, and the screenshot (testdata/output/report.png, for people to look at) must be a real picture.
func TestHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	rep := Build(readRun(t, "sample"))
	dir := t.TempDir()
	if _, err := Write(dir, rep.Files()); err != nil {
		t.Fatal(err)
	}
	page := "file://" + filepath.Join(dir, htmlFile)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, chromiumArgs(t.TempDir(), "--dump-dom", page)...)
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	d := string(dom)
	for _, id := range []string{`id="facts-table"`, `id="study-a-single"`, `id="study-a-multi8"`, `id="mode-deltas-cpu"`, `id="mode-deltas-memory"`, `id="per-krps-table"`,
		`id="latency-single-1000"`, `id="latency-added-single-1000"`, `id="study-b"`, `id="failed-cases"`} {
		if !strings.Contains(d, id) {
			t.Errorf("rendered DOM lacks table %s", id)
		}
	}
	if n := strings.Count(d, "<svg "); n != 14 {
		t.Errorf("rendered DOM has %d SVG charts, want 14", n)
	}
	if n := strings.Count(d, `class="bar"`); n < 100 {
		t.Errorf("rendered DOM has %d bars, want the charts' bars (>= 100)", n)
	}

	out, err := filepath.Abs(filepath.Join("testdata", "output"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(out, "report.png")
	_ = os.Remove(shot)
	stderr.Reset()
	cmd = exec.CommandContext(ctx, bin, chromiumArgs(t.TempDir(), "--screenshot="+shot, "--window-size=1280,2000", "--hide-scrollbars", page)...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, stderr.String())
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 2000 {
		t.Errorf("screenshot is %v, want 1280x2000", b)
	}
	// A blank or failed page is one colour; a report has text, tables, a banner-free header and charts.
	colours := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[(r>>11)<<10|(g>>11)<<5|bl>>11] = true
		}
	}
	if len(colours) < 20 {
		t.Errorf("screenshot has %d distinct colours: the page looks blank", len(colours))
	}
	t.Logf("screenshot: %s", shot)
}
