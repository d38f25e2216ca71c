package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"k8s.io/utils/clock"

	"github.com/meshbench/meshbench/internal/inputfile"
)

// Options configure Build.
type Options struct {
	// Source is the module root (FindSource).
	Source string
	// Registry and Tag name the images: <Registry>/<Image.Repository>:<Tag>.
	Registry string
	Tag      string
	// Platforms of every index (ParsePlatforms); empty: DefaultPlatforms.
	Platforms []v1.Platform
	Stamp     Stamp
	// Images to build; empty: All.
	Images []Image
	// CACerts is a PEM bundle copied to CACertsPath; "" builds images without one.
	CACerts string
	// Go is the go command; "" is "go" from PATH.
	Go string
	// Progress receives a line when each binary starts and ends compiling, and one every Heartbeat while it
	// compiles (a cold Go cache makes that minutes); nil is silent.
	Progress io.Writer
	// Heartbeat is the interval of the "still compiling" lines; 0 is defaultHeartbeat.
	Heartbeat time.Duration
	// Clock times the steps and the heartbeat; nil is the wall clock.
	Clock clock.WithTicker
}

// Built is one built image index.
type Built struct {
	Image Image `json:"image"`
	// Ref is <registry>/<repository>:<tag>.
	Ref string `json:"ref"`
	// Digest is the index's digest (what ref@digest pins).
	Digest string `json:"digest"`
	// Size is the bytes of every distinct blob: index, manifests, configs, layers (compressed), i.e. what a push of
	// an empty repository uploads.
	Size      int64          `json:"size"`
	Platforms []PlatformInfo `json:"platforms"`

	index v1.ImageIndex
}

// PlatformInfo is one platform's image in an index.
type PlatformInfo struct {
	Platform string `json:"platform"`
	Digest   string `json:"digest"`
	// Size is what a node pulls for this platform: manifest, config and compressed layers.
	Size int64 `json:"size"`
}

// Index is the built image index.
func (b Built) Index() v1.ImageIndex { return b.index }

