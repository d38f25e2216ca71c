package main

import (
	"bytes"
	"context"
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
