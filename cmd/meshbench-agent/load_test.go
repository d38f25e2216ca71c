package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fortio.org/fortio/fnet"

	"github.com/meshbench/meshbench/loadgen"
)

// `meshbench-agent load` as meshbench execs it for one target of several: the report names the target and protocol
// (Merge sorts reports by them) and counts the echo round trips as 200.
func TestLoadMainTCPTarget(t *testing.T) {
	addr := fnet.TCPEchoServer("agent-test", "127.0.0.1:0")
	if addr == nil {
		t.Fatal("start fortio tcp echo server")
	}
	cs := loadgen.ClientSpec{Target: "echo", Protocol: loadgen.ProtocolTCP, URL: "tcp://" + addr.String(), QPS: 50, Connections: 1, Duration: 200 * time.Millisecond}
	var out bytes.Buffer
	if err := loadMain(context.Background(), cs.Args(), &out); err != nil {
		t.Fatal(err)
	}
	cr, err := loadgen.Parse(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if cr.Target != "echo" || cr.Protocol != loadgen.ProtocolTCP || cr.Codes[200] == 0 || cr.Requests() != cr.Codes[200] {
		t.Errorf("report target %q protocol %q codes %v", cr.Target, cr.Protocol, cr.Codes)
	}
	if err := loadMain(context.Background(), []string{"--url", "x:1", "--protocol", "udp"}, &out); err == nil || !strings.Contains(err.Error(), "--protocol") {
		t.Errorf("protocol udp: %v, want --protocol refused", err)
	}
}

// --cpu-profile (make bench-loadgen -cpuprofile) writes a Go CPU profile of the load: gzip-compressed pprof
// protobuf whose string table names the cpu/nanoseconds sample type. A profile that cannot be created fails the run
// before any load.
func TestLoadMainCPUProfile(t *testing.T) {
	addr := fnet.TCPEchoServer("agent-profile-test", "127.0.0.1:0")
	if addr == nil {
		t.Fatal("start fortio tcp echo server")
	}
	cs := loadgen.ClientSpec{Protocol: loadgen.ProtocolTCP, URL: "tcp://" + addr.String(), QPS: 100, Connections: 1, Duration: 200 * time.Millisecond}
	path := filepath.Join(t.TempDir(), "load.pprof")
	var out bytes.Buffer
	if err := loadMain(context.Background(), append(cs.Args(), "--cpu-profile", path), &out); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("profile is not gzip (pprof) data: %v", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("cpu")) || !bytes.Contains(b, []byte("nanoseconds")) {
		t.Errorf("profile (%d bytes) has no cpu/nanoseconds sample type", len(b))
	}
	err = loadMain(context.Background(), append(cs.Args(), "--cpu-profile", filepath.Join(t.TempDir(), "missing", "p")), &out)
	if err == nil || !strings.Contains(err.Error(), "--cpu-profile") {
		t.Errorf("uncreatable profile: got %v, want a --cpu-profile error", err)
	}
}
