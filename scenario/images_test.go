package scenario

import (
	"encoding/json"
	"strings"
	"testing"
)

const imagesBase = "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: img}\nspec:\n  workload: {app: fortio-chain}\n"

// TestImageDefaults pins how meshbench's own images follow spec.images.registry and the tag the loader passes, per
// profile, and that explicit references and the network image do not move.
func TestImageDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, extra string
		opts        LoadOptions
		want        Images
	}{
		{"default profile, no tag given", "", LoadOptions{}, Images{Registry: DefaultRegistry, Tag: "dev",
			Agent: "ghcr.io/meshbench/meshbench-agent:dev", Meshbench: "ghcr.io/meshbench/meshbench:dev", Network: DefaultNetworkImage}},
		{"tool version tag", "", LoadOptions{ImageTag: "v0.1.0"}, Images{Registry: DefaultRegistry, Tag: "v0.1.0",
			Agent: "ghcr.io/meshbench/meshbench-agent:v0.1.0", Meshbench: "ghcr.io/meshbench/meshbench:v0.1.0", Network: DefaultNetworkImage}},
		{"localcluster", "  profile: localcluster\n", LoadOptions{ImageTag: "df4d013-dirty"}, Images{Registry: "172.30.0.1:5000/meshbench", Tag: "df4d013-dirty",
			Agent: "172.30.0.1:5000/meshbench/meshbench-agent:df4d013-dirty", Meshbench: "172.30.0.1:5000/meshbench/meshbench:df4d013-dirty",
			Network: "172.30.0.1:5000/meshbench/iperf3:dev"}},
		{"registry in the file moves both", "  images: {registry: registry.example:5000/team/}\n", LoadOptions{ImageTag: "v1"}, Images{Registry: "registry.example:5000/team/", Tag: "v1",
			Agent: "registry.example:5000/team/meshbench-agent:v1", Meshbench: "registry.example:5000/team/meshbench:v1", Network: DefaultNetworkImage}},
		{"flag beats the file; explicit agent stays", "  images: {registry: a.example/x, agent: pinned.example/agent:7}\n", LoadOptions{ImageRegistry: "b.example/y", ImageTag: "v2"},
			Images{Registry: "b.example/y", Tag: "v2", Agent: "pinned.example/agent:7", Meshbench: "b.example/y/meshbench:v2", Network: DefaultNetworkImage}},
		{"tag in the file beats the tool version", "  images: {tag: v0.0.9}\n", LoadOptions{ImageTag: "v0.1.0"}, Images{Registry: DefaultRegistry, Tag: "v0.0.9",
			Agent: "ghcr.io/meshbench/meshbench-agent:v0.0.9", Meshbench: "ghcr.io/meshbench/meshbench:v0.0.9", Network: DefaultNetworkImage}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := ParseWith([]byte(imagesBase+tt.extra), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := s.Spec.Images
			got.BankOfAnthos, got.Bookinfo, got.PullPolicy = BankOfAnthosImages{}, BookinfoImages{}, ""
			if got != tt.want {
				t.Errorf("images\n got %+v\nwant %+v", got, tt.want)
			}
			// The recorded scenario (run.json's echo) re-parses to the same refs whatever tag the resuming binary has.
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			again, err := ParseWith(b, LoadOptions{ImageTag: "other"})
			if err != nil {
				t.Fatal(err)
			}
			if again.Spec.Images != s.Spec.Images {
				t.Errorf("re-parsed echo moved the images: %+v, want %+v", again.Spec.Images, s.Spec.Images)
			}
		})
	}
}

func TestImageValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, images string
		opts         LoadOptions
		want         []string // "path: fragment", in order
	}{
		{"upper-case registry reported once", "{registry: Ghcr.io/MeshBench}", LoadOptions{},
			[]string{`spec.images.registry: must be a registry host with an optional path, lower-case`}},
		{"scheme", "{registry: \"http://172.30.0.1:5000/meshbench\"}", LoadOptions{},
			[]string{`spec.images.registry: must not have a URL scheme`}},
		{"registry with a tag", "{registry: \"ghcr.io/meshbench:v1\"}", LoadOptions{}, []string{`spec.images.registry: must be a registry host`}},
		{"bad tag from the loader", "{}", LoadOptions{ImageTag: "-dirty"}, []string{`spec.images.tag: must be an image tag`}},
		{"bad tag and a bad explicit agent", "{tag: \"a:b\", agent: \"Bad Image\"}", LoadOptions{},
			[]string{`spec.images.tag: must be an image tag`, `spec.images.agent: must be an image reference such as`}},
		{"bad flag registry", "{}", LoadOptions{ImageRegistry: "reg.example/UP"}, []string{`spec.images.registry: must be a registry host`}},
		{"network and bank of anthos", "{network: \"x y\", bankOfAnthos: {registry: \"boa.example/\", tag: \".v1\"}}", LoadOptions{},
			[]string{`spec.images.network: must be an image reference`, `spec.images.bankOfAnthos.tag: must be an image tag`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseWith([]byte(imagesBase+"  images: "+tt.images+"\n"), tt.opts)
			var ps Problems
			if !errorsAs(err, &ps) {
				t.Fatalf("want Problems, got %v", err)
			}
			if len(ps) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(ps), len(tt.want), ps.Error())
			}
			for i, w := range tt.want {
				if path, frag, _ := strings.Cut(w, ": "); ps[i].Path != path || !strings.Contains(ps[i].Message, frag) {
					t.Errorf("problem %d = %s, want %s", i, ps[i], w)
				}
			}
		})
	}
	if _, err := ParseWith([]byte(imagesBase+"  images: {registry: \"172.30.0.1:5000\"}\n"), LoadOptions{ImageTag: "v0.1.0_rc1"}); err != nil {
		t.Errorf("a bare host:port registry and a tag with '_' are valid: %v", err)
	}
}
