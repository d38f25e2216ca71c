package mesh

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/meshbench/meshbench/internal/kube"
)

// A tracing variant's Telemetry names an extension provider of istiod's mesh config: the Telemetry API has no other
// way to name a tracer (istio/istio 1.24.0 pilot/pkg/networking/core/tracing.go configureFromProviderConfig; a name
// istiod does not know leaves the proxies with a tracer that sends nothing). The run adds a Zipkin provider for its
// span sink to the mesh ConfigMap, and removes it when it ends (docs/variants.md "Tracing").

// tracingProviderPrefix starts the name of every extension provider meshbench adds; the run's ID follows.
const tracingProviderPrefix = "meshbench-spans-"

// MeshConfigEditedLabel marks istiod's mesh ConfigMap while it holds a provider of the run its value names: the
// cleanup finds it by that label. It is not the run label, whose sweep deletes what it marks.
const MeshConfigEditedLabel = "meshbench.dev/mesh-config-edited-by"

// meshConfigKey is the ConfigMap key istiod reads its mesh config from (istio/istio 1.24.0
// pilot/pkg/bootstrap/mesh.go configMapKey).
const meshConfigKey = "mesh"

// TracingProviderName is the extension provider a run's tracing variants name.
func TracingProviderName(runID string) string { return tracingProviderPrefix + runID }

// MeshConfigMapName is the ConfigMap istiod of revision reads its mesh config from: "istio", or "istio-<revision>"
// for a revision other than default (istio/istio 1.24.0 pilot/pkg/bootstrap/mesh.go getMeshConfigMapName).
func MeshConfigMapName(revision string) string {
	if revision == "" || revision == "default" {
		return "istio"
	}
	return "istio-" + revision
}

// ZipkinProvider is an extension provider that sends Envoy's spans to a Zipkin collector: Service is its fully
// qualified host name (istiod looks it up in its registry: pilot/pkg/model/telemetry_logging.go LookupCluster).
type ZipkinProvider struct {
	Name    string
	Service string
	Port    int
}

// MeshConfigEditor adds the run's Zipkin provider to istiod's mesh ConfigMap and takes it out again. It keeps the
// text it replaced: when nobody changed the ConfigMap since, the removal writes that text back byte for byte.
type MeshConfigEditor struct {
	Clients *kube.Clients
	// Namespace and Revision are istiod's (IstioInfo.Namespace, .Revision).
	Namespace, Revision string
	RunID               string

	original, written string
	added             bool
	provider          ZipkinProvider
}

// AddZipkin puts p into the mesh config's extensionProviders (replacing one of the same name) and labels the
// ConfigMap for the cleanup. A second call for the same provider changes nothing; one for another (the next
// topology's sink) replaces it, and the removal still restores the text before the first.
func (e *MeshConfigEditor) AddZipkin(ctx context.Context, p ZipkinProvider) error {
	if e.added && e.provider == p {
		return nil
	}
	name := MeshConfigMapName(e.Revision)
	err := e.edit(ctx, func(cm *corev1.ConfigMap) error {
		text, err := withZipkinProvider(cm.Data[meshConfigKey], p)
		if err != nil {
			return fmt.Errorf("ConfigMap %s/%s key %s: %w", e.Namespace, name, meshConfigKey, err)
		}
		if err := patchMeshConfig(ctx, e.Clients, cm, text, e.RunID); err != nil {
			return err
		}
		if !e.added {
			e.original = cm.Data[meshConfigKey]
		}
		e.written, e.added, e.provider = text, true, p
		return nil
	})
	if err != nil {
		return fmt.Errorf("add the span sink's tracing provider to istiod's mesh config %s/%s: %w", e.Namespace, name, err)
	}
	return nil
}

// Remove takes the run's provider out of the mesh config again and the label off (nothing when AddZipkin did not
// add it).
func (e *MeshConfigEditor) Remove(ctx context.Context) error {
	if !e.added {
		return nil
	}
	name := MeshConfigMapName(e.Revision)
	err := e.edit(ctx, func(cm *corev1.ConfigMap) error {
		return removeRunProviders(ctx, e.Clients, cm, e.RunID, e.original, e.written)
	})
	if apierrors.IsNotFound(err) {
		err = nil // istiod's ConfigMap is gone: nothing of ours is left in it
	}
	if err != nil {
		return fmt.Errorf("remove the span sink's tracing provider from istiod's mesh config %s/%s: %w", e.Namespace, name, err)
	}
	e.added = false
	return nil
}

// edit reads the mesh ConfigMap and calls change with it, again after a write conflict (change writes guarded by the
// resourceVersion it read).
func (e *MeshConfigEditor) edit(ctx context.Context, change func(cm *corev1.ConfigMap) error) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := e.Clients.Kube.CoreV1().ConfigMaps(e.Namespace).Get(ctx, MeshConfigMapName(e.Revision), metav1.GetOptions{})
		if err != nil {
			return err
		}
		return change(cm)
	})
}

