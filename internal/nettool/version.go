package nettool

import (
	"fmt"
	"strings"
)

// Commands that print the tools' versions; their output is read by ParseIperf3Version and ParseNetperfVersion.
var (
	Iperf3VersionArgs  = []string{"iperf3", "--version"}
	NetperfVersionArgs = []string{"netperf", "-V"}
)

// ParseIperf3Version reads `iperf3 --version`, whose first line is "iperf <version> (cJSON <version>)" (esnet/iperf
// src/main.c, e.g. "iperf 3.12 (cJSON 1.7.15)" from Debian's 3.12, testdata/iperf3-version-full.txt), and returns
// the version ("3.12"). It is pure.
func ParseIperf3Version(out []byte) (string, error) {
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	f := strings.Fields(first)
	if len(f) < 2 || f[0] != "iperf" || !startsWithDigit(f[1]) {
		return "", fmt.Errorf("iperf3 --version printed %q, not \"iperf <version> ...\"", firstLine(out))
	}
	return f[1], nil
}

// ParseNetperfVersion reads `netperf -V`, which prints "Netperf version <version>" (HewlettPackard/netperf
// src/netsh.c, case 'V', at 3bc455b23f90, the commit cloud-bulldozer/k8s-netperf's containers/Containerfile builds;
// its configure.ac says 2.7.1), and returns the version ("2.7.1"). It is pure.
func ParseNetperfVersion(out []byte) (string, error) {
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "Netperf version "); ok && startsWithDigit(v) {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("netperf -V printed %q, not \"Netperf version <version>\"", firstLine(out))
}

func startsWithDigit(s string) bool { return s != "" && s[0] >= '0' && s[0] <= '9' }

func firstLine(out []byte) string {
	l, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return l
}
