package scenario

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateImages checks spec.images; an image derived from a registry or tag already reported is not reported again.
func validateImages(c *collector, p *field.Path, im Images) {
	regOK := validRegistry(c, p.Child("registry"), im.Registry)
	tagOK := validTag(c, p.Child("tag"), im.Tag)
	for _, f := range []struct{ n, v, derived string }{
		{"agent", im.Agent, imageRef(im.Registry, AgentRepository, im.Tag)},
		{"meshbench", im.Meshbench, imageRef(im.Registry, MeshbenchRepository, im.Tag)},
		{"network", im.Network, ""},
	} {
		if f.v == f.derived && !(regOK && tagOK) {
			continue // derived from a registry or tag already reported
		}
		if err := CheckImageRef(f.v); err != nil || f.v == "" || strings.Contains(f.v, "://") {
			c.add(p.Child(f.n), "must be an image reference such as \"registry.example/team/image:v1\" (got %q)%s", f.v, nameErr(err))
		}
	}
	validRegistry(c, p.Child("bankOfAnthos", "registry"), im.BankOfAnthos.Registry)
	validTag(c, p.Child("bankOfAnthos", "tag"), im.BankOfAnthos.Tag)
	validRegistry(c, p.Child("bookinfo", "registry"), im.Bookinfo.Registry)
	validTag(c, p.Child("bookinfo", "tag"), im.Bookinfo.Tag)
	c.oneOf(p.Child("pullPolicy"), im.PullPolicy, []string{"Always", "IfNotPresent", "Never"})
}

// validRegistry checks a registry prefix (host[:port][/path]) by composing an image name under it, as the pods will.
func validRegistry(c *collector, p *field.Path, reg string) bool {
	var err error
	switch {
	case strings.Contains(reg, "://"):
		c.add(p, "must not have a URL scheme (got %q): give host[:port][/path] such as \"ghcr.io/meshbench\"; a plain-HTTP registry is the nodes' container runtime setting (meshbench images push --insecure for pushing)", reg)
		return false
	case reg != "":
		err = CheckImageRef(imageRef(reg, AgentRepository, DefaultImageTag))
	}
	if reg == "" || err != nil {
		c.add(p, "must be a registry host with an optional path, lower-case, without tag, such as \"ghcr.io/meshbench\" or \"172.30.0.1:5000/meshbench\" (got %q)%s", reg, nameErr(err))
		return false
	}
	return true
}

// CheckImageRef parses an image reference with go-containerregistry's name package, then applies the distribution
// reference grammar it leaves out (github.com/distribution/reference v0.5.0 regexp.go; docs/scenario.md), so
// references no runtime pulls ("a//b", "x/y:-tag") are refused.
func CheckImageRef(ref string) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	repo := r.Context()
	for _, c := range strings.Split(repo.RepositoryStr(), "/") {
		if !pathComponentRE.MatchString(c) {
			return fmt.Errorf("path component %q: lower-case letters and digits, separated by '.', '_', '__' or '-'", c)
		}
	}
	if t, ok := r.(name.Tag); ok && !tagRE.MatchString(t.TagStr()) {
		return fmt.Errorf("tag %q: letters, digits, '_', '.' and '-', not starting with '.' or '-'", t.TagStr())
	}
	if reg := repo.RegistryStr(); !registryRE.MatchString(reg) {
		return fmt.Errorf("registry %q: a host name or IP address with an optional port", reg)
	} else if _, port, ok := strings.Cut(strings.TrimPrefix(reg[strings.LastIndexByte(reg, ']')+1:], "["), ":"); ok {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("registry %q: the port must be a number from 1 to 65535", reg)
		}
	}
	return nil
}

var (
	pathComponentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	registryRE      = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[0-9a-fA-F:.]+\])(?::[0-9]+)?$`)
)

// tagRE is the distribution spec's tag grammar (go-containerregistry's name package checks only the characters).
var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// validTag reports a tag that is not the distribution grammar's (tagRE) and says whether it is valid.
func validTag(c *collector, p *field.Path, tag string) bool {
	if !tagRE.MatchString(tag) {
		c.add(p, "must be an image tag: 1 to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-' (got %q)", tag)
		return false
	}
	return true
}

func nameErr(err error) string {
	if err == nil {
		return ""
	}
	return "; " + err.Error()
}