// RemoveTracingProviders takes the providers of run runID ("" = of every run) out of every mesh ConfigMap labelled
// MeshConfigEditedLabel, for the cleanup after a run that could not (killed). It names the ConfigMaps it changed.
func RemoveTracingProviders(ctx context.Context, clients *kube.Clients, runID string) ([]string, error) {
	sel := MeshConfigEditedLabel
	if runID != "" {
		sel += "=" + runID
	}
	list, err := clients.Kube.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list mesh ConfigMaps edited by meshbench (%s): %w", sel, err)
	}
	var changed []string
	var errs []error
	for i := range list.Items {
		cm := &list.Items[i]
		if err := removeRunProviders(ctx, clients, cm, runID, "", ""); err != nil {
			errs = append(errs, fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err))
			continue
		}
		changed = append(changed, "ConfigMap "+cm.Namespace+"/"+cm.Name+" (tracing provider)")
	}
	return changed, errors.Join(errs...)
}

// removeRunProviders writes cm's mesh config without run runID's providers ("" = every meshbench provider) and
// without the label: original when the text is still written (what meshbench wrote), else the text edited.
func removeRunProviders(ctx context.Context, clients *kube.Clients, cm *corev1.ConfigMap, runID, original, written string) error {
	text := cm.Data[meshConfigKey]
	if written != "" && text == written {
		text = original
	} else {
		var err error
		text, _, err = withoutProviders(text, func(name string) bool {
			return runID == "" && strings.HasPrefix(name, tracingProviderPrefix) || runID != "" && name == TracingProviderName(runID)
		})
		if err != nil {
			return err
		}
	}
	return patchMeshConfig(ctx, clients, cm, text, "")
}

// patchMeshConfig writes text as cm's mesh config, guarded by cm's resourceVersion (a conflict is retried by the
// caller), with MeshConfigEditedLabel set to runID ("" removes it).
func patchMeshConfig(ctx context.Context, clients *kube.Clients, cm *corev1.ConfigMap, text, runID string) error {
	var label any = runID
	if runID == "" {
		label = nil // a merge patch's null deletes the key
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": cm.ResourceVersion, "labels": map[string]any{MeshConfigEditedLabel: label}},
		"data":     map[string]any{meshConfigKey: text},
	})
	if err != nil {
		return err
	}
	_, err = clients.Kube.CoreV1().ConfigMaps(cm.Namespace).Patch(ctx, cm.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

// withZipkinProvider is the mesh config text with p in its extensionProviders, replacing an entry of the same name;
// the rest of the text (order, comments) stays as it was. It is pure.
func withZipkinProvider(text string, p ZipkinProvider) (string, error) {
	root, err := meshRoot(text)
	if err != nil {
		return "", err
	}
	var entry yaml.Node
	if err := entry.Encode(map[string]any{"name": p.Name, "zipkin": map[string]any{"service": p.Service, "port": p.Port}}); err != nil {
		return "", err
	}
	providers := mappingValue(root, "extensionProviders")
	if providers == nil {
		providers = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "extensionProviders"}, providers)
	}
	if providers.Kind != yaml.SequenceNode {
		return "", errors.New("extensionProviders is not a list")
	}
	providers.Content = slices.DeleteFunc(providers.Content, func(n *yaml.Node) bool { return providerName(n) == p.Name })
	providers.Content = append(providers.Content, &entry)
	return encodeMesh(root)
}

// withoutProviders is the mesh config text without the extension providers whose names match, and how many it took
// out; the text is returned unchanged when none matched. It is pure.
func withoutProviders(text string, match func(name string) bool) (string, int, error) {
	root, err := meshRoot(text)
	if err != nil {
		return "", 0, err
	}
	providers := mappingValue(root, "extensionProviders")
	if providers == nil || providers.Kind != yaml.SequenceNode {
		return text, 0, nil
	}
	n := len(providers.Content)
	providers.Content = slices.DeleteFunc(providers.Content, func(n *yaml.Node) bool { return match(providerName(n)) })
	removed := n - len(providers.Content)
	if removed == 0 {
		return text, 0, nil
	}
	out, err := encodeMesh(root)
	return out, removed, err
}

// meshRoot parses the mesh config text into its top mapping (an empty text is an empty mapping).
func meshRoot(text string) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, fmt.Errorf("parse the mesh config: %w", err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, errors.New("the mesh config is not a mapping")
	}
	return root, nil
}

func encodeMesh(root *yaml.Node) (string, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return "", fmt.Errorf("write the mesh config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return "", fmt.Errorf("write the mesh config: %w", err)
	}
	return buf.String(), nil
}

// mappingValue is the value of key in mapping m (nil when absent).
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// providerName is an extensionProviders entry's name ("" when it has none).
func providerName(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	if v := mappingValue(n, "name"); v != nil {
		return v.Value
	}
	return ""
}
