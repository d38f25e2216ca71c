package images

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// The fake source tree: the real module path and version package, tiny mains. Cross-compiling the real binaries
// for two platforms takes minutes on two cores; one test (TestBuildReal) does it.
const fakeVersionGo = `package version

var (
	Version   = "dev"
	Commit    = ""
	BuildDate = ""
)
`

const fakeMainGo = `package main

import (
	"fmt"

	"github.com/meshbench/meshbench/internal/version"
)

func main() { fmt.Println("%s", version.Version, version.Commit, version.BuildDate) }
`

var testStamp = Stamp{Version: "v9.8.7+dirty", Commit: "0123abc", Created: time.Date(2026, 12, 1, 10, 15, 0, 0, time.UTC)}

func fakeSource(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "meshbench-images-src-")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod":                      "module github.com/meshbench/meshbench\n\ngo 1.26\n",
		"internal/version/version.go": fakeVersionGo,
		"cmd/meshbench-agent/main.go": strings.Replace(fakeMainGo, "%s", markerOf(Agent()), 1),
		"cmd/meshbench/main.go":       strings.Replace(fakeMainGo, "%s", markerOf(CLI()), 1),
	}
	for p, s := range files {
		write(t, filepath.Join(dir, p), s)
	}
	return dir
}

// markerOf is a string only the fake main of img contains.
func markerOf(img Image) string { return "fake-main-of-" + img.Repository + "-end" }

func fakeOptions(src, registry string) Options {
	ps, _ := ParsePlatforms(DefaultPlatforms())
	return Options{Source: src, Registry: registry, Tag: Tag(testStamp.Version), Platforms: ps, Stamp: testStamp,
		CACerts: filepath.Join(src, "go.mod")} // any file stands in for a CA bundle
}

// fake builds the fake tree once per test binary; tests only read the result.
var fake struct {
	once  sync.Once
	src   string
	built []Built
	err   error
}

func fakeBuilt(t *testing.T) (string, []Built) {
	t.Helper()
	fake.once.Do(func() {
		fake.src = fakeSource(t)
		fake.built, fake.err = Build(context.Background(), fakeOptions(fake.src, "registry.example/mb"))
	})
	if fake.err != nil {
		t.Fatal(fake.err)
	}
	return fake.src, fake.built
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fake.src != "" {
		_ = os.RemoveAll(fake.src)
	}
	os.Exit(code)
}

func TestBuildFake(t *testing.T) {
	_, built := fakeBuilt(t)
	if len(built) != 2 || built[0].Ref != "registry.example/mb/meshbench-agent:v9.8.7_dirty" || built[1].Ref != "registry.example/mb/meshbench:v9.8.7_dirty" {
		t.Fatalf("built %+v", built)
	}
	for i, b := range built {
		checkIndex(t, b, testStamp, markerOf(built[1-i].Image), "amd64", "arm64")
	}
	if built[0].Platforms[0].Size >= built[0].Size || built[0].Size <= 0 {
		t.Errorf("sizes: platform %d, total %d", built[0].Platforms[0].Size, built[0].Size)
	}
}

