package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"k8s.io/utils/clock"
)

// Annotations of the archive's index.json entries.
const (
	// annotationImageName is containerd's image name annotation: the importer names the image record after it.
	annotationImageName = "io.containerd.image.name"
	// annotationRefName is the OCI layout's reference name (the tag), for tools that read only the OCI standard.
	annotationRefName = "org.opencontainers.image.ref.name"
)

// PushOptions configure Push.
type PushOptions struct {
	// Keychain finds credentials; nil is authn.DefaultKeychain (the Docker config: $DOCKER_CONFIG/config.json,
	// ~/.docker/config.json and its credential helpers, as `docker login` and `crane auth login` write them).
	Keychain authn.Keychain
	// Insecure allows plain HTTP and unverified TLS to the registry (crane's --insecure).
	Insecure bool
	// Transport replaces remote.DefaultTransport (tests).
	Transport http.RoundTripper
	// Progress receives a line when each image starts and ends pushing, and one every Heartbeat while it pushes,
	// with the bytes sent or found in the registry so far; nil is silent.
	Progress io.Writer
	// Heartbeat is the interval of the "still pushing" lines; 0 is defaultHeartbeat.
	Heartbeat time.Duration
	// Clock times the steps and the heartbeat; nil is the wall clock.
	Clock clock.WithTicker
}

// Push writes every built index to its registry and returns <ref>@<digest> per image, in order.
func Push(ctx context.Context, built []Built, o PushOptions) ([]string, error) {
	opts := remoteOptions(ctx, o.Keychain, o.Transport, o.Insecure)
	var nopts []name.Option
	if o.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	prog := newProgress(o.Progress, o.Heartbeat, o.Clock)
	out := make([]string, 0, len(built))
	for _, b := range built {
		ref, err := name.NewTag(b.Ref, nopts...)
		if err != nil {
			return out, fmt.Errorf("push %s: %w", b.Ref, err)
		}
		prog.printf("pushing %s (%d platforms, %s)\n", b.Ref, len(b.Platforms), HumanBytes(b.Size))
		start := prog.clk.Now()
		if err := pushIndex(ref, b, prog, opts); err != nil {
			return out, fmt.Errorf("push %s: %w%s", b.Ref, err, pushHint(err, ref.Context().RegistryStr()))
		}
		prog.printf("pushed %s@%s in %s\n", b.Ref, b.Digest, prog.clk.Since(start).Round(100*time.Millisecond))
		out = append(out, b.Ref+"@"+b.Digest)
	}
	return out, nil
}

// pushIndex writes one index; while it runs, the heartbeat says how many of its bytes the registry has (sent now, or
// already there: go-containerregistry counts both).
func pushIndex(ref name.Tag, b Built, prog *progress, opts []remote.Option) error {
	if prog.w == nil {
		return remote.WriteIndex(ref, b.index, opts...)
	}
	updates := make(chan v1.Update, 16)
	stop := make(chan struct{})
	stopped := make(chan struct{})
	var mu sync.Mutex
	var last v1.Update
	go func() { // every send happens inside WriteIndex, so stopping after it returns loses nothing that matters
		defer close(stopped)
		for {
			select {
			case u, ok := <-updates:
				if !ok {
					return
				}
				mu.Lock()
				last = u
				mu.Unlock()
			case <-stop:
				return
			}
		}
	}()
	detail := func() string {
		mu.Lock()
		defer mu.Unlock()
		if last.Total == 0 {
			return ""
		}
		return fmt.Sprintf(", %s of %s in the registry", HumanBytes(last.Complete), HumanBytes(last.Total))
	}
	err := prog.during("pushing "+b.Ref, detail, func() error {
		return remote.WriteIndex(ref, b.index, append(opts[:len(opts):len(opts)], remote.WithProgress(updates))...)
	})
	close(stop)
	<-stopped
	return err
}

// pushHint adds the fix for the refusals people hit first.
func pushHint(err error, registry string) string {
	switch classify(err) {
	case errUnauthorized:
		return fmt.Sprintf(" (log in first: docker login %s, or crane auth login %s; credentials are read from the Docker config)", registry, registry)
	}
	return ""
}

// Unreachable reports whether a registry error means no registry answered (dial, DNS, TLS, timeout).
func Unreachable(err error) bool { return classify(err) == errUnreachable }

// remoteOptions are the options every registry call shares.
func remoteOptions(ctx context.Context, kc authn.Keychain, t http.RoundTripper, insecure bool) []remote.Option {
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	if t == nil {
		t = remote.DefaultTransport
		if insecure {
			if ht, ok := remote.DefaultTransport.(*http.Transport); ok {
				c := ht.Clone()
				c.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // --insecure: asked for, and printed
				t = c
			}
		}
	}
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithTransport(t)}
}

// blob is one content-addressed blob of an index.
type blob struct {
	digest v1.Hash
	size   int64
	open   func() (io.ReadCloser, error)
}

