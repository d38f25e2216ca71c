package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// LabelRecordFile is the record's file name inside a run directory.
const LabelRecordFile = "namespace-labels.json"

// labelRecordSchema versions the file.
const labelRecordSchema = "meshbench.dev/namespace-labels/v1"

// LabelRecord remembers the original values of the labels meshbench changes on namespaces it did not create, so
// they can be restored at the end of the run or by `meshbench cleanup`. Every change is written to the file BEFORE
// the label is changed: a crash between the two leaves a record of a change that did not happen, which restores to
// the same values and is harmless.
type LabelRecord struct {
	// Path of the JSON file; "" keeps the record in memory only.
	Path string

	mu   sync.Mutex
	file labelRecordFile
}

type labelRecordFile struct {
	SchemaVersion string           `json:"schemaVersion"`
	Namespaces    []NamespaceLabel `json:"namespaces"`
}

// NamespaceLabel is the original state of the labels meshbench changed on one namespace.
type NamespaceLabel struct {
	Namespace string `json:"namespace"`
	// Labels maps each changed label to its original value; null means it was absent (restore deletes it).
	Labels     map[string]*string `json:"labels"`
	RecordedAt time.Time          `json:"recordedAt"`
}

// OpenLabelRecord loads the record at path, or starts an empty one when the file does not exist.
func OpenLabelRecord(path string) (*LabelRecord, error) {
	r := &LabelRecord{Path: path, file: labelRecordFile{SchemaVersion: labelRecordSchema}}
	if path == "" {
		return r, nil
	}
	b, err := os.ReadFile(path)
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

// Entries returns a copy of what is recorded, ordered by namespace.
func (r *LabelRecord) Entries() []NamespaceLabel {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]NamespaceLabel, len(r.file.Namespaces))
	copy(out, r.file.Namespaces)
	return out
}

// Remember records the current values (from current, the namespace's labels now) of keys not yet recorded for ns,
// and writes the file. The first recorded value wins: it is the state before meshbench touched the namespace.
func (r *LabelRecord) Remember(ns string, current map[string]string, keys []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := sort.Search(len(r.file.Namespaces), func(i int) bool { return r.file.Namespaces[i].Namespace >= ns })
	if i == len(r.file.Namespaces) || r.file.Namespaces[i].Namespace != ns {
		r.file.Namespaces = append(r.file.Namespaces, NamespaceLabel{})
		copy(r.file.Namespaces[i+1:], r.file.Namespaces[i:])
		r.file.Namespaces[i] = NamespaceLabel{Namespace: ns, Labels: map[string]*string{}, RecordedAt: time.Now().UTC()}
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

// Restore puts every recorded label back to its original value (deleting labels that were absent) and empties the
// record. Namespaces that no longer exist are skipped. It returns the namespaces restored.
func (r *LabelRecord) Restore(ctx context.Context, kc kubernetes.Interface) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.file.Namespaces) == 0 {
		return nil, nil
	}
	var restored []string
	var keep []NamespaceLabel
	var errs []error
	for _, e := range r.file.Namespaces {
		patch, err := labelPatch(e.Labels)
		if err != nil {
			return restored, err
		}
		_, err = kc.CoreV1().Namespaces().Patch(ctx, e.Namespace, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
		switch {
		case err == nil:
			restored = append(restored, e.Namespace)
		case apierrors.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("restore labels of namespace %s: %w", e.Namespace, err))
			keep = append(keep, e)
		}
	}
	r.file.Namespaces = keep
	if err := r.writeLocked(); err != nil {
		errs = append(errs, err)
	}
	return restored, errors.Join(errs...)
}

// labelPatch is a JSON merge patch of metadata.labels: a value sets, nil deletes.
func labelPatch(l map[string]*string) ([]byte, error) {
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": l}})
	if err != nil {
		return nil, fmt.Errorf("encode label patch: %w", err)
	}
	return b, nil
}