// checkIndex checks one built index the way a node would see it: platforms, config, layers, the ELF binary.
func checkIndex(t *testing.T, b Built, st Stamp, otherMarker string, archs ...string) {
	created := st.Created.UTC().Format(time.RFC3339)
	t.Helper()
	// Not validate.Index: go-containerregistry's mutated images report empty annotation maps where their raw
	// manifests have none, which it counts as a mismatch; the archive and registry tests validate the parsed copies.
	idx := b.Index()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex || im.Annotations["org.opencontainers.image.title"] != b.Image.Title || im.Annotations["org.opencontainers.image.version"] != st.Version {
		t.Errorf("%s: index media type %s, annotations %v", b.Ref, im.MediaType, im.Annotations)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	if len(im.Manifests) != len(archs) {
		t.Fatalf("%s: %d manifests, want %v", b.Ref, len(im.Manifests), archs)
	}
	for i, m := range im.Manifests {
		arch := archs[i]
		if m.Platform == nil || m.Platform.OS != "linux" || m.Platform.Architecture != arch || b.Platforms[i].Platform != "linux/"+arch {
			t.Errorf("%s: manifest %d platform %v", b.Ref, i, m.Platform)
		}
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if cf.Architecture != arch || cf.OS != "linux" || c.User != "65532:65532" || len(c.Entrypoint) != 1 || c.Entrypoint[0] != b.Image.Path ||
			c.Labels["org.opencontainers.image.revision"] != st.Commit || c.Labels["org.opencontainers.image.created"] != created ||
			!cf.Created.Equal(st.Created) {
			t.Errorf("%s %s: config %+v", b.Ref, arch, cf)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 2 {
			t.Fatalf("%s %s: layers %v %v", b.Ref, arch, len(layers), err)
		}
		files := layerFiles(t, layers[1])
		bin, ok := files[strings.TrimPrefix(b.Image.Path, "/")]
		if !ok || len(files) != 1 {
			t.Fatalf("%s %s: binary layer holds %v", b.Ref, arch, keys(files))
		}
		f, err := elf.NewFile(bytes.NewReader(bin))
		if err != nil {
			t.Fatalf("%s %s: binary is not ELF: %v", b.Ref, arch, err)
		}
		if f.Machine != machines[arch] {
			t.Errorf("%s %s: ELF machine %v", b.Ref, arch, f.Machine)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s %s: dynamically linked (PT_INTERP)", b.Ref, arch)
			}
		}
		bi, err := buildinfo.Read(bytes.NewReader(bin))
		if err != nil {
			t.Fatal(err)
		}
		var cgo, trim string
		for _, s := range bi.Settings {
			switch s.Key {
			case "CGO_ENABLED":
				cgo = s.Value
			case "-trimpath":
				trim = s.Value
			}
		}
		if cgo != "0" || trim != "true" {
			t.Errorf("%s %s: CGO_ENABLED=%q trimpath=%q", b.Ref, arch, cgo, trim)
		}
		// With -trimpath the go command leaves -ldflags out of the build info: look for the stamped strings in a
		// binary that links internal/version (the agent does not).
		if bytes.Contains(bin, []byte(versionPkg+".")) && (!bytes.Contains(bin, []byte(st.Version)) || !bytes.Contains(bin, []byte(created))) {
			t.Errorf("%s %s: version %q or build date %s not stamped", b.Ref, arch, st.Version, created)
		}
		if otherMarker != "" && (!bytes.Contains(bin, []byte(markerOf(b.Image))) || bytes.Contains(bin, []byte(otherMarker))) {
			t.Errorf("%s %s: the binary is not %s's main", b.Ref, arch, b.Image.Package)
		}
		base := layerFiles(t, layers[0])
		if !strings.Contains(string(base["etc/passwd"]), "nonroot:x:65532") {
			t.Errorf("%s %s: base layer passwd %q", b.Ref, arch, base["etc/passwd"])
		}
	}
}

func layerFiles(t *testing.T, l v1.Layer) map[string][]byte {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	out := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out[h.Name] = b
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestBuildReproducible: a second build of the same tree and stamp gives the same digests; another stamp does not.
func TestBuildReproducible(t *testing.T) {
	src, built := fakeBuilt(t)
	again, err := Build(context.Background(), fakeOptions(src, "registry.example/mb"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range built {
		if again[i].Digest != built[i].Digest {
			t.Errorf("%s: rebuild digest %s, first %s", built[i].Ref, again[i].Digest, built[i].Digest)
		}
	}
	o := fakeOptions(src, "registry.example/mb")
	o.Images, o.Stamp.Created = []Image{Agent()}, o.Stamp.Created.Add(time.Second)
	later, err := Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if later[0].Digest == built[0].Digest {
		t.Error("a different created time gave the same digest")
	}
	// The base layer is shared by both images and every platform (one copy in registries and on nodes).
	var bases []v1.Hash
	for _, b := range append(built, later...) {
		im, _ := b.Index().IndexManifest()
		for _, m := range im.Manifests {
			img, _ := b.Index().Image(m.Digest)
			ls, _ := img.Layers()
			d, _ := ls[0].Digest()
			bases = append(bases, d)
		}
	}
	for _, d := range bases {
		if d != bases[0] {
			t.Fatalf("base layers differ: %v", bases)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	t.Parallel()
	src := fakeSource(t)
	defer func() { _ = os.RemoveAll(src) }()
	write(t, filepath.Join(src, "cmd", "meshbench", "main.go"), "package main\n\nfunc main() { undefined() }\n")
	o := fakeOptions(src, "registry.example/mb")
	o.Images, o.Platforms = []Image{CLI()}, o.Platforms[:1]
	if _, err := Build(context.Background(), o); err == nil || !strings.Contains(err.Error(), "go build ./cmd/meshbench for linux/amd64") || !strings.Contains(err.Error(), "undefined") {
		t.Errorf("compile error not reported with the compiler's output: %v", err)
	}
	o.Go = "/nonexistent/go"
	if _, err := Build(context.Background(), o); err == nil || !strings.Contains(err.Error(), "is not on PATH") {
		t.Errorf("missing toolchain: %v", err)
	}
	o.Go, o.Registry = "", "Bad Registry"
	if _, err := Build(context.Background(), o); err == nil || !strings.Contains(err.Error(), `registry "Bad Registry"`) {
		t.Errorf("bad registry: %v", err)
	}
}

// staticKeychain answers every registry with one authenticator.
type staticKeychain struct{ auth authn.Authenticator }

func (k staticKeychain) Resolve(authn.Resource) (authn.Authenticator, error) { return k.auth, nil }

var anonymous = staticKeychain{authn.Anonymous}

// authRegistry is go-containerregistry's in-memory registry behind HTTP basic auth u:p.
func authRegistry(t *testing.T) *httptest.Server {
	t.Helper()
	reg := registry.New(registry.Logger(discard()))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "u" || p != "p" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func memRegistry(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(discard())))
	t.Cleanup(srv.Close)
	return srv
}

func host(srv *httptest.Server) string { return strings.TrimPrefix(srv.URL, "http://") }

// rebase names built images under another registry (same content, so the same digests).
func rebase(built []Built, registry string) []Built {
	out := make([]Built, len(built))
	for i, b := range built {
		b.Ref = RefOf(registry, b.Image, Tag(testStamp.Version))
		out[i] = b
	}
	return out
}

func TestPushAndPullBack(t *testing.T) {
	_, built := fakeBuilt(t)
	srv := authRegistry(t)
	reg := host(srv) + "/meshbench"
	pushed := rebase(built, reg)
	if _, err := Push(context.Background(), pushed, PushOptions{Keychain: anonymous}); err == nil || !strings.Contains(err.Error(), "docker login "+host(srv)) {
		t.Fatalf("push without credentials: %v", err)
	}
	creds := staticKeychain{&authn.Basic{Username: "u", Password: "p"}}
	refs, err := Push(context.Background(), pushed, PushOptions{Keychain: creds})
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range pushed {
		if refs[i] != b.Ref+"@"+b.Digest {
			t.Errorf("pushed %q, want %s@%s", refs[i], b.Ref, b.Digest)
		}
		ref, err := name.ParseReference(refs[i])
		if err != nil {
			t.Fatal(err)
		}
		idx, err := remote.Index(ref, remote.WithAuthFromKeychain(creds))
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := idx.Digest(); d.String() != b.Digest {
			t.Errorf("pulled index %s, pushed %s", d, b.Digest)
		}
		arm, err := remote.Image(ref, remote.WithAuthFromKeychain(creds), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "arm64"}))
		if err != nil {
			t.Fatal(err)
		}
		if cf, err := arm.ConfigFile(); err != nil || cf.Architecture != "arm64" || cf.Config.User != "65532:65532" {
			t.Errorf("pulled arm64 config %+v, %v", cf, err)
		}
		if err := validate.Image(arm); err != nil {
			t.Errorf("pulled arm64 image: %v", err)
		}
	}
}

// TestPushInsecure: --insecure reaches a plain-HTTP registry whose name gets no automatic HTTP fallback.
func TestPushInsecure(t *testing.T) {
	_, built := fakeBuilt(t)
	srv := memRegistry(t)
	// registry.invalid is neither loopback nor a private address, so without name.Insecure only https is tried;
	// the dialer sends every connection to the test server.
	_, port, _ := strings.Cut(host(srv), ":")
	reg := "registry.invalid:" + port + "/meshbench"
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, host(srv))
	}}
	pushed := rebase(built[:1], reg)
	if _, err := Push(context.Background(), pushed, PushOptions{Keychain: anonymous, Transport: tr}); err == nil {
		t.Fatal("pushed over plain HTTP without --insecure")
	}
	refs, err := Push(context.Background(), pushed, PushOptions{Keychain: anonymous, Transport: tr, Insecure: true})
	if err != nil || len(refs) != 1 {
		t.Fatalf("insecure push: %v %v", refs, err)
	}
}

