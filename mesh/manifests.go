package mesh

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/meshbench/meshbench/internal/inputfile"
)

// ReadManifests reads YAML files (each one or more documents) into objects, in file order, each file decoded on its
// own (the Gateway API CRD files have no leading "---": concatenated, documents would merge). Empty documents are
// skipped; an object without apiVersion or kind is an error; every file follows inputfile's rule.
func ReadManifests(paths ...string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, p := range paths {
		b, err := inputfile.ReadFile(p, inputfile.Manifest)
		if err != nil {
			return nil, fmt.Errorf("read manifest: %w", err)
		}
		objs, err := decodeManifests(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// decodeManifests decodes a multi-document YAML (or JSON) stream.
func decodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 0; ; i++ {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("document %d: no apiVersion or kind", i+1)
		}
		out = append(out, u)
	}
}
