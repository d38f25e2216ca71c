package images

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// lines is a progress writer the test reads while Build or Push writes it.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitLine waits (real time, bounded) until the output holds want: the heartbeat goroutine prints after the fake
// clock's tick, not during Step.
func waitLine(t *testing.T, out *lines, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no line %q in the progress output:\n%s", want, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitTicker waits until the step under test has started its heartbeat ticker on the fake clock.
func waitTicker(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the step never started its heartbeat")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// blockingGo is a go command that waits for the file release before it runs the real go: a compile that takes as
// long as the test wants, like a cold one.
func blockingGo(t *testing.T) (goCmd, release string) {
	t.Helper()
	real, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go is not on PATH: %v", err)
	}
	dir := t.TempDir()
	release = filepath.Join(dir, "release")
	goCmd = filepath.Join(dir, "go")
	script := "#!/bin/sh\nwhile [ ! -e '" + release + "' ]; do sleep 0.05; done\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(goCmd, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return goCmd, release
}

// TestBuildHeartbeat: while a binary compiles, Build says so every Heartbeat with the time so far (the cold image
// build of make demo was silent for minutes, issue 29 section 3), names each binary before and after it compiles, and
// stops the heartbeat once the compile ends.
func TestBuildHeartbeat(t *testing.T) {
	src := fakeSource(t)
	t.Cleanup(func() { _ = os.RemoveAll(src) })
	goCmd, release := blockingGo(t)
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	out := &lines{}
	o := fakeOptions(src, "registry.example/mb")
	o.Images, o.Platforms = []Image{Agent()}, o.Platforms[:1]
	o.Go, o.Progress, o.Clock = goCmd, out, clk
	done := make(chan error, 1)
	go func() {
		_, err := Build(context.Background(), o)
		done <- err
	}()
	waitTicker(t, clk)
	waitLine(t, out, "compiling ./cmd/meshbench-agent for linux/amd64 (binary 1 of 1)\n")
	clk.Step(defaultHeartbeat)
	waitLine(t, out, "still compiling ./cmd/meshbench-agent for linux/amd64 (1m0s so far)\n")
	clk.Step(defaultHeartbeat + 30*time.Second)
	waitLine(t, out, "still compiling ./cmd/meshbench-agent for linux/amd64 (2m30s so far)\n")
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "compiled ./cmd/meshbench-agent for linux/amd64 (") || !strings.HasSuffix(got, ", 2m30s)\n") {
		t.Errorf("no compiled line with the time taken:\n%s", got)
	}
	clk.Step(10 * defaultHeartbeat) // Build has returned: its heartbeat goroutine is gone and prints nothing more
	if again := out.String(); again != got || strings.Count(got, "still ") != 2 {
		t.Errorf("heartbeat lines after the compile ended, or not two while it ran:\n%s", again)
	}
}

// blockingTransport holds the upload of the index manifest (the push's last request, after every blob) until
// release is closed.
type blockingTransport struct {
	tag     string
	once    sync.Once
	started chan struct{}
	release chan struct{}
}

func (b *blockingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/manifests/"+b.tag) {
		b.once.Do(func() {
			close(b.started)
			<-b.release
		})
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestPushHeartbeat: a push that takes long (a remote registry, a slow link) says every Heartbeat which image it pushes, for how long and how many of
// its bytes the registry has, and ends with the pushed reference and digest.
func TestPushHeartbeat(t *testing.T) {
	_, built := fakeBuilt(t)
	srv := memRegistry(t)
	pushed := rebase(built[:1], host(srv)+"/meshbench")
	tr := &blockingTransport{tag: Tag(testStamp.Version), started: make(chan struct{}), release: make(chan struct{})}
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	out := &lines{}
	done := make(chan error, 1)
	go func() {
		_, err := Push(context.Background(), pushed, PushOptions{Keychain: anonymous, Transport: tr, Progress: out, Clock: clk})
		done <- err
	}()
	<-tr.started
	waitTicker(t, clk)
	clk.Step(defaultHeartbeat)
	ref := pushed[0].Ref
	waitLine(t, out, "still pushing "+ref+" (1m0s so far, ")
	if !strings.Contains(out.String(), "pushing "+ref+" (2 platforms, "+HumanBytes(pushed[0].Size)+")\n") ||
		!strings.Contains(out.String(), " in the registry)\n") {
		t.Errorf("no start line or no byte count:\n%s", out.String())
	}
	close(tr.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if want := "pushed " + ref + "@" + pushed[0].Digest + " in 1m0s\n"; !strings.HasSuffix(out.String(), want) {
		t.Errorf("last line is not %q:\n%s", want, out.String())
	}
}
