package mesh

import (
	"strconv"
	"strings"
)

// istioctlMinKubernetes is istioctl's minimum Kubernetes minor from the Istio release that set it (it moves within
// minors): istioctl/pkg/install/k8sversion/version.go, pinned in testdata/upstream/istio-patches.yaml.
var istioctlMinKubernetes = []struct {
	since string
	minor int
}{{"1.24.0", 28}, {"1.25.1", 29}, {"1.28.2", 30}, {"1.30.0", 32}}

// MinKubernetes returns the minimum Kubernetes minor istioctl's precheck asks for an Istio version, patch included
// ("1.28.2" -> 30, "1.28.1" -> 29); 0 when the version is unknown or older than 1.24. A pre-release counts as its
// release (1.31.0-rc.0 as 1.31.0, "1.31-dev" as 1.31.0).
func MinKubernetes(istioVersion string) int {
	maj, _, ok := parseMajorMinor(istioVersion)
	if !ok || maj != 1 {
		return 0
	}
	minK := 0
	for _, e := range istioctlMinKubernetes {
		if CompareVersions(istioVersion, e.since) >= 0 {
			minK = e.minor
		}
	}
	return minK
}

// parseMajorMinor reads "1.31-dev", "v1.37.2", "1.30.1" as major and minor.
func parseMajorMinor(v string) (int, int, bool) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	maj, err := strconv.Atoi(parts[0])
	if err != nil {
		return 0, 0, false
	}
	mn := parts[1]
	if i := strings.IndexFunc(mn, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		mn = mn[:i]
	}
	minor, err := strconv.Atoi(mn)
	if err != nil {
		return 0, 0, false
	}
	return maj, minor, true
}

func versionAtLeast(v string, major, minor int) bool {
	ma, mi, ok := parseMajorMinor(v)
	return ok && (ma > major || ma == major && mi >= minor)
}

// CompareVersions compares "vX.Y.Z" versions numerically (pre-release suffixes ignored): -1, 0 or 1.
func CompareVersions(a, b string) int {
	pa, pb := versionParts(a), versionParts(b)
	for i := 0; i < 3; i++ {
		switch {
		case pa[i] < pb[i]:
			return -1
		case pa[i] > pb[i]:
			return 1
		}
	}
	return 0
}

func versionParts(v string) [3]int {
	var out [3]int
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	for i, p := range strings.SplitN(v, ".", 3) {
		n, _ := strconv.Atoi(p)
		out[i] = n
	}
	return out
}