func TestArchive(t *testing.T) {
	_, built := fakeBuilt(t)
	var a, b bytes.Buffer
	if err := writeArchive(&a, built); err != nil {
		t.Fatal(err)
	}
	if err := writeArchive(&b, built); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("the archive of the same images differs between two writes")
	}
	dir := t.TempDir()
	names := untar(t, a.Bytes(), dir)
	if names[0] != "oci-layout" || names[1] != "index.json" {
		t.Errorf("archive starts with %v", names[:2])
	}
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Fatalf("index.json has %d entries", len(im.Manifests))
	}
	for i, m := range im.Manifests {
		if m.MediaType != types.OCIImageIndex || m.Digest.String() != built[i].Digest ||
			m.Annotations[annotationImageName] != built[i].Ref || m.Annotations[annotationRefName] != "v9.8.7_dirty" {
			t.Errorf("index.json entry %d: %+v", i, m)
		}
		child, err := root.ImageIndex(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate.Index(child); err != nil { // every blob present with its digest
			t.Errorf("%s in the archive: %v", built[i].Ref, err)
		}
	}
	// One copy of each blob: the shared base layer is stored once.
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("%s twice in the archive", n)
		}
		seen[n] = true
	}
	out := filepath.Join(t.TempDir(), "images.tar")
	size, err := SaveFile(out, built)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(out)
	if err != nil || st.Size() != size || size != int64(a.Len()) {
		t.Errorf("saved %d bytes (stat %v, %v), archive %d", size, st, err, a.Len())
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func untar(t *testing.T, b []byte, dir string) []string {
	t.Helper()
	var names []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		write(t, p, string(data))
	}
}

