package images

import (
	"context"
	"errors"
	"fmt"
	"github.com/meshbench/meshbench/internal/verdict"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Status is a check verdict; preflight shows these with its own checks.
type Status = verdict.Status

// Verdicts (internal/verdict).
const (
	StatusOK   = verdict.OK
	StatusWarn = verdict.Warn
	StatusFail = verdict.Fail
)

// Want is one image a command will pull.
type Want struct {
	Ref string `json:"ref"`
	// Field is the scenario field that sets it (spec.images.agent), named in the fix.
	Field string `json:"field,omitempty"`
	// Ours marks the images `meshbench images push` publishes: their fix is to push them.
	Ours bool `json:"ours,omitempty"`
}

// Result is the verdict on one image.
type Result struct {
	Want
	Status Status `json:"status"`
	// Digest is what the reference resolves to now (OK only).
	Digest string `json:"digest,omitempty"`
	// Platforms are an index's platforms; empty for a single-platform manifest.
	Platforms []string `json:"platforms,omitempty"`
	Detail    string   `json:"detail"`
	Fix       string   `json:"fix,omitempty"`
}

// CheckOptions configure Check.
type CheckOptions struct {
	// Keychain finds credentials; nil is authn.DefaultKeychain.
	Keychain authn.Keychain
	// Transport replaces remote.DefaultTransport (tests).
	Transport http.RoundTripper
	// Timeout bounds each image (default 10s): an unreachable registry costs at most this.
	Timeout time.Duration
	// Jobs is how many images are resolved at once (default 4).
	Jobs int
	// NodePlatforms are the nodes' os/arch ("linux/amd64"); an index lacking all of them is a FAIL, lacking some a
	// WARN. Empty: not compared.
	NodePlatforms []string
	// Registry is spec.images.registry, for the fix of our images.
	Registry string
}

// Check resolves every wanted image with a manifest HEAD (and, for an index, a GET of the index for its platforms).
// Results are in the order of wants, duplicates dropped; the run of each is bounded by Timeout, Jobs at a time.
func Check(ctx context.Context, wants []Want, o CheckOptions) []Result {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Jobs <= 0 {
		o.Jobs = 4
	}
	var uniq []Want
	seen := map[string]bool{}
	for _, w := range wants {
		if !seen[w.Ref] {
			seen[w.Ref] = true
			uniq = append(uniq, w)
		}
	}
	out := make([]Result, len(uniq))
	sem := make(chan struct{}, o.Jobs)
	var wg sync.WaitGroup
	for i, w := range uniq {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
				out[i] = checkOne(ctx, w, o)
			case <-ctx.Done():
				out[i] = judge(w, ctx.Err(), o)
			}
		}()
	}
	wg.Wait()
	return out
}

func checkOne(ctx context.Context, w Want, o CheckOptions) Result {
	ref, err := name.ParseReference(w.Ref)
	if err != nil {
		return Result{Want: w, Status: StatusFail, Detail: fmt.Sprintf("%s is not an image reference: %v", w.Ref, err), Fix: "fix " + orImage(w.Field)}
	}
	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	opts := append(remoteOptions(cctx, o.Keychain, o.Transport, false),
		// One quick retry: this is a probe bounded by Timeout, not a pull.
		remote.WithRetryBackoff(remote.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 2}))
	desc, err := remote.Head(ref, opts...)
	if err != nil {
		return judge(w, err, o)
	}
	r := Result{Want: w, Status: StatusOK, Digest: desc.Digest.String()}
	if desc.MediaType.IsIndex() {
		if idx, err := remote.Index(ref, opts...); err == nil {
			if im, err := idx.IndexManifest(); err == nil {
				for _, m := range im.Manifests {
					if m.Platform != nil && m.Platform.OS != "unknown" { // "unknown/unknown" are attestations
						r.Platforms = append(r.Platforms, m.Platform.String())
					}
				}
			}
		}
	}
	r.Detail = desc.Digest.String()
	if len(r.Platforms) > 0 {
		r.Detail += " (" + strings.Join(r.Platforms, ", ") + ")"
		r.Status, r.Fix = platformVerdict(r.Platforms, o.NodePlatforms, w)
		if missing := missingPlatforms(r.Platforms, o.NodePlatforms); len(missing) > 0 {
			r.Detail += "; nodes run " + strings.Join(missing, ", ") + ", which it lacks"
		}
	}
	return r
}

// platformVerdict is FAIL when an index serves none of the nodes' platforms (every pod would fail with "exec format
// error" or "no matching manifest"), WARN when it misses some.
func platformVerdict(have, nodes []string, w Want) (Status, string) {
	missing := missingPlatforms(have, nodes)
	switch {
	case len(missing) == 0:
		return StatusOK, ""
	case len(missing) == len(uniqueStrings(nodes)):
		return StatusFail, fixPlatforms(w, missing)
	default:
		return StatusWarn, "pods on the " + strings.Join(missing, ", ") + " nodes cannot start; " + fixPlatforms(w, missing)
	}
}

