package workloads

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// Renderer builds app objects and reads the user's manifests once per kustomization or set of paths, however often
// objects are built (a kustomize build is slow, and a run must see the same objects). The zero value is ready; it
// must not be copied after use.
type Renderer struct {
	mu    sync.Mutex
	reads map[string]manifestRead
	// render reads the manifests; nil is readManifests. Tests count the calls.
	render func(*scenario.Manifests) ([]manifestObject, scenario.Problems)
}

// manifestRead is one reading of the manifests. Its objects are shared: builds deep-copy them before changing them.
type manifestRead struct {
	objs []manifestObject
	ps   scenario.Problems
}

// Objects is the package's Objects with r's one reading of the manifests.
func (r *Renderer) Objects(s *scenario.Scenario, topo scenario.Topology, runID string) ([]runtime.Object, target.Target, error) {
	return r.build(s, topo, runID, placeholderKey)
}

// ManifestsYAML is the objects of app "manifests" as read, one YAML stream (reading it back as manifests.paths gives
// the same objects), for `meshbench schedule`'s pod. Nil for the other apps; the manifests' problems as the error.
func (r *Renderer) ManifestsYAML(s *scenario.Scenario) ([]byte, error) {
	objs, _, ps := r.checkManifests(s)
	if len(ps) > 0 {
		return nil, ps
	}
	if len(objs) == 0 {
		return nil, nil
	}
	out := make([]runtime.Object, len(objs))
	for i, o := range objs {
		out[i] = o.obj
	}
	var buf bytes.Buffer
	if err := kube.RenderYAML(&buf, out); err != nil {
		return nil, fmt.Errorf("render manifests: %w", err)
	}
	return buf.Bytes(), nil
}

// read returns the objects of m and the problems of reading them, reading them only the first time m's resolved
// kustomization directory or paths are asked for.
func (r *Renderer) read(m *scenario.Manifests) ([]manifestObject, scenario.Problems) {
	key := renderKey(m)
	r.mu.Lock()
	defer r.mu.Unlock()
	got, ok := r.reads[key]
	if !ok {
		render := r.render
		if render == nil {
			render = readManifests
		}
		got.objs, got.ps = render(m)
		if r.reads == nil {
			r.reads = map[string]manifestRead{}
		}
		r.reads[key] = got
	}
	// Callers append their own problems: never to the cached slice's backing array.
	return got.objs, slices.Clip(got.ps)
}

// renderKey names what readManifests reads: the resolved kustomization directory, or the resolved paths in order.
// The problems' field paths name the paths' indexes, so the same files in another order are another key.
func renderKey(m *scenario.Manifests) string {
	if m.Kustomization != "" {
		return "kustomization\x00" + m.Resolve(m.Kustomization)
	}
	paths := make([]string, len(m.Paths))
	for i, p := range m.Paths {
		paths[i] = m.Resolve(p)
	}
	return fmt.Sprintf("paths\x00%d\x00%s", len(paths), strings.Join(paths, "\x00"))
}
