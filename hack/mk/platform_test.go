package mk

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/images"
)

// TestLocalClusterPushesNodePlatformOnly: the local cluster's nodes run on this host, so up.sh pushes meshbench's
// images for the host's platform only (issue 29 section 3: the second architecture doubled the cold compile of make
// demo), with a value `meshbench images push --platform` accepts; a user's push keeps both architectures.
func TestLocalClusterPushesNodePlatformOnly(t *testing.T) {
	need(t, "bash")
	root := repoRoot(t)
	cmd := exec.Command("bash", "-c", `source hack/localcluster/lib.sh && printf %s "$NODE_PLATFORM"`)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "MESHBENCH_CLUSTER_DIR="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("source lib.sh: %v", err)
	}
	plat := string(out)
	if want := "linux/" + runtime.GOARCH; plat != want {
		t.Errorf("NODE_PLATFORM=%q on this host, want %q (the platform its containerd pulls)", plat, want)
	}
	if _, err := images.ParsePlatforms([]string{plat}); err != nil {
		t.Errorf("NODE_PLATFORM=%q is refused by meshbench images push --platform: %v", plat, err)
	}
	up, err := os.ReadFile(filepath.Join(root, "hack/localcluster/up.sh"))
	if err != nil {
		t.Fatal(err)
	}
	push := regexp.MustCompile(`(?m)^\s*"\$S/build/meshbench" images push .*$`).Find(up)
	if push == nil || !strings.Contains(string(push), `--platform "$NODE_PLATFORM"`) {
		t.Errorf("up.sh's meshbench images push does not build for the nodes' platform only (--platform \"$NODE_PLATFORM\"): %q", push)
	}
	if d := images.DefaultPlatforms(); len(d) != 2 || d[0] != "linux/amd64" || d[1] != "linux/arm64" {
		t.Errorf("a user's images push builds %v by default, want linux/amd64 and linux/arm64", d)
	}
}
