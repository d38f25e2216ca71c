package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/internal/inputfile"
	"github.com/meshbench/meshbench/internal/target"
)

// LabelRecordFile is the record's file name inside a run directory.
const LabelRecordFile = "namespace-labels.json"

// labelRecordSchema versions the file. The workloads list was added to v1 without a bump: it is optional
// (omitempty), so files of older meshbench (namespaces only) load unchanged. An older meshbench reading a newer file
// restores the namespace labels and ignores the workloads (encoding/json drops unknown fields).
const labelRecordSchema = "meshbench.dev/namespace-labels/v1"

// LabelRecord remembers the original namespace labels and pod-template restart annotations meshbench changes on what
// it did not create, for restore at the end of the run or by `meshbench cleanup`. Each change is recorded BEFORE it
// is made: a crash in between leaves a harmless record of a change that did not happen.
type LabelRecord struct {
	// Path of the JSON file; "" keeps the record in memory only.
	Path string

	mu   sync.Mutex
	file labelRecordFile
}

type labelRecordFile struct {
	SchemaVersion string           `json:"schemaVersion"`
	Namespaces    []namespaceLabel `json:"namespaces"`
	// Workloads is absent in files written before meshbench restarted workloads it did not create.
	Workloads []workloadAnnotations `json:"workloads,omitempty"`
}

// namespaceLabel is the original state of the labels meshbench changed on one namespace.
type namespaceLabel struct {
	Namespace string `json:"namespace"`
	// Labels maps each changed label to its original value; null means it was absent (restore deletes it).
	Labels     map[string]*string `json:"labels"`
	RecordedAt time.Time          `json:"recordedAt"`
}

// workloadAnnotations is the original state of the pod-template annotations meshbench changed on one Deployment or
// StatefulSet it did not create (the restart annotation that rolls its pods into a new mode).
type workloadAnnotations struct {
	Kind      string `json:"kind"` // target.KindDeployment | target.KindStatefulSet
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Annotations maps each changed spec.template.metadata.annotations key to its original value; null means it
	// was absent (restore deletes it).
	Annotations map[string]*string `json:"annotations"`
	RecordedAt  time.Time          `json:"recordedAt"`
}

// String is "Kind ns/name", as target.WorkloadRef.
func (w workloadAnnotations) String() string { return w.Kind + " " + w.Namespace + "/" + w.Name }

// OpenLabelRecord loads the record at path, or starts an empty one when the file does not exist.
func OpenLabelRecord(path string) (*LabelRecord, error) {
	r := &LabelRecord{Path: path, file: labelRecordFile{SchemaVersion: labelRecordSchema}}
	if path == "" {
		return r, nil
	}
	b, err := inputfile.ReadFile(path, inputfile.LabelRecord)
	if errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read namespace label record: %w", err)
	}
	if err := json.Unmarshal(b, &r.file); err != nil {
		return nil, fmt.Errorf("decode namespace label record %s: %w", path, err)
	}
	if r.file.SchemaVersion != labelRecordSchema {
		return nil, fmt.Errorf("namespace label record %s: schema %q, this meshbench reads %q", path, r.file.SchemaVersion, labelRecordSchema)
	}
	return r, nil
}

// entries returns a copy of what is recorded, ordered by namespace.
func (r *LabelRecord) entries() []namespaceLabel {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]namespaceLabel, len(r.file.Namespaces))
	copy(out, r.file.Namespaces)
	return out
}

// workloadEntries returns a copy of the recorded workloads, ordered by namespace, kind and name.
func (r *LabelRecord) workloadEntries() []workloadAnnotations {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]workloadAnnotations, len(r.file.Workloads))
	for i, w := range r.file.Workloads {
		w.Annotations = maps.Clone(w.Annotations)
		out[i] = w
	}
	return out
}

// rememberWorkload records the current values (from current, the workload's pod-template annotations now) of keys
// not yet recorded for the workload, and writes the file. The first recorded value wins: a later restart of the
// same workload must not overwrite the state before meshbench's first restart with meshbench's own stamp.
func (r *LabelRecord) rememberWorkload(kind, ns, name string, current map[string]string, keys []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	less := func(w workloadAnnotations) bool {
		if w.Namespace != ns {
			return w.Namespace < ns
		}
		if w.Kind != kind {
			return w.Kind < kind
		}
		return w.Name < name
	}
	ws := r.file.Workloads
	i := sort.Search(len(ws), func(i int) bool { return !less(ws[i]) })
	if i == len(ws) || ws[i].Namespace != ns || ws[i].Kind != kind || ws[i].Name != name {
		ws = slices.Insert(ws, i, workloadAnnotations{Kind: kind, Namespace: ns, Name: name,
			Annotations: map[string]*string{}, RecordedAt: time.Now().UTC()})
		r.file.Workloads = ws
	}
	e := &r.file.Workloads[i]
	changed := false
	for _, k := range keys {
		if _, done := e.Annotations[k]; done {
			continue
		}
		if v, ok := current[k]; ok {
			e.Annotations[k] = ptr(v)
		} else {
			e.Annotations[k] = nil
		}
		changed = true
	}
	if !changed {
		return nil
	}
	return r.writeLocked()
}

