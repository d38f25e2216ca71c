package mk

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// demoScripts are the scripts `make demo` runs, directly or sourced (hack/localcluster/demo.sh's steps).
var demoScripts = []string{
	"hack/install-deps.sh",
	"hack/localcluster/demo.sh",
	"hack/localcluster/lib.sh",
	"hack/localcluster/up.sh",
	"hack/localcluster/build.sh",
	"hack/localcluster/postgres-image.sh",
	"hack/localistio/lib.sh",
	"hack/localistio/build.sh",
	"hack/localistio/istio-up.sh",
	"hack/localistio/cni-agent.sh",
}

// Commands that can run for minutes on a newcomer's machine: cold Go builds and module downloads, package installs,
// meshbench's own image build, and waits allowed more than a minute.
var (
	longStep    = regexp.MustCompile(`\bgo (build|install|mod download)\b|\bapt-get (update|install)\b|\bmake\b.*\bbuild\b|\bimages push\b`)
	longTimeout = regexp.MustCompile(`-timeout ([0-9]+)s\b`)
	// The text of a message is not a command.
	message = regexp.MustCompile(`\b(log|die|echo|printf|step) "[^"]*"`)
	// images push's own progress must reach the terminal: stderr into a file or /dev/null hid it (issue 29).
	stderrHidden = regexp.MustCompile(`(^|[^&])2>\s*("|/dev/null|[A-Za-z$])|&>`)
)

// logicalLines reads a script as its logical lines (backslash continuations joined), each with the line number where
// it starts and the comment line right above it.
func logicalLines(t *testing.T, path string) (lines []string, starts []int, above []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	var cur, prevComment string
	n, start := 0, 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if cur == "" {
			start = n
		}
		if strings.HasSuffix(line, `\`) {
			cur += strings.TrimSuffix(line, `\`) + " "
			continue
		}
		cur += line
		lines, starts, above = append(lines, cur), append(starts, start), append(above, prevComment)
		prevComment = ""
		if c := strings.TrimSpace(cur); strings.HasPrefix(c, "#") {
			prevComment = c
		}
		cur = ""
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines, starts, above
}

// TestDemoLongStepsHaveHeartbeat: no step of `make demo` may be silent for more than a minute (issue 29 section 3:
// the first make demo was silent for nine minutes while meshbench's images were built and pushed). Every command
// that can take minutes runs under with_heartbeat (or build.sh's timed, which uses it), or says on the comment line
// above it, starting "# heartbeat:", where its progress comes from; meshbench images push must keep its stderr (its
// progress lines) visible. And `make demo` has no silent prerequisite: it used to build bin/meshbench first, minutes
// without a line on a cold Go cache.
func TestDemoLongStepsHaveHeartbeat(t *testing.T) {
	root := repoRoot(t)
	checked := 0
	for _, script := range demoScripts {
		lines, starts, above := logicalLines(t, filepath.Join(root, script))
		for i, line := range lines {
			code := strings.TrimSpace(line)
			if strings.HasPrefix(code, "#") {
				continue
			}
			code = message.ReplaceAllString(code, `""`)
			if j := strings.Index(code, " # "); j >= 0 {
				code = code[:j]
			}
			long := longStep.MatchString(code)
			if m := longTimeout.FindStringSubmatch(code); m != nil {
				if secs, _ := strconv.Atoi(m[1]); secs > 60 {
					long = true
				}
			}
			if !long {
				continue
			}
			checked++
			where := script + ":" + strconv.Itoa(starts[i])
			wrapped := strings.Contains(code, "with_heartbeat ") || strings.HasPrefix(code, "timed ")
			if !wrapped && !strings.HasPrefix(above[i], "# heartbeat:") {
				t.Errorf("%s: can take minutes and prints nothing meanwhile: run it under with_heartbeat (hack/heartbeat.sh), or say above it (# heartbeat: ...) what prints its progress:\n  %s", where, code)
			}
			if strings.Contains(code, "images push") && stderrHidden.MatchString(code) {
				t.Errorf("%s: meshbench images push prints its progress on stderr; it must reach the terminal:\n  %s", where, code)
			}
		}
	}
	if checked < 10 { // the Kubernetes, etcd, CoreDNS, CNI, tools, meshbench, Istio builds, apt-get, the image push
		t.Errorf("only %d long steps found in %v: the patterns no longer match the scripts", checked, demoScripts)
	}

	mf, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	rule := regexp.MustCompile(`(?m)^demo:([^#\n]*)`).FindSubmatch(mf)
	if rule == nil {
		t.Fatal("no demo rule in the Makefile")
	}
	if prereq := strings.TrimSpace(string(rule[1])); prereq != "" {
		t.Errorf("make demo has prerequisites %q: they run before demo.sh and print nothing while they build (demo.sh builds meshbench under with_heartbeat)", prereq)
	}
}

// TestWithHeartbeat: a line every MB_HEARTBEAT seconds while the command runs, through the script's log when it has
// one; the command's exit status is kept; nothing is printed once it has ended.
func TestWithHeartbeat(t *testing.T) {
	need(t, "bash")
	root := repoRoot(t)
	script := `source hack/heartbeat.sh
with_heartbeat "testing the heartbeat" sleep 3.5; echo "rc=$?"
with_heartbeat "failing" sh -c 'exit 3' || echo "rc=$?"
log() { echo "LOG $*" >&2; }
with_heartbeat "logged" sleep 1.5
echo ENDED
sleep 2.5 # a heartbeat left running would print here
`
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "MB_HEARTBEAT=1")
	out, err := cmd.CombinedOutput() // one pipe for both streams: the order is kept
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := string(out)
	beats := regexp.MustCompile(`(?m)^\[[0-9:]{8}\] \.\.\. still testing the heartbeat \([0-9]+ s so far\)$`).FindAllString(got, -1)
	if len(beats) < 2 || len(beats) > 4 { // 3 at 1, 2 and 3 s; a loaded machine may shift one
		t.Errorf("%d heartbeat lines for a 3.5 s command at 1 s, want about 3:\n%s", len(beats), got)
	}
	for _, want := range []string{"rc=0\n", "rc=3\n", "LOG ... still logged ("} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if _, after, _ := strings.Cut(got, "ENDED\n"); strings.Contains(after, "still") {
		t.Errorf("heartbeat lines after the command ended:\n%s", got)
	}
}
