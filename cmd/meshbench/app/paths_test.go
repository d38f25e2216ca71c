package app

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReportBadFlagsExit2: report checks its output directory and Pushgateway URL, and refuses an invocation that
// would do nothing, before it reads, renders, writes or pushes anything: exit 2 naming the flag, no report files.
func TestReportBadFlagsExit2(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	writeFile(t, file, "")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"output dir under a file", []string{"--output-dir", filepath.Join(file, "report")}, []string{"--output-dir: output directory", "not a directory; choose another --output-dir"}},
		{"push not a URL", []string{"--push", "not a url"}, []string{"--push: the Pushgateway URL must be an http:// or https:// URL"}},
		{"push port out of range", []string{"--push", "http://pg:99999"}, []string{"--push: the Pushgateway URL has port 99999"}},
		{"push scheme", []string{"--push", "ftp://pg"}, []string{`(got "ftp://pg")`}},
		{"no files and nothing else", []string{"--no-files"}, []string{"--no-files without --push or --show: nothing would be written, pushed or shown"}},
		{"output dir with no files", []string{"--no-files", "--push", "http://pg:9091", "--output-dir", dir}, []string{"with --no-files: no file is written"}},
		{"every problem at once", []string{"--push", "ftp://pg", "--push-job", "", "--output-dir", file}, []string{"--push:", "--push-job is empty", "--output-dir:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"report", fixtureRun("sample")}, tc.args...)
			if !slices.Contains(args, "--output-dir") && !slices.Contains(args, "--no-files") {
				args = append(args, "--output-dir", t.TempDir()) // never into the fixture run, whatever happens
			}
			code, stdout, stderr := run(t, args...)
			if code != exitBadInput {
				t.Errorf("exit %d, want %d\n%s", code, exitBadInput, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if stdout != "" || strings.Contains(stderr, "warning:") {
				t.Errorf("the run was rendered before the flags were checked:\nstdout %q\nstderr %s", stdout, stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(fixtureRun("sample"), "report")); err == nil {
		t.Errorf("report files written into the fixture run")
	}
}

// TestImagesSaveBadPathExit2: images save checks -o before building (minutes with a cold cache): a directory that
// does not exist, a file where a directory should be, an existing directory as the archive; exit 2 naming -o, with
// the other bad flags at once.
func TestImagesSaveBadPathExit2(t *testing.T) {
	t.Parallel()
	src := fakeSource(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	writeFile(t, file, "")
	for _, tc := range []struct {
		name, out string
		want      string
	}{
		{"missing directory", filepath.Join(dir, "nowhere", "images.tar"), "does not exist"},
		{"under a file", filepath.Join(file, "images.tar"), "is not a directory"},
		{"a directory", dir, "is a directory: give the archive's file name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := run(t, "images", "save", "--source", src, "--platform", "linux/amd64", "-o", tc.out, "-q")
			if code != exitBadInput || !strings.Contains(stderr, "-o/--output: ") || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want 2 and -o/--output ... %q:\n%s", code, tc.want, stderr)
			}
		})
	}
	code, _, stderr := run(t, "images", "save", "--source", src, "--platform", "windows/amd64", "-o", filepath.Join(file, "x.tar"), "-q")
	if code != exitBadInput || !strings.Contains(stderr, "--platform") || !strings.Contains(stderr, "-o/--output") {
		t.Errorf("bad platform and -o: exit %d, want both named:\n%s", code, stderr)
	}
}

// TestPreflightBadPrometheusURL: preflight checks --prometheus-url as run does (the same override) before it
// connects: exit 2 naming the flag.
func TestPreflightBadPrometheusURL(t *testing.T) {
	t.Parallel()
	kc := unreachableKubeconfig(t, t.TempDir())
	for url, want := range map[string]string{
		"not a url":              `--prometheus-url "not a url": must be an http:// or https:// URL`,
		"http://127.0.0.1:99999": "has port 99999",
		"ftp://prom":             `--prometheus-url "ftp://prom"`,
	} {
		code, _, stderr := run(t, "preflight", "-f", "../../../examples/quickstart.yaml", "--prometheus-url", url, "--kubeconfig", kc)
		if code != exitBadInput || !strings.Contains(stderr, want) || !strings.Contains(stderr, "(it overrides spec.prometheus.url)") {
			t.Errorf("%q: exit %d, want 2 and %q:\n%s", url, code, want, stderr)
		}
		if strings.Contains(stderr, "127.0.0.1:1") {
			t.Errorf("%q: preflight connected before checking the flag:\n%s", url, stderr)
		}
	}
}