// Build compiles every image's binary for every platform and assembles the image indexes in memory. Nothing leaves
// the machine; Push and writeArchive publish the result.
func Build(ctx context.Context, o Options) ([]Built, error) {
	o, err := buildDefaults(o)
	if err != nil {
		return nil, err
	}
	refs := make([]string, len(o.Images))
	for i, img := range o.Images {
		refs[i] = RefOf(o.Registry, img, o.Tag)
	}
	base, err := baseLayer(o.CACerts)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "meshbench-images-")
	if err != nil {
		return nil, fmt.Errorf("build images: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	prog := newProgress(o.Progress, o.Heartbeat, o.Clock)
	out := make([]Built, 0, len(o.Images))
	n, total := 0, len(o.Images)*len(o.Platforms)
	for i, img := range o.Images {
		var plats []v1.Image
		for _, p := range o.Platforms {
			n++
			prog.printf("compiling %s for %s (binary %d of %d)\n", img.Package, p, n, total)
			pi, err := buildPlatform(ctx, o, prog, base, img, p, filepath.Join(tmp, img.Repository+"-"+strings.ReplaceAll(p.String(), "/", "-")))
			if err != nil {
				return nil, err
			}
			plats = append(plats, pi)
		}
		idx, err := assembleIndex(plats, o.Platforms, Labels(img, o.Stamp))
		if err != nil {
			return nil, fmt.Errorf("assemble %s: %w", refs[i], err)
		}
		b, err := describe(img, refs[i], idx)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// buildDefaults fills o's defaults (every image, the default platforms, "go") and refuses what cannot build: no
// source, no Go toolchain, a registry or tag that cannot name an image.
func buildDefaults(o Options) (Options, error) {
	if o.Source == "" {
		return o, errors.New("build images: no source directory")
	}
	if len(o.Images) == 0 {
		o.Images = all()
	}
	if len(o.Platforms) == 0 {
		ps, err := ParsePlatforms(DefaultPlatforms())
		if err != nil {
			return o, err
		}
		o.Platforms = ps
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if _, err := exec.LookPath(o.Go); err != nil {
		return o, fmt.Errorf("build images: the Go toolchain (%q) is not on PATH: the images are compiled from source, install Go first: %w", o.Go, err)
	}
	if err := CheckName(o.Registry, o.Tag); err != nil {
		return o, fmt.Errorf("build images: %w", err)
	}
	return o, nil
}

// baseLayer is the layer every image shares, with the CA bundle read from caCerts ("": none).
func baseLayer(caCerts string) (v1.Layer, error) {
	var certs []byte
	if caCerts != "" {
		b, err := inputfile.ReadFile(caCerts, inputfile.CABundle)
		if err != nil {
			return nil, fmt.Errorf("read CA certificates: %w", err)
		}
		certs = b
	}
	return layerFrom(BaseLayer(certs))
}

// buildPlatform compiles img for p into bin (removed once read) and assembles its image on base.
func buildPlatform(ctx context.Context, o Options, prog *progress, base v1.Layer, img Image, p v1.Platform, bin string) (v1.Image, error) {
	what := fmt.Sprintf("compiling %s for %s", img.Package, p)
	start := prog.clk.Now()
	if err := prog.during(what, nil, func() error { return compile(ctx, o, img, p, bin) }); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", bin, err)
	}
	_ = os.Remove(bin)
	prog.printf("compiled %s for %s (%s, %s)\n", img.Package, p, HumanBytes(int64(len(data))), prog.clk.Since(start).Round(100*time.Millisecond))
	binLayer, err := layerFrom(BinaryLayer(img.Path, data))
	if err != nil {
		return nil, err
	}
	pi, err := platformImage(base, binLayer, img, p, o.Stamp)
	if err != nil {
		return nil, fmt.Errorf("assemble %s for %s: %w", RefOf(o.Registry, img, o.Tag), p, err)
	}
	return pi, nil
}

// CheckName reports a registry prefix or tag that cannot name the images: the registry is host[:port][/path],
// lower-case, without scheme or tag; the tag follows the distribution spec.
func CheckName(registry, tag string) error {
	if strings.Contains(registry, "://") {
		return fmt.Errorf("registry %q: give host[:port][/path] without a scheme, e.g. 172.30.0.1:5000/meshbench (plain HTTP: --insecure)", registry)
	}
	if tag == "" || tag[0] == '.' || tag[0] == '-' {
		return fmt.Errorf("tag %q: must start with a letter, digit or '_'", tag)
	}
	for _, img := range all() {
		if _, err := name.NewTag(RefOf(registry, img, tag)); err != nil {
			return fmt.Errorf("registry %q and tag %q do not name an image: %w", registry, tag, err)
		}
	}
	return nil
}

// RefOf is <registry>/<repository>:<tag> for one of the images.
func RefOf(registry string, img Image, tag string) string {
	return strings.TrimSuffix(registry, "/") + "/" + img.Repository + ":" + tag
}

// compile cross-compiles img's main package for p into out, as the Makefile does plus -trimpath (no build paths
// in the binary, so any checkout builds the same bytes).
func compile(ctx context.Context, o Options, img Image, p v1.Platform, out string) error {
	env, err := goEnv(p)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, o.Go, "build", "-trimpath", "-ldflags", o.Stamp.ldFlags(), "-o", out, img.Package)
	cmd.Dir = o.Source
	cmd.Env = append(os.Environ(), env...) // later entries win: CGO_ENABLED=0 and the target whatever the caller has
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("go build %s for %s: %w", img.Package, p, ctx.Err())
		}
		return fmt.Errorf("go build %s for %s in %s: %w\n%s", img.Package, p, o.Source, err, strings.TrimSpace(output.String()))
	}
	return nil
}

// epoch is the mtime of every layer entry: fixed, so identical inputs give identical layers in any version.
var epoch = time.Unix(0, 0).UTC()

// Files of the base layer. The user database names nonroot (UID) so tools that look the user up work, and root for
// completeness; nobody has a shell.
const (
	passwdFile   = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	groupFile    = "root:x:0:\nnonroot:x:65532:\n"
	nsswitchFile = "hosts: files dns\n" // as distroless: /etc/hosts first, like glibc images
)

// tarEntry is one entry of a layer.
type tarEntry struct {
	name     string
	mode     int64
	uid, gid int
	data     []byte // nil for directories
}