// walkBlobs calls fn once per distinct blob reachable from idx: the index manifest, then per platform its manifest,
// config and layers. seen (may be nil) carries deduplication across calls.
func walkBlobs(idx v1.ImageIndex, seen map[v1.Hash]bool, fn func(blob) error) error {
	if seen == nil {
		seen = map[v1.Hash]bool{}
	}
	emit := func(d v1.Hash, size int64, open func() (io.ReadCloser, error)) error {
		if seen[d] {
			return nil
		}
		seen[d] = true
		return fn(blob{digest: d, size: size, open: open})
	}
	raw := func(b []byte) func() (io.ReadCloser, error) {
		return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	ib, err := idx.RawManifest()
	if err != nil {
		return err
	}
	id, err := idx.Digest()
	if err != nil {
		return err
	}
	if err := emit(id, int64(len(ib)), raw(ib)); err != nil {
		return err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, m := range im.Manifests {
		img, err := idx.Image(m.Digest)
		if err != nil {
			return err
		}
		mb, err := img.RawManifest()
		if err != nil {
			return err
		}
		if err := emit(m.Digest, int64(len(mb)), raw(mb)); err != nil {
			return err
		}
		cb, err := img.RawConfigFile()
		if err != nil {
			return err
		}
		cn, err := img.ConfigName()
		if err != nil {
			return err
		}
		if err := emit(cn, int64(len(cb)), raw(cb)); err != nil {
			return err
		}
		layers, err := img.Layers()
		if err != nil {
			return err
		}
		for _, l := range layers {
			d, err := l.Digest()
			if err != nil {
				return err
			}
			size, err := l.Size()
			if err != nil {
				return err
			}
			if err := emit(d, size, l.Compressed); err != nil {
				return err
			}
		}
	}
	return nil
}

// archiveIndex is the index.json of the archive of built: one entry per image index, named for containerd (full
// reference) and for OCI tools (tag). It is pure.
func archiveIndex(built []Built) (v1.IndexManifest, error) {
	im := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex}
	for _, b := range built {
		ref, err := name.NewTag(b.Ref)
		if err != nil {
			return im, err
		}
		d, err := v1.NewHash(b.Digest)
		if err != nil {
			return im, fmt.Errorf("%s: digest: %w", b.Ref, err)
		}
		raw, err := b.index.RawManifest()
		if err != nil {
			return im, err
		}
		im.Manifests = append(im.Manifests, v1.Descriptor{MediaType: types.OCIImageIndex, Digest: d, Size: int64(len(raw)),
			Annotations: map[string]string{annotationImageName: ref.Name(), annotationRefName: ref.TagStr()}})
	}
	return im, nil
}

// writeArchive writes one OCI image layout as a tar stream holding every built index, each blob once, with fixed
// mtimes (same images, same bytes); containerd's importer creates one image per index.json entry, named by
// annotationImageName.
func writeArchive(w io.Writer, built []Built) error {
	if len(built) == 0 {
		return errors.New("write archive: no images")
	}
	im, err := archiveIndex(built)
	if err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	index, err := json.Marshal(im)
	if err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	tw := tar.NewWriter(w)
	dir := func(n string) error {
		return tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX})
	}
	file := func(n string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: size, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	if err := file("oci-layout", int64(len(layoutFile)), bytes.NewReader([]byte(layoutFile))); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	if err := file("index.json", int64(len(index)), bytes.NewReader(index)); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	if err := dir("blobs/"); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	algs := map[string]bool{}
	seen := map[v1.Hash]bool{}
	for _, b := range built {
		err := walkBlobs(b.index, seen, func(bl blob) error {
			if !algs[bl.digest.Algorithm] {
				algs[bl.digest.Algorithm] = true
				if err := dir("blobs/" + bl.digest.Algorithm + "/"); err != nil {
					return err
				}
			}
			rc, err := bl.open()
			if err != nil {
				return err
			}
			defer func() { _ = rc.Close() }()
			return file("blobs/"+bl.digest.Algorithm+"/"+bl.digest.Hex, bl.size, rc)
		})
		if err != nil {
			return fmt.Errorf("write archive: %s: %w", b.Ref, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	return nil
}

// layoutFile is the OCI layout marker (image-spec image-layout.md).
const layoutFile = `{"imageLayoutVersion":"1.0.0"}`

// CheckSavePath reports, before minutes of building, whether SaveFile can write path: not empty, not a directory,
// in a directory that exists and this process may write (SaveFile writes a temporary file beside it, then renames).
func CheckSavePath(path string) error {
	if path == "" {
		return errors.New("no archive file: give -o FILE, e.g. -o meshbench-images.tar")
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory: give the archive's file name, e.g. %s", path, filepath.Join(path, "meshbench-images.tar"))
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("%s: the directory %s does not exist (%w); create it or write the archive elsewhere", path, dir, err)
	case !st.IsDir():
		return fmt.Errorf("%s: %s is not a directory; write the archive elsewhere", path, dir)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".check-")
	if err != nil {
		return fmt.Errorf("%s: the directory %s is not writable (%w); write the archive elsewhere", path, dir, err)
	}
	_ = f.Close()
	_ = os.Remove(f.Name())
	return nil
}

// SaveFile writes the archive to path, atomically (a temporary file in the same directory, then a rename), and
// returns its size.
func SaveFile(path string, built []Built) (int64, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return 0, fmt.Errorf("save images: %w", err)
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }() // after the rename there is nothing left to remove
	if err := writeArchive(f, built); err != nil {
		_ = f.Close()
		return 0, err
	}
	st, err := f.Stat()
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("save images: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return 0, fmt.Errorf("save images: %w", err)
	}
	return st.Size(), nil
}
