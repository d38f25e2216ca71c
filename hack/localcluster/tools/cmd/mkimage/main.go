// Command mkimage packs local files into a single-layer linux/amd64 image and writes a docker-archive tarball
// that `ctr images import` accepts. No registry is involved at any point: this is how the local cluster gets
// its images.
//
//	mkimage -ref NAME:TAG -out img.tar [-entrypoint /app] [-cmd a,b] [-user UID[:GID]] [-workdir DIR]
//	        [-env K=V]... [-label K=V]... [-symlinks LINK=TARGET,...] SRC=DST [SRC=DST...]
//
// Every SRC is read (following symlinks) and stored as a regular file at DST. The layer always contains a
// world-writable tmp directory, etc, proc, sys, dev, and a minimal etc/passwd and etc/group unless the caller
// supplies them.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// multiFlag collects a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// epoch is the fixed mtime of every layer entry, so identical inputs give identical image digests.
var epoch = time.Unix(0, 0)

type options struct {
	ref, out, entrypoint, cmd, user, workdir, symlinks string
	env, labels                                        multiFlag
	files                                              []string
}

func main() {
	var o options
	flag.StringVar(&o.ref, "ref", "", "image reference, e.g. meshbench.local/pause:dev (required)")
	flag.StringVar(&o.out, "out", "", "output docker-archive tarball (required)")
	flag.StringVar(&o.entrypoint, "entrypoint", "", "entrypoint, comma separated")
	flag.StringVar(&o.cmd, "cmd", "", "cmd, comma separated")
	flag.StringVar(&o.user, "user", "", "image config user, e.g. 65532:65532")
	flag.StringVar(&o.workdir, "workdir", "", "image config working directory")
	flag.StringVar(&o.symlinks, "symlinks", "", "comma separated LINK=TARGET symlinks")
	flag.Var(&o.env, "env", "extra K=V environment entry (repeatable; PATH is always set)")
	flag.Var(&o.labels, "label", "image config label K=V (repeatable)")
	flag.Parse()
	o.files = flag.Args()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.ref == "" || o.out == "" {
		return errors.New("-ref and -out are required")
	}
	tag, err := name.NewTag(o.ref)
	if err != nil {
		return fmt.Errorf("parse -ref %q: %w", o.ref, err)
	}
	labels, err := keyValues(o.labels)
	if err != nil {
		return fmt.Errorf("-label: %w", err)
	}
	layerTar, err := buildLayer(o.files, splitList(o.symlinks))
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return fmt.Errorf("make layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Created = v1.Time{Time: epoch}
	cf.Config = v1.Config{
		Entrypoint: splitList(o.entrypoint),
		Cmd:        splitList(o.cmd),
		Env:        append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, o.env...),
		User:       o.user,
		WorkingDir: o.workdir,
		Labels:     labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return fmt.Errorf("set config: %w", err)
	}
	if err := tarball.WriteToFile(o.out, tag, img); err != nil {
		return fmt.Errorf("write %s: %w", o.out, err)
	}
	return nil
}

// buildLayer writes the single layer: base directories, the SRC=DST files, then the symlinks.
func buildLayer(files, links []string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	mkdir := func(d string, mode int64) error {
		if d == "" || d == "." || dirs[d] {
			return nil
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: mode, ModTime: epoch})
	}
	parents := func(p string) error {
		parts := strings.Split(strings.Trim(p, "/"), "/")
		for i := 1; i < len(parts); i++ {
			if err := mkdir(strings.Join(parts[:i], "/"), 0o755); err != nil {
				return err
			}
		}
		return nil
	}
	if err := mkdir("tmp", 0o1777); err != nil {
		return nil, err
	}
	for _, d := range []string{"etc", "proc", "sys", "dev", "bin", "usr", "usr/bin", "usr/local", "usr/local/bin"} {
		if err := mkdir(d, 0o755); err != nil {
			return nil, err
		}
	}
	have := map[string]bool{}
	for _, a := range files {
		src, dst, ok := strings.Cut(a, "=")
		if !ok || src == "" || dst == "" {
			return nil, fmt.Errorf("file argument %q is not SRC=DST", a)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		dst = strings.Trim(path.Clean("/"+dst), "/")
		if err := parents(dst); err != nil {
			return nil, err
		}
		if err := writeFile(tw, dst, 0o755, b); err != nil {
			return nil, err
		}
		have[dst] = true
	}
	// A user database so `id`, `whoami` and runAsUser lookups behave; callers may supply their own.
	defaults := map[string]string{
		"etc/passwd": "root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\nnonroot:x:65532:65532:nonroot:/nonexistent:/bin/false\n",
		"etc/group":  "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n",
	}
	for _, f := range sortedKeys(defaults) {
		if !have[f] {
			if err := writeFile(tw, f, 0o644, []byte(defaults[f])); err != nil {
				return nil, err
			}
		}
	}
	for _, l := range links {
		ln, tgt, ok := strings.Cut(l, "=")
		if !ok || ln == "" || tgt == "" {
			return nil, fmt.Errorf("symlink %q is not LINK=TARGET", l)
		}
		ln = strings.Trim(path.Clean("/"+ln), "/")
		if err := parents(ln); err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Name: ln, Linkname: tgt, Typeflag: tar.TypeSymlink, Mode: 0o777, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeFile(tw *tar.Writer, name string, mode int64, b []byte) error {
	h := &tar.Header{Name: name, Mode: mode, Size: int64(len(b)), Typeflag: tar.TypeReg, ModTime: epoch}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err := tw.Write(b)
	return err
}

func keyValues(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not K=V", kv)
		}
		m[k] = v
	}
	return m, nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