// BaseLayer is the uncompressed tar of the layer every image shares: user database, nsswitch.conf, /home/nonroot,
// /tmp (1777), /usr/local/bin and, when certs is not empty, the CA bundle. It is pure.
func BaseLayer(certs []byte) ([]byte, error) {
	dir := func(n string, mode int64) tarEntry { return tarEntry{name: n + "/", mode: mode} }
	file := func(n, s string) tarEntry { return tarEntry{name: n, mode: 0o644, data: []byte(s)} }
	es := []tarEntry{
		dir("etc", 0o755), file("etc/group", groupFile), file("etc/nsswitch.conf", nsswitchFile), file("etc/passwd", passwdFile),
	}
	if len(certs) > 0 {
		es = append(es, dir("etc/ssl", 0o755), dir("etc/ssl/certs", 0o755),
			tarEntry{name: strings.TrimPrefix(CACertsPath, "/"), mode: 0o644, data: certs})
	}
	es = append(es,
		dir("home", 0o755), tarEntry{name: "home/nonroot/", mode: 0o700, uid: uid, gid: gid},
		dir("tmp", 0o1777),
		dir("usr", 0o755), dir("usr/local", 0o755), dir("usr/local/bin", 0o755),
	)
	return writeTar(es)
}

// BinaryLayer is the uncompressed tar of a layer holding one executable at p. It is pure.
func BinaryLayer(p string, data []byte) ([]byte, error) {
	return writeTar([]tarEntry{{name: strings.TrimPrefix(path.Clean(p), "/"), mode: 0o755, data: data}})
}

func writeTar(es []tarEntry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: epoch, Format: tar.FormatPAX}
		if e.data == nil {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar header %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// layerFrom makes an OCI gzip layer of an uncompressed tar; the compressed bytes are computed once and kept (digest,
// push and archive all read them).
func layerFrom(tarBytes []byte, err error) (v1.Layer, error) {
	if err != nil {
		return nil, fmt.Errorf("make layer: %w", err)
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(tarBytes)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("make layer: %w", err)
	}
	return l, nil
}

// platformImage is one platform's OCI image: base and binary layers, config with entrypoint, user and labels.
func platformImage(base, bin v1.Layer, img Image, p v1.Platform, st Stamp) (v1.Image, error) {
	created := v1.Time{Time: st.Created.UTC()}
	i := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	i, err := mutate.Append(i,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "meshbench images: base (user nonroot 65532, /tmp, CA certificates)", Comment: "shared by every meshbench image"}},
		mutate.Addendum{Layer: bin, History: v1.History{Created: created, CreatedBy: fmt.Sprintf("go build -trimpath %s (CGO_ENABLED=0 GOOS=%s GOARCH=%s)", img.Package, p.OS, p.Architecture)}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := i.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant, cf.Created = p.OS, p.Architecture, p.Variant, created
	cf.Config = v1.Config{
		Entrypoint: []string{img.Path},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=" + CACertsPath},
		User:       fmt.Sprintf("%d:%d", uid, gid),
		WorkingDir: "/",
		Labels:     Labels(img, st),
	}
	return mutate.ConfigFile(i, cf)
}

// assembleIndex is the OCI index over the platform images, annotated with the labels.
func assembleIndex(imgs []v1.Image, plats []v1.Platform, annotations map[string]string) (v1.ImageIndex, error) {
	adds := make([]mutate.IndexAddendum, len(imgs))
	for i, img := range imgs {
		p := plats[i]
		adds[i] = mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}}
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	idx, ok := mutate.Annotations(idx, annotations).(v1.ImageIndex)
	if !ok {
		return nil, errors.New("annotate index: not an index")
	}
	if _, err := idx.Digest(); err != nil { // computes and checks every descriptor now, not at push time
		return nil, err
	}
	return idx, nil
}

// describe sums up a built index: digests, platforms and sizes.
func describe(img Image, ref string, idx v1.ImageIndex) (Built, error) {
	b := Built{Image: img, Ref: ref, index: idx}
	d, err := idx.Digest()
	if err != nil {
		return b, err
	}
	b.Digest = d.String()
	err = walkBlobs(idx, nil, func(bl blob) error {
		b.Size += bl.size
		return nil
	})
	if err != nil {
		return b, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return b, err
	}
	for _, m := range im.Manifests {
		pi := PlatformInfo{Digest: m.Digest.String(), Size: m.Size}
		if m.Platform != nil {
			pi.Platform = m.Platform.String()
		}
		i, err := idx.Image(m.Digest)
		if err != nil {
			return b, err
		}
		mf, err := i.Manifest()
		if err != nil {
			return b, err
		}
		pi.Size += mf.Config.Size
		for _, l := range mf.Layers {
			pi.Size += l.Size
		}
		b.Platforms = append(b.Platforms, pi)
	}
	return b, nil
}

// HumanBytes formats a size for people: 512 B, 12.3 MiB.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
