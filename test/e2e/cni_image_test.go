//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/meshbench/meshbench/cni"
	"github.com/meshbench/meshbench/results"
)

// TestCNINetworkImagePinned (issue 29 section 1 item 7): a `meshbench cni` run records in run.json the digest its
// network image's tag resolved to, which is the digest the registry serves for that tag (asked here, independently,
// with go-containerregistry), and the iperf3 version the image's iperf3 reports.
func TestCNINetworkImagePinned(t *testing.T) {
	c := RequireCluster(t)
	if len(c.Nodes) < 2 {
		t.Skipf("needs two nodes, the cluster has %v", c.Nodes)
	}
	ref := c.Env["MESHBENCH_IMAGE_IPERF3"]
	if ref == "" {
		t.Skip("cluster.env has no MESHBENCH_IMAGE_IPERF3: not the local harness")
	}
	cli := cniCLI(t)
	out := t.TempDir()
	sc := cniScenario(t, fmt.Sprintf(`    tests: [tcp]
    paths: [cross-node]
    duration: 2s
    samples: 1
    placement: {clientNode: %s, serverNode: %s}
`, c.Nodes[0], c.Nodes[1]))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := cniCommand(ctx, c, cli, "cni", "-f", sc, "--output-dir", out, "-o", "json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("stderr:\n%s", stderr.String())
	if err != nil {
		t.Fatalf("meshbench cni: %v\nstdout:\n%s", err, stdout.String())
	}
	var rep cni.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, stdout.String())
	}
	run, err := results.Read(rep.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	ni := run.Meta.NetworkImage
	if ni == nil {
		t.Fatal("run.json has no networkImage")
	}
	t.Logf("run.json networkImage: %+v", *ni)

	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(r, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("the registry's digest of %s: %v", ref, err)
	}
	if ni.Ref != ref || ni.Digest != desc.Digest.String() || ni.Pinned != r.Context().Name()+"@"+desc.Digest.String() {
		t.Errorf("networkImage %+v, want ref %s at the registry's digest %s", *ni, ref, desc.Digest)
	}
	if !strings.HasPrefix(ni.Iperf3, "3.") {
		t.Errorf("networkImage.iperf3 %q, want the image's iperf3 version", ni.Iperf3)
	}
}
