package workloads

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/meshbench/meshbench/internal/inputfile"
	"github.com/meshbench/meshbench/scenario"
)

// manifestExts are the file names read from a directory of workload.manifests.paths.
var manifestExts = []string{".yaml", ".yml", ".json"}

// readManifests reads every object of m (the kustomization built, or Paths document by document), going on past
// unreadable files, each a problem. Every file follows inputfile's rule (checked before it is opened), and all of them
// together are at most inputfile.MaxManifests.
func readManifests(m *scenario.Manifests) ([]manifestObject, scenario.Problems) {
	var out []manifestObject
	var ps scenario.Problems
	add := func(fp, format string, args ...any) {
		ps = append(ps, scenario.Problem{Path: fp, Message: fmt.Sprintf(format, args...)})
	}
	budget := &manifestBudget{}
	if m.Kustomization != "" {
		fp := manifestsPath.Child("kustomization").String()
		dir := m.Resolve(m.Kustomization)
		// kustomize tries each name of the kustomization file and says only "unable to find one" when reading all
		// failed: a FIFO or an over-cap kustomization.yaml is named here with the rule's reason.
		for _, name := range konfig.RecognizedKustomizationFileNames() {
			if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
				if _, err := inputfile.Check(filepath.Join(dir, name), inputfile.Manifest); err != nil {
					add(fp, "%v", err)
					return nil, ps
				}
			}
		}
		rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(boundedFS{filesys.MakeFsOnDisk(), budget}, dir)
		if err != nil {
			add(fp, "kustomize build %s: %v; fix the kustomization (`kubectl kustomize %s` shows the same error)", dir, err, dir)
			return nil, ps
		}
		for _, r := range rm.Resources() {
			u, err := fromJSON(r.MarshalJSON())
			if err != nil {
				add(fp, "kustomize build %s: %s: %v", dir, r.CurId(), err)
				continue
			}
			out = appendObjects(out, u, filepath.Join(dir, "kustomization.yaml"), fp)
		}
		return out, ps
	}
	for i, p := range m.Paths {
		fp := manifestsPath.Child("paths").Index(i).String()
		path := m.Resolve(p)
		st, err := os.Stat(path)
		if err != nil {
			add(fp, "cannot read %s: %v; name an existing YAML file or directory (relative to the scenario file)", path, err)
			continue
		}
		files := []string{path}
		if st.IsDir() {
			entries, err := os.ReadDir(path)
			if err != nil {
				add(fp, "read directory %s: %v", path, err)
				continue
			}
			files = files[:0]
			for _, e := range entries {
				if !e.IsDir() && slices.Contains(manifestExts, strings.ToLower(filepath.Ext(e.Name()))) {
					files = append(files, filepath.Join(path, e.Name()))
				}
			}
			if len(files) == 0 {
				add(fp, "directory %s has no *.yaml, *.yml or *.json file (subdirectories are not read)", path)
			}
		}
		for _, f := range files {
			objs, err := decodeFile(f, budget)
			if err != nil {
				add(fp, "%v", err)
				if errors.Is(err, errManifestsTooLarge) {
					return out, ps
				}
				continue
			}
			for _, o := range objs {
				out = appendObjects(out, o, f, fp)
			}
		}
	}
	return out, ps
}

// errManifestsTooLarge: the manifests' files together are above inputfile.MaxManifests.
var errManifestsTooLarge = fmt.Errorf("the manifest files together are larger than %s: split the app or leave out what it does not need",
	inputfile.Bytes(inputfile.MaxManifests))

// manifestBudget counts the bytes of the manifest files read so far against inputfile.MaxManifests.
type manifestBudget struct{ used int64 }

func (b *manifestBudget) take(path string, n int64) error {
	if b.used += n; b.used > inputfile.MaxManifests {
		return fmt.Errorf("%s: %w", path, errManifestsTooLarge)
	}
	return nil
}

// boundedFS is kustomize's file system with inputfile's rule on every file it reads, and the budget of all of them.
type boundedFS struct {
	filesys.FileSystem
	budget *manifestBudget
}

func (b boundedFS) ReadFile(path string) ([]byte, error) {
	data, err := inputfile.ReadFile(path, inputfile.Manifest)
	if err != nil {
		return nil, err
	}
	if err := b.budget.take(path, int64(len(data))); err != nil {
		return nil, err
	}
	return data, nil
}

func (b boundedFS) Open(path string) (filesys.File, error) {
	fi, err := inputfile.Check(path, inputfile.Manifest)
	if err != nil {
		return nil, err
	}
	if err := b.budget.take(path, fi.Size()); err != nil {
		return nil, err
	}
	return b.FileSystem.Open(path)
}

// decodeFile reads the YAML or JSON documents of one file (inputfile's rule, and the budget of all manifests).
func decodeFile(path string, budget *manifestBudget) ([]*unstructured.Unstructured, error) {
	f, err := inputfile.Open(path, inputfile.Manifest)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := budget.take(path, f.Size()); err != nil {
		return nil, err
	}
	dec := yamlutil.NewYAMLOrJSONDecoder(f, 4096)
	var out []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		var fe *inputfile.Error
		if errors.As(err, &fe) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, doc, err)
		}
		if t := strings.TrimSpace(string(raw)); t == "" || t == "null" || t == "{}" {
			continue
		}
		u, err := fromJSON(raw, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, doc, err)
		}
		out = append(out, u)
	}
}

// fromJSON decodes an object the way client-go does (whole numbers as int64, which DeepCopy and the Nested helpers
// need).
func fromJSON(b []byte, err error) (*unstructured.Unstructured, error) {
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	return u, nil
}

// appendObjects adds o, or the items of a List.
func appendObjects(out []manifestObject, o *unstructured.Unstructured, file, fp string) []manifestObject {
	if o.IsList() {
		_ = o.EachListItem(func(item runtime.Object) error {
			if u, ok := item.(*unstructured.Unstructured); ok {
				out = append(out, manifestObject{obj: u, file: file, field: fp})
			}
			return nil
		})
		return out
	}
	return append(out, manifestObject{obj: o, file: file, field: fp})
}
