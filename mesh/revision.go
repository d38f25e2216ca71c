package mesh

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Istio's revision labels and webhook names (istio/istio at 1.24.0, 1.30.3 and 1.31.0-rc.0, pinned by
// revision_test.go; the facts: docs/modes.md).
const (
	labelIstioTag = "istio.io/tag"
	// defaultRevision is the istio.io/rev value of a non-revisioned istiod.
	defaultRevision = "default"
	// defaultInjectorWebhook is the webhook that serves namespaces labelled istio-injection=enabled.
	defaultInjectorWebhook = "namespace.sidecar-injector.istio.io"
)

// ControlPlanes is what is installed: the istiod revisions, the revision tags and which revision (if any) a namespace
// labelled istio-injection=enabled reaches.
type ControlPlanes struct {
	// Revisions are the istio.io/rev labels of the istiod pods, sorted ("default" for a non-revisioned install).
	Revisions []string `json:"revisions,omitempty"`
	// Tags maps each revision tag to its revision.
	Tags map[string]string `json:"tags,omitempty"`
	// DefaultInjector is the revision behind the webhook namespace.sidecar-injector.istio.io ("" when no injector
	// serves istio-injection=enabled).
	DefaultInjector string `json:"defaultInjector,omitempty"`
}

// RevisionChoice is the control plane a run uses and why.
type RevisionChoice struct {
	// Revision is the istiod revision ("default" for a non-revisioned install, "" when no Istio is installed).
	Revision string `json:"revision"`
	// Source says how it was chosen: "spec.istio.revision", "spec.istio.revision (tag X)", "the only control plane",
	// "the default injector".
	Source string `json:"source"`
}

// Revisioned reports whether the choice is a named revision (istio.io/rev labels are needed), not the default
// install.
func (r RevisionChoice) Revisioned() bool { return r.Revision != "" && r.Revision != defaultRevision }

// resolveRevision picks the control plane: the scenario's revision (a revision or a tag name) when given, else the only
// revision installed, else the one behind the default injector. With several control planes and no default it refuses
// to guess (an error naming them and the fix). It is pure.
func resolveRevision(want string, cp ControlPlanes) (RevisionChoice, error) {
	if want != "" {
		if slices.Contains(cp.Revisions, want) {
			return RevisionChoice{Revision: want, Source: "spec.istio.revision"}, nil
		}
		if rev, ok := cp.Tags[want]; ok && slices.Contains(cp.Revisions, rev) {
			return RevisionChoice{Revision: rev, Source: fmt.Sprintf("spec.istio.revision (tag %s)", want)}, nil
		}
		if len(cp.Revisions) == 0 {
			return RevisionChoice{}, fmt.Errorf("spec.istio.revision is %q but no istiod is installed (no pod labelled app=istiod)", want)
		}
		return RevisionChoice{}, fmt.Errorf("spec.istio.revision is %q but the installed istiod revisions are %s%s: set spec.istio.revision to one of them",
			want, strings.Join(cp.Revisions, ", "), tagsSuffix(cp.Tags))
	}
	switch len(cp.Revisions) {
	case 0:
		return RevisionChoice{}, nil
	case 1:
		return RevisionChoice{Revision: cp.Revisions[0], Source: "the only control plane"}, nil
	}
	if cp.DefaultInjector != "" && slices.Contains(cp.Revisions, cp.DefaultInjector) {
		return RevisionChoice{Revision: cp.DefaultInjector, Source: "the default injector (istio-injection=enabled)"}, nil
	}
	return RevisionChoice{}, fmt.Errorf("%d Istio control planes are installed (revisions %s%s) and none is the default: set spec.istio.revision to the one to benchmark",
		len(cp.Revisions), strings.Join(cp.Revisions, ", "), tagsSuffix(cp.Tags))
}

func tagsSuffix(tags map[string]string) string {
	if len(tags) == 0 {
		return ""
	}
	var parts []string
	for _, t := range sortedKeys(tags) {
		parts = append(parts, t+"->"+tags[t])
	}
	return "; tags " + strings.Join(parts, ", ")
}

// controlPlanesFrom derives ControlPlanes from istiod pods and the cluster's MutatingWebhookConfigurations. It is
// pure.
func controlPlanesFrom(istiods []corev1.Pod, webhooks []admissionregistrationv1.MutatingWebhookConfiguration) ControlPlanes {
	var cp ControlPlanes
	seen := map[string]bool{}
	for _, p := range istiods {
		if p.DeletionTimestamp != nil {
			continue
		}
		rev := p.Labels[LabelRevision]
		if rev == "" {
			rev = defaultRevision
		}
		if !seen[rev] {
			seen[rev] = true
			cp.Revisions = append(cp.Revisions, rev)
		}
	}
	sort.Strings(cp.Revisions)
	for _, wh := range webhooks {
		rev := wh.Labels[LabelRevision]
		if tag := wh.Labels[labelIstioTag]; tag != "" && rev != "" {
			if cp.Tags == nil {
				cp.Tags = map[string]string{}
			}
			cp.Tags[tag] = rev
		}
		for _, w := range wh.Webhooks {
			if w.Name == defaultInjectorWebhook && rev != "" {
				cp.DefaultInjector = rev
			}
		}
	}
	return cp
}

// detectControlPlanes lists istiod pods (app=istiod, all namespaces) and the MutatingWebhookConfigurations labelled
// istio.io/rev. A failure to list webhooks leaves Tags and DefaultInjector empty and is returned as a problem.
func detectControlPlanes(ctx context.Context, kc kubernetes.Interface) (ControlPlanes, []corev1.Pod, string, error) {
	pods, err := kc.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: "app=istiod"})
	if err != nil {
		return ControlPlanes{}, nil, "", fmt.Errorf("list istiod pods: %w", err)
	}
	var problem string
	whs, err := kc.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{LabelSelector: LabelRevision})
	var items []admissionregistrationv1.MutatingWebhookConfiguration
	if err != nil {
		problem = fmt.Sprintf("list MutatingWebhookConfigurations (revision tags, default injector): %v", err)
	} else {
		items = whs.Items
	}
	return controlPlanesFrom(pods.Items, items), pods.Items, problem, nil
}