func fixPlatforms(w Want, missing []string) string {
	if w.Ours {
		return "build for them: meshbench images push --platform " + strings.Join(missing, ",") + ",... --registry REG"
	}
	return "use an image built for " + strings.Join(missing, ", ") + " in " + orImage(w.Field)
}

func missingPlatforms(have, nodes []string) []string {
	var missing []string
	for _, n := range uniqueStrings(nodes) {
		if !slices.ContainsFunc(have, func(h string) bool { return platformMatches(h, n) }) {
			missing = append(missing, n)
		}
	}
	return missing
}

// platformMatches compares os/arch, ignoring a variant the node does not state (arm64 nodes report no v8).
func platformMatches(have, node string) bool {
	if have == node {
		return true
	}
	h := strings.Split(have, "/")
	n := strings.Split(node, "/")
	return len(h) >= 2 && len(n) == 2 && h[0] == n[0] && h[1] == n[1]
}

func uniqueStrings(vs []string) []string {
	var out []string
	for _, v := range vs {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// errKind is what a registry error means for a run.
type errKind int

const (
	errOther errKind = iota
	errNotFound
	errUnauthorized
	errUnreachable
)

// classify reads a go-containerregistry error: the registry's own answer (transport.Error: status and error codes)
// or no answer at all (dial, DNS, TLS, timeout).
func classify(err error) errKind {
	var te *transport.Error
	if !errors.As(err, &te) {
		return errUnreachable
	}
	for _, d := range te.Errors {
		switch d.Code {
		case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode:
			return errNotFound
		case transport.UnauthorizedErrorCode, transport.DeniedErrorCode:
			return errUnauthorized
		}
	}
	switch te.StatusCode {
	case http.StatusNotFound:
		return errNotFound
	case http.StatusUnauthorized, http.StatusForbidden:
		return errUnauthorized
	}
	return errOther
}

// judge turns a failed resolution into a verdict with its fix.
func judge(w Want, err error, o CheckOptions) Result {
	r := Result{Want: w}
	reg := w.Ref
	if ref, perr := name.ParseReference(w.Ref); perr == nil {
		reg = ref.Context().RegistryStr()
	}
	publish := "set " + orImage(w.Field) + " to an image that exists"
	if w.Ours {
		target := o.Registry
		if target == "" {
			target = "REG"
		}
		publish = fmt.Sprintf("publish it: meshbench images push --registry %s (it builds and pushes the agent and meshbench images of this version), or set spec.images.registry (--image-registry) to a registry that has them", target)
	}
	switch classify(err) {
	case errNotFound:
		r.Status, r.Detail, r.Fix = StatusFail, w.Ref+" not found in "+reg, publish
	case errUnauthorized:
		if anonymousFor(w.Ref, o.Keychain) {
			// No credentials here is not proof the nodes cannot pull: kubelet credential providers (ECR, Artifact
			// Registry), node service accounts and imagePullSecrets give the nodes access a workstation lacks.
			r.Status, r.Detail = StatusWarn, fmt.Sprintf("%s: could not check from here: %s refused anonymous access and the Docker config has no credentials for it; the nodes may pull it with their own credentials", w.Ref, reg)
			r.Fix = fmt.Sprintf("docker login %s to let meshbench check it; make sure the nodes can pull it", reg)
			break
		}
		r.Status, r.Detail = StatusFail, w.Ref+": "+reg+" refused access (unauthorized) with the credentials of the Docker config"
		r.Fix = fmt.Sprintf("docker login %s again with an account that may pull it (meshbench reads the Docker config), and give the nodes pull access; if only the nodes can pull it, skip this check with --skip-image-check; some registries answer unauthorized for images that do not exist: %s", reg, publish)
	case errUnreachable:
		r.Status, r.Detail = StatusWarn, fmt.Sprintf("%s: could not check from here: %v; the nodes may still reach it", w.Ref, err)
		r.Fix = "check that the nodes can pull " + w.Ref
	default:
		r.Status, r.Detail = StatusWarn, fmt.Sprintf("%s: could not check: %v", w.Ref, err)
		r.Fix = "check that the nodes can pull " + w.Ref
	}
	return r
}

// anonymousFor reports whether the keychain has no credentials for ref's registry (the request went out anonymous).
func anonymousFor(ref string, kc authn.Keychain) bool {
	r, err := name.ParseReference(ref)
	if err != nil {
		return false
	}
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	a, err := kc.Resolve(r.Context().Registry)
	return err == nil && a == authn.Anonymous
}

func orImage(field string) string {
	if field == "" {
		return "the image in spec.images"
	}
	return field
}

// failed reports whether any result is a FAIL.
func failed(rs []Result) bool {
	return slices.ContainsFunc(rs, func(r Result) bool { return r.Status == StatusFail })
}