// remember records the current values (from current, the namespace's labels now) of keys not yet recorded for ns,
// and writes the file. The first recorded value wins: it is the state before meshbench touched the namespace.
func (r *LabelRecord) remember(ns string, current map[string]string, keys []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := sort.Search(len(r.file.Namespaces), func(i int) bool { return r.file.Namespaces[i].Namespace >= ns })
	if i == len(r.file.Namespaces) || r.file.Namespaces[i].Namespace != ns {
		r.file.Namespaces = append(r.file.Namespaces, namespaceLabel{})
		copy(r.file.Namespaces[i+1:], r.file.Namespaces[i:])
		r.file.Namespaces[i] = namespaceLabel{Namespace: ns, Labels: map[string]*string{}, RecordedAt: time.Now().UTC()}
	}
	e := &r.file.Namespaces[i]
	changed := false
	for _, k := range keys {
		if _, done := e.Labels[k]; done {
			continue
		}
		if v, ok := current[k]; ok {
			e.Labels[k] = ptr(v)
		} else {
			e.Labels[k] = nil
		}
		changed = true
	}
	if !changed {
		return nil
	}
	return r.writeLocked()
}

func (r *LabelRecord) writeLocked() error {
	if r.Path == "" {
		return nil
	}
	b, err := json.MarshalIndent(r.file, "", "  ")
	if err != nil {
		return fmt.Errorf("encode namespace label record: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(r.Path), 0o755); err != nil {
		return fmt.Errorf("write namespace label record: %w", err)
	}
	tmp := r.Path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("write namespace label record: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("write namespace label record: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync namespace label record: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close namespace label record: %w", err)
	}
	if err := os.Rename(tmp, r.Path); err != nil {
		return fmt.Errorf("write namespace label record: %w", err)
	}
	return nil
}

// Restored is what RestoreAll put back.
type Restored struct {
	// Namespaces whose labels were restored.
	Namespaces []string `json:"namespaces"`
	// Workloads ("Kind ns/name") whose pod-template annotations were restored.
	Workloads []string `json:"workloads,omitempty"`
	// Notes name what was skipped: a workload deleted meanwhile, one left for later because its namespace's
	// labels could not be restored.
	Notes []string `json:"notes,omitempty"`
}

// Restore is RestoreAll returning only the namespaces restored.
func (r *LabelRecord) Restore(ctx context.Context, kc kubernetes.Interface) ([]string, error) {
	res, err := r.RestoreAll(ctx, kc)
	return res.Namespaces, err
}

// RestoreAll puts back every recorded label (deleting those that were absent), then every annotation, and empties
// the record of what it restored. Labels first, so the rollout an annotation causes brings pods back in their
// original mode; a workload whose namespace could not be restored stays recorded for `meshbench cleanup`.
func (r *LabelRecord) RestoreAll(ctx context.Context, kc kubernetes.Interface) (Restored, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var res Restored
	if len(r.file.Namespaces) == 0 && len(r.file.Workloads) == 0 {
		return res, nil
	}
	var keep []namespaceLabel
	var errs []error
	failedNS := map[string]bool{}
	for _, e := range r.file.Namespaces {
		patch, err := labelPatch(e.Labels)
		if err != nil {
			return res, err
		}
		_, err = kc.CoreV1().Namespaces().Patch(ctx, e.Namespace, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
		switch {
		case err == nil:
			res.Namespaces = append(res.Namespaces, e.Namespace)
		case apierrors.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("restore labels of namespace %s: %w", e.Namespace, err))
			keep = append(keep, e)
			failedNS[e.Namespace] = true
		}
	}
	r.file.Namespaces = keep
	var keepW []workloadAnnotations
	for _, w := range r.file.Workloads {
		if failedNS[w.Namespace] {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: annotations not restored yet, its namespace's labels could not be restored", w))
			keepW = append(keepW, w)
			continue
		}
		err := restoreWorkload(ctx, kc, w)
		switch {
		case err == nil:
			res.Workloads = append(res.Workloads, w.String())
		case apierrors.IsNotFound(err):
			res.Notes = append(res.Notes, fmt.Sprintf("%s: deleted meanwhile, nothing to restore", w))
		default:
			errs = append(errs, fmt.Errorf("restore pod-template annotations of %s: %w", w, err))
			keepW = append(keepW, w)
		}
	}
	r.file.Workloads = keepW
	if err := r.writeLocked(); err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// restoreWorkload merge-patches the recorded annotations back onto the workload's pod template (nil deletes).
func restoreWorkload(ctx context.Context, kc kubernetes.Interface, w workloadAnnotations) error {
	body, err := templateAnnotationPatch(w.Annotations)
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: FieldManager}
	switch w.Kind {
	case target.KindDeployment:
		_, err = kc.AppsV1().Deployments(w.Namespace).Patch(ctx, w.Name, types.MergePatchType, body, opts)
	case target.KindStatefulSet:
		_, err = kc.AppsV1().StatefulSets(w.Namespace).Patch(ctx, w.Name, types.MergePatchType, body, opts)
	default:
		err = fmt.Errorf("unknown workload kind %q", w.Kind)
	}
	return err
}

// templateAnnotationPatch is a JSON merge patch of spec.template.metadata.annotations: a value sets, nil deletes.
func templateAnnotationPatch(a map[string]*string) ([]byte, error) {
	b, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": a}}}})
	if err != nil {
		return nil, fmt.Errorf("encode annotation patch: %w", err)
	}
	return b, nil
}

// labelPatch is a JSON merge patch of metadata.labels: a value sets, nil deletes.
func labelPatch(l map[string]*string) ([]byte, error) {
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": l}})
	if err != nil {
		return nil, fmt.Errorf("encode label patch: %w", err)
	}
	return b, nil
}