func TestCheck(t *testing.T) {
	_, built := fakeBuilt(t)
	open, locked := memRegistry(t), authRegistry(t)
	pushed := rebase(built, host(open)+"/meshbench")
	if _, err := Push(context.Background(), pushed, PushOptions{Keychain: anonymous}); err != nil {
		t.Fatal(err)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	gone := host(closed)
	closed.Close()
	wants := []Want{
		{Ref: pushed[0].Ref, Field: "spec.images.agent", Ours: true},
		{Ref: host(open) + "/meshbench/meshbench:nope", Field: "spec.images.meshbench", Ours: true},
		{Ref: host(locked) + "/boa/frontend:v0.6.10", Field: "spec.images.bankOfAnthos"},
		{Ref: gone + "/meshbench/iperf3:dev", Field: "spec.images.network"},
		{Ref: pushed[0].Ref, Field: "spec.images.agent", Ours: true}, // duplicate: checked once
	}
	rs := Check(context.Background(), wants, CheckOptions{Keychain: anonymous, Registry: host(open) + "/meshbench", NodePlatforms: []string{"linux/amd64"}})
	if len(rs) != 4 {
		t.Fatalf("%d results: %+v", len(rs), rs)
	}
	for _, c := range []struct {
		status       Status
		detail, fix  string
		wantPlatform bool
	}{
		{StatusOK, pushed[0].Digest, "", true},
		{StatusFail, "meshbench:nope not found in " + host(open), "meshbench images push --registry " + host(open) + "/meshbench", false},
		{StatusWarn, "refused anonymous access and the Docker config has no credentials for it", "docker login " + host(locked), false},
		{StatusWarn, "could not check from here", "the nodes may", false},
	} {
		r := rs[0]
		rs = rs[1:]
		if r.Status != c.status || !strings.Contains(r.Detail, c.detail) || !strings.Contains(r.Detail+r.Fix, c.fix) || (len(r.Platforms) > 0) != c.wantPlatform {
			t.Errorf("%s: %s %q fix %q platforms %v; want %s with %q and %q", r.Ref, r.Status, r.Detail, r.Fix, r.Platforms, c.status, c.detail, c.fix)
		}
		if r.Status != StatusOK && !strings.Contains(r.Detail, r.Ref) {
			t.Errorf("%s: detail %q does not name the image", r.Ref, r.Detail)
		}
	}
	// With credentials the registry refuses, unauthorized is a FAIL: the configured account may not pull it.
	wrong := staticKeychain{&authn.Basic{Username: "u", Password: "wrong"}}
	if r := Check(context.Background(), wants[2:3], CheckOptions{Keychain: wrong})[0]; r.Status != StatusFail || !strings.Contains(r.Detail, "refused access (unauthorized) with the credentials") {
		t.Errorf("refused credentials: %+v", r)
	}
	if r := Check(context.Background(), wants[2:3], CheckOptions{Keychain: staticKeychain{&authn.Basic{Username: "u", Password: "p"}}})[0]; r.Status != StatusFail || !strings.Contains(r.Detail, "not found") {
		t.Errorf("right credentials, missing image: %+v", r)
	}
	// The nodes' platforms against the index: none present is a FAIL, some missing a WARN.
	for nodes, want := range map[string]Status{"linux/s390x": StatusFail, "linux/arm64,linux/s390x": StatusWarn, "linux/arm64": StatusOK} {
		r := Check(context.Background(), wants[:1], CheckOptions{Keychain: anonymous, NodePlatforms: strings.Split(nodes, ",")})[0]
		if r.Status != want || (want != StatusOK && !strings.Contains(r.Detail, "linux/s390x")) {
			t.Errorf("nodes %s: %s %q %q, want %s", nodes, r.Status, r.Detail, r.Fix, want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := Check(ctx, wants[:1], CheckOptions{Keychain: anonymous}); r[0].Status != StatusWarn {
		t.Errorf("cancelled check: %+v", r[0])
	}
	if !failed([]Result{{Status: StatusOK}, {Status: StatusFail}}) || failed([]Result{{Status: StatusWarn}}) {
		t.Error("Failed")
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want errKind
	}{
		{&transport.Error{StatusCode: http.StatusNotFound}, errNotFound},
		{fmt.Errorf("HEAD: %w", &transport.Error{StatusCode: http.StatusBadRequest, Errors: []transport.Diagnostic{{Code: transport.NameUnknownErrorCode}}}), errNotFound},
		{&transport.Error{StatusCode: http.StatusUnauthorized}, errUnauthorized},
		{&transport.Error{StatusCode: http.StatusForbidden, Errors: []transport.Diagnostic{{Code: transport.DeniedErrorCode}}}, errUnauthorized},
		{&transport.Error{StatusCode: http.StatusInternalServerError}, errOther},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), errUnreachable},
		{context.DeadlineExceeded, errUnreachable},
	} {
		if got := classify(c.err); got != c.want {
			t.Errorf("classify(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func discard() *log.Logger { return log.New(io.Discard, "", 0) }

// TestBuildReal builds the real agent and CLI from this checkout and checks them as nodes would see them. It is the
// slow test of the package: for the host's platform only (-trimpath builds share nothing with the ordinary build
// cache; both platforms cold took 7.5 min on two cores, one 3 to 4), the fake tree covers the second platform.
// MESHBENCH_IMAGES_PLATFORMS=linux/amd64,linux/arm64 builds more.
func TestBuildReal(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compiles the real binaries")
	}
	src, err := FindSource(".")
	if err != nil {
		t.Fatal(err)
	}
	plats := os.Getenv("MESHBENCH_IMAGES_PLATFORMS")
	if plats == "" {
		plats = "linux/" + runtime.GOARCH
	}
	ps, err := ParsePlatforms([]string{plats})
	if err != nil {
		t.Fatal(err)
	}
	st := Stamp{Version: "v0.0.0-test", Commit: "test", Created: time.Unix(1764547200, 0).UTC()}
	start := time.Now()
	built, err := Build(context.Background(), Options{Source: src, Registry: "registry.example/mb", Tag: "test", Platforms: ps, Stamp: st,
		Progress: logWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built the real images in %s", time.Since(start).Round(time.Second))
	for _, b := range built {
		var archs []string
		for _, p := range ps {
			archs = append(archs, p.Architecture)
		}
		checkIndex(t, b, st, "", archs...)
		t.Logf("%s %s %s", b.Ref, b.Digest, HumanBytes(b.Size))
		for _, p := range b.Platforms {
			t.Logf("  %s %s %s", p.Platform, p.Digest, HumanBytes(p.Size))
		}
	}
}

// logWriter sends progress lines to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// TestPushTLSVerification: a registry behind a self-signed certificate (httptest's) is refused by default and
// reached with Insecure (issue 15 section 3). No Transport is passed, so Push's own default transport and its
// --insecure TLS configuration are what is tested.
func TestPushTLSVerification(t *testing.T) {
	_, built := fakeBuilt(t)
	srv := httptest.NewUnstartedServer(registry.New(registry.Logger(discard())))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pushed := rebase(built[:1], strings.TrimPrefix(srv.URL, "https://")+"/meshbench")
	_, err := Push(context.Background(), pushed, PushOptions{Keychain: anonymous})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("self-signed registry without Insecure: %v, want a certificate error", err)
	}
	refs, err := Push(context.Background(), pushed, PushOptions{Keychain: anonymous, Insecure: true})
	if err != nil || len(refs) != 1 || refs[0] != pushed[0].Ref+"@"+pushed[0].Digest {
		t.Fatalf("insecure push: %v %v", refs, err)
	}
}
