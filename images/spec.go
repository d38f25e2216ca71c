package images

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/meshbench/meshbench/internal/inputfile"
	"github.com/meshbench/meshbench/scenario"
)

// Facts about the source tree and the images.
const (
	// ModulePath is the module the source tree must declare.
	ModulePath = "github.com/meshbench/meshbench"
	// sourceURL is org.opencontainers.image.source.
	sourceURL = "https://github.com/meshbench/meshbench"
	// uid and gid run every container (the schedule's pod and the workloads' securityContext use the same).
	uid = 65532
	gid = 65532
	// CACertsPath is where the base layer keeps the CA bundle; Go's crypto/x509 reads it first on Linux.
	CACertsPath = "/etc/ssl/certs/ca-certificates.crt"
	// DefaultCACerts is the build host's bundle (Debian, Ubuntu, Alpine, Arch keep it there).
	DefaultCACerts = "/etc/ssl/certs/ca-certificates.crt"
	// versionPkg receives the -ldflags -X stamps, as in the Makefile.
	versionPkg = ModulePath + "/internal/version"
)

// DefaultPlatforms are the platforms of every index unless asked otherwise.
func DefaultPlatforms() []string { return []string{"linux/amd64", "linux/arm64"} }

// Image is one image meshbench builds: a Go main package and where its binary lives.
type Image struct {
	// Repository is the name under the registry (scenario.AgentRepository, scenario.MeshbenchRepository).
	Repository string `json:"repository"`
	// Package is the main package, relative to the module root.
	Package string `json:"package"`
	// Path is the binary inside the image, also the entrypoint.
	Path        string `json:"path"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

// Agent is meshbench-agent, at the path loadgen.AgentPath names (and on PATH for internal/nettool's AgentBinary).
func Agent() Image {
	return Image{Repository: scenario.AgentRepository, Package: "./cmd/meshbench-agent", Path: "/usr/local/bin/meshbench-agent",
		Title:       "meshbench-agent",
		Description: "meshbench's in-cluster agent: fortio servers of the demo apps, load clients, request/response tests"}
}

// CLI is meshbench itself, which the CronJob of `meshbench schedule` runs.
func CLI() Image {
	return Image{Repository: scenario.MeshbenchRepository, Package: "./cmd/meshbench", Path: "/usr/local/bin/meshbench",
		Title:       "meshbench",
		Description: "meshbench: measures what an Istio data plane costs on a Kubernetes cluster (scheduled runs)"}
}

// all are the images `meshbench images` builds, in the order they are printed and pushed.
func all() []Image { return []Image{Agent(), CLI()} }

// Tag turns a meshbench version into an image tag (the distribution spec's [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}):
// '+' (semver build metadata, Go's "+dirty") becomes '_', any other character outside the set '-', a leading '.' or
// '-' gets a "v" in front, and "" is "dev", internal/version's unstamped value.
func Tag(version string) string {
	if version == "" {
		return scenario.DefaultImageTag
	}
	b := []byte(version)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == '-':
		case c == '+':
			b[i] = '_'
		default:
			b[i] = '-'
		}
	}
	t := string(b)
	if t[0] == '.' || t[0] == '-' {
		t = "v" + t
	}
	if len(t) > 128 {
		t = t[:128]
	}
	return t
}

// ParsePlatforms reads os/arch[/variant] values (the --platform flag, comma lists allowed), in order, without
// duplicates. Only linux platforms that Go cross-compiles to without cgo are accepted.
func ParsePlatforms(values []string) ([]v1.Platform, error) {
	var out []v1.Platform
	seen := map[string]bool{}
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			p, err := v1.ParsePlatform(s)
			if err != nil {
				return nil, fmt.Errorf("platform %q: %w", s, err)
			}
			if _, err := goEnv(*p); err != nil {
				return nil, fmt.Errorf("platform %q: %w", s, err)
			}
			if key := p.String(); !seen[key] {
				seen[key] = true
				out = append(out, *p)
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no platform: give at least one, e.g. linux/amd64")
	}
	return out, nil
}

// goArch reports whether a GOARCH is built for linux images (the architectures Kubernetes nodes run).
func goArch(a string) bool {
	switch a {
	case "amd64", "arm64", "arm", "386", "ppc64le", "s390x", "riscv64":
		return true
	}
	return false
}

// goEnv is the cross-compilation environment of a platform.
func goEnv(p v1.Platform) ([]string, error) {
	if p.OS != "linux" {
		return nil, fmt.Errorf("only linux images are built (got OS %q)", p.OS)
	}
	if !goArch(p.Architecture) {
		return nil, fmt.Errorf("architecture %q: use one of amd64, arm64, arm/v6, arm/v7, 386, ppc64le, s390x, riscv64", p.Architecture)
	}
	env := []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + p.Architecture}
	switch {
	case p.Architecture == "arm":
		switch p.Variant {
		case "v6", "v7":
			env = append(env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
		default:
			return nil, fmt.Errorf("arm needs variant v6 or v7, e.g. linux/arm/v7 (got %q)", p.Variant)
		}
	case p.Architecture == "arm64" && p.Variant != "" && p.Variant != "v8":
		return nil, fmt.Errorf("arm64 variant %q: only v8 (the default) is built", p.Variant)
	case p.Architecture != "arm64" && p.Variant != "":
		return nil, fmt.Errorf("%s has no variants (got %q)", p.Architecture, p.Variant)
	}
	return env, nil
}

// Stamp is the build identity put into the binaries and the labels.
type Stamp struct {
	// Version is the meshbench version (internal/version.Version); the tag is Tag(Version) unless overridden.
	Version string `json:"version"`
	// Commit is the source revision (internal/version.Commit, org.opencontainers.image.revision).
	Commit string `json:"commit"`
	// Created is the image creation time and the binaries' BuildDate.
	Created time.Time `json:"created"`
}

// ldFlags are the Makefile's -X stamps with this identity (BuildDate = Created, so rebuilds are identical).
func (s Stamp) ldFlags() string {
	return strings.Join([]string{
		"-X", versionPkg + ".Version=" + ldValue(s.Version),
		"-X", versionPkg + ".Commit=" + ldValue(s.Commit),
		"-X", versionPkg + ".BuildDate=" + s.Created.UTC().Format(time.RFC3339),
	}, " ")
}

// ldValue keeps a stamp one -ldflags word: the go command splits the flag on spaces.
func ldValue(v string) string {
	if v == "" {
		return "unknown"
	}
	return strings.Join(strings.Fields(v), "_")
}

// Labels are the OCI labels of img's config and the annotations of its index.
func Labels(img Image, s Stamp) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       img.Title,
		"org.opencontainers.image.description": img.Description,
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.revision":    s.Commit,
		"org.opencontainers.image.source":      sourceURL,
		"org.opencontainers.image.created":     s.Created.UTC().Format(time.RFC3339),
	}
}

// CreatedTime picks the creation time: SOURCE_DATE_EPOCH (the reproducible-builds convention) when set, else the
// source commit's time, else the CLI's build date (RFC 3339), else the Unix epoch.
func CreatedTime(sourceDateEpoch string, commitTime time.Time, buildDate string) (time.Time, error) {
	if sourceDateEpoch != "" {
		secs, err := strconv.ParseInt(strings.TrimSpace(sourceDateEpoch), 10, 64)
		if err != nil || secs < 0 {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: must be whole seconds since 1970 (e.g. $(git log -1 --format=%%ct))", sourceDateEpoch)
		}
		return time.Unix(secs, 0).UTC(), nil
	}
	if !commitTime.IsZero() {
		return commitTime.UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339, buildDate); err == nil {
		return t.UTC(), nil
	}
	return time.Unix(0, 0).UTC(), nil
}

// FindSource returns the module root at or above dir: the first directory with a go.mod, which must declare
// ModulePath. The go.mod follows inputfile's rule (an *inputfile.Error otherwise).
func FindSource(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("source directory %q: %w", dir, err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		b, err := inputfile.ReadFile(filepath.Join(d, "go.mod"), inputfile.GoMod)
		switch {
		case err == nil:
			if m := modulePath(b); m != ModulePath {
				return "", fmt.Errorf("%s declares module %q, not %s: run from a meshbench checkout or pass --source DIR", filepath.Join(d, "go.mod"), m, ModulePath)
			}
			return d, nil
		case !errors.Is(err, os.ErrNotExist):
			return "", err
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod in %s or its parents: images are built from meshbench's source; run from a checkout of %s or pass --source DIR", abs, sourceURL)
		}
	}
}

// modulePath is the module directive of a go.mod ("" when there is none).
func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// SourceRevision is the commit and commit time of the git checkout at dir; empty and zero when dir is not a
// checkout or git is not installed (a source tarball builds too, stamped with what the caller knows).
func SourceRevision(ctx context.Context, dir string) (string, time.Time) {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "log", "-1", "--format=%H %ct").Output()
	if err != nil {
		return "", time.Time{}
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return "", time.Time{}
	}
	secs, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return f[0], time.Time{}
	}
	return f[0], time.Unix(secs, 0).UTC()
}
