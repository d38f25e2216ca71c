package images

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/nettool"
	"github.com/meshbench/meshbench/loadgen"
)

func TestTag(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"v0.1.0":        "v0.1.0",
		"df4d013-dirty": "df4d013-dirty",
		"dev":           "dev",
		"":              "dev",
		"v0.0.0-20261201101500-df4d013a1b2c+dirty": "v0.0.0-20261201101500-df4d013a1b2c_dirty",
		"v1.2.3 (patched)":                         "v1.2.3--patched-",
		"-dirty":                                   "v-dirty",
		strings.Repeat("a", 200):                   strings.Repeat("a", 128),
	} {
		if got := Tag(in); got != want {
			t.Errorf("Tag(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParsePlatforms(t *testing.T) {
	t.Parallel()
	ps, err := ParsePlatforms([]string{"linux/amd64,linux/arm64", " linux/amd64", "linux/arm/v7"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	if strings.Join(got, " ") != "linux/amd64 linux/arm64 linux/arm/v7" {
		t.Errorf("platforms = %v", got)
	}
	env, _ := goEnv(ps[2])
	if strings.Join(env, " ") != "CGO_ENABLED=0 GOOS=linux GOARCH=arm GOARM=7" {
		t.Errorf("arm/v7 env = %v", env)
	}
	for _, bad := range []string{"windows/amd64", "linux/sparc", "linux/arm", "linux/amd64/v9", ""} {
		if _, err := ParsePlatforms([]string{bad}); err == nil {
			t.Errorf("ParsePlatforms(%q) accepted", bad)
		}
	}
}

func TestStampAndLabels(t *testing.T) {
	t.Parallel()
	st := Stamp{Version: "v0.1.0", Commit: "df4d013", Created: time.Date(2026, 12, 1, 10, 15, 0, 0, time.FixedZone("x", 3600))}
	want := "-X github.com/meshbench/meshbench/internal/version.Version=v0.1.0 -X github.com/meshbench/meshbench/internal/version.Commit=df4d013" +
		" -X github.com/meshbench/meshbench/internal/version.BuildDate=2026-12-01T09:15:00Z"
	if got := st.ldFlags(); got != want {
		t.Errorf("LDFlags\n got %s\nwant %s", got, want)
	}
	if got := (Stamp{Version: "a b"}).ldFlags(); !strings.Contains(got, "Version=a_b ") || !strings.Contains(got, "Commit=unknown ") {
		t.Errorf("LDFlags of odd values = %s", got)
	}
	l := Labels(Agent(), st)
	for k, v := range map[string]string{
		"org.opencontainers.image.title": "meshbench-agent", "org.opencontainers.image.version": "v0.1.0",
		"org.opencontainers.image.revision": "df4d013", "org.opencontainers.image.source": sourceURL,
		"org.opencontainers.image.created": "2026-12-01T09:15:00Z",
	} {
		if l[k] != v {
			t.Errorf("label %s = %q, want %q", k, l[k], v)
		}
	}
	if l["org.opencontainers.image.description"] == "" || len(l) != 6 {
		t.Errorf("labels = %v", l)
	}
}

func TestCreatedTime(t *testing.T) {
	t.Parallel()
	commit := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		epoch, buildDate string
		commit           time.Time
		want             time.Time
		err              bool
	}{
		{"1764547200", "2027-01-01T00:00:00Z", commit, time.Unix(1764547200, 0).UTC(), false},
		{"", "2027-01-01T00:00:00Z", commit, commit, false},
		{"", "2027-01-01T00:00:00Z", time.Time{}, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{"", "unknown", time.Time{}, time.Unix(0, 0).UTC(), false},
		{"yesterday", "", commit, time.Time{}, true},
	}
	for _, tt := range tests {
		got, err := CreatedTime(tt.epoch, tt.commit, tt.buildDate)
		if (err != nil) != tt.err || !got.Equal(tt.want) {
			t.Errorf("CreatedTime(%q, %v, %q) = %v, %v; want %v (error %v)", tt.epoch, tt.commit, tt.buildDate, got, err, tt.want, tt.err)
		}
	}
}

func TestFindSource(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, filepath.Join(root, "good", "go.mod"), "// the project\nmodule github.com/meshbench/meshbench\n\ngo 1.26\n")
	write(t, filepath.Join(root, "other", "go.mod"), "module example.com/other\n")
	deep := filepath.Join(root, "good", "cmd", "x")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := FindSource(deep); err != nil || got != filepath.Join(root, "good") {
		t.Errorf("FindSource(subdir) = %q, %v", got, err)
	}
	if _, err := FindSource(filepath.Join(root, "other")); err == nil || !strings.Contains(err.Error(), `declares module "example.com/other"`) || !strings.Contains(err.Error(), "--source") {
		t.Errorf("wrong module: %v", err)
	}
	// The real checkout: this test runs in <root>/images.
	if got, err := FindSource("."); err != nil || filepath.Base(got) == "images" {
		t.Errorf("FindSource(.) in the repo = %q, %v", got, err)
	}
}

// TestAgentPathMatchesCallers: the agent image puts the binary where loadgen execs it and where PATH finds the name
// internal/nettool runs.
func TestAgentPathMatchesCallers(t *testing.T) {
	t.Parallel()
	if Agent().Path != loadgen.AgentPath || path.Base(Agent().Path) != nettool.AgentBinary || path.Dir(Agent().Path) != "/usr/local/bin" {
		t.Errorf("agent path %s, loadgen.AgentPath %s, internal/nettool AgentBinary %s", Agent().Path, loadgen.AgentPath, nettool.AgentBinary)
	}
}

func TestBaseLayer(t *testing.T) {
	t.Parallel()
	b, err := BaseLayer([]byte("-----BEGIN CERTIFICATE-----\n"))
	if err != nil {
		t.Fatal(err)
	}
	entries := readTar(t, b)
	want := map[string]struct {
		mode     int64
		uid      int
		contains string
	}{
		"etc/passwd": {0o644, 0, "nonroot:x:65532:65532:"}, "etc/group": {0o644, 0, "nonroot:x:65532:"},
		"etc/nsswitch.conf": {0o644, 0, "hosts: files dns"}, "etc/ssl/certs/ca-certificates.crt": {0o644, 0, "BEGIN CERTIFICATE"},
		"tmp/": {0o1777, 0, ""}, "home/nonroot/": {0o700, 65532, ""}, "usr/local/bin/": {0o755, 0, ""},
	}
	for n, w := range want {
		e, ok := entries[n]
		switch {
		case !ok:
			t.Errorf("base layer lacks %s", n)
		case e.hdr.Mode != w.mode || e.hdr.Uid != w.uid || !strings.Contains(e.data, w.contains):
			t.Errorf("%s: mode %o uid %d data %q", n, e.hdr.Mode, e.hdr.Uid, e.data)
		}
	}
	for n, e := range entries {
		if !e.hdr.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s mtime %v, want the epoch", n, e.hdr.ModTime)
		}
	}
	noCerts, _ := BaseLayer(nil)
	if _, ok := readTar(t, noCerts)["etc/ssl/certs/ca-certificates.crt"]; ok {
		t.Error("a base layer without certificates has a CA bundle")
	}
	again, _ := BaseLayer([]byte("-----BEGIN CERTIFICATE-----\n"))
	if !bytes.Equal(b, again) {
		t.Error("BaseLayer is not deterministic")
	}
}

type tarFile struct {
	hdr  *tar.Header
	data string
}

func readTar(t *testing.T, b []byte) map[string]tarFile {
	t.Helper()
	out := map[string]tarFile{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = tarFile{hdr: h, data: string(data)}
	}
}

func write(t testing.TB, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
