package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/cgroupstat"
)

// TestCgroupsWrapperOnThisMachine runs the wrapper around a busy loop in this machine's own cgroup (v1 on the
// local cluster's nodes, v2 on most others) and reads the window back with `cgroups dump --summary`.
func TestCgroupsWrapperOnThisMachine(t *testing.T) {
	if _, err := cgroupstat.Open(os.DirFS("/sys/fs/cgroup")); err != nil {
		t.Skipf("no readable cgroup here: %v", err)
	}
	dir := t.TempDir()
	start := time.Now().UTC()
	// date +%s has whole seconds: "+ 3" busies 2 to 3 s, so the window always holds at least 2 s of 200 ms samples.
	busy := `end=$(( $(date +%s) + 3 )); while [ "$(date +%s)" -lt "$end" ]; do :; done`
	o := wrapOpts{name: "busy", dir: dir, root: "/sys/fs/cgroup", interval: 200 * time.Millisecond, argv: []string{"sh", "-c", busy}}
	var stderr bytes.Buffer
	code, err := wrap(context.Background(), o, nil, &stderr)
	if err != nil || code != 0 {
		t.Fatalf("wrap: code %d, err %v, stderr %q", code, err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Fatalf("the sampler warned: %s", stderr.String())
	}
	var out bytes.Buffer
	if err := runCgroupsDump([]string{"--dir", dir, "--since", start.Format(time.RFC3339Nano), "--summary"}, &out); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Containers map[string]cgroupstat.Summary `json:"containers"`
		Errors     map[string]string             `json:"errors"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	s, ok := got.Containers["busy"]
	if !ok {
		t.Fatalf("no summary of container busy: %s", out.String())
	}
	// at least 2 s at 200 ms: at least 8 samples; a busy loop keeps at least a good part of one core busy.
	if s.Samples < 8 || s.CPUMillicores.Avg < 200 || s.MemoryMiB.Avg <= 0 || !s.CPUMillicores.HasMinMax {
		t.Fatalf("summary %+v: want >= 8 samples, CPU avg >= 200 m, memory > 0", s)
	}
	// The raw dump holds the same samples, in the window only.
	out.Reset()
	if err := runCgroupsDump([]string{"--dir", dir, "--since", start.Format(time.RFC3339Nano)}, &out); err != nil {
		t.Fatal(err)
	}
	var d cgroupstat.Dump
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Containers["busy"]) != s.Samples {
		t.Fatalf("dump has %d samples, the summary %d", len(d.Containers["busy"]), s.Samples)
	}
}

func TestCgroupsWrapperExitCodeAndSignals(t *testing.T) {
	dir := t.TempDir()
	run := func(argv []string, sigs <-chan os.Signal) int {
		t.Helper()
		o := wrapOpts{name: "c", dir: dir, root: t.TempDir(), interval: 50 * time.Millisecond, argv: argv}
		code, err := wrap(context.Background(), o, sigs, io.Discard) // an empty root: no cgroup, the command still runs
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
	if code := run([]string{"sh", "-c", "exit 3"}, nil); code != 3 {
		t.Fatalf("exit code %d, want 3", code)
	}
	sigs := make(chan os.Signal, 1)
	ready := filepath.Join(dir, "trapped")
	go func() {
		for {
			if _, err := os.Stat(ready); err == nil {
				sigs <- syscall.SIGTERM
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	if code := run([]string{"sh", "-c", `trap 'exit 7' TERM; touch ` + ready + `; while :; do sleep 0.05; done`}, sigs); code != 7 {
		t.Fatalf("exit code %d after a forwarded SIGTERM, want the trap's 7", code)
	}
	if code := run([]string{"sh", "-c", "kill -KILL $$"}, nil); code != 128+9 {
		t.Fatalf("exit code %d for a killed command, want 137", code)
	}
	if _, err := wrap(context.Background(), wrapOpts{name: "c", dir: dir, interval: time.Second, argv: []string{"/nonexistent"}}, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "start") {
		t.Fatalf("err %v for a missing command", err)
	}
}

func TestParseWrap(t *testing.T) {
	o, err := parseWrap([]string{"--name", "net", "--dir", "/d", "--", "sleep", "5"})
	if err != nil || o.name != "net" || o.interval != time.Second || strings.Join(o.argv, " ") != "sleep 5" {
		t.Fatalf("parseWrap = %+v, %v", o, err)
	}
	for _, args := range [][]string{{"--dir", "/d", "--", "x"}, {"--name", "a/b", "--dir", "/d", "--", "x"}, {"--name", "n", "--dir", "/d"}} {
		if _, err := parseWrap(args); err == nil {
			t.Fatalf("parseWrap(%q) accepted", args)
		}
	}
}

func TestCopyExecutable(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("#!/bin/sh\necho copied\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "bin", "meshbench-agent")
	if err := copyExecutable(src, dst); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dst)
	if err != nil || fi.Mode().Perm()&0o111 == 0 || fi.Size() != 22 {
		t.Fatalf("copied file %v, %v: want an executable of 22 bytes", fi, err)
	}
}
