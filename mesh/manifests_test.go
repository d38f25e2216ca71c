package mesh

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadManifestsWithoutLeadingSeparator(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Like the Gateway API CRD files: no leading "---"; the second file has two documents and a trailing separator.
	a := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
	b := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n---\n# comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n---\n"
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(a), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := ReadManifests(filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	if len(names) != 3 || names[0] != "a" || names[1] != "b" || names[2] != "c" {
		t.Errorf("objects %v, want [a b c]", names)
	}
	if _, err := decodeManifests([]byte("foo: bar\n")); err == nil {
		t.Error("a document without apiVersion/kind must be an error")
	}
}
