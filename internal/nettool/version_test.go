package nettool

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseToolVersions(t *testing.T) {
	t.Parallel()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if v, err := ParseIperf3Version(read("iperf3-version-full.txt")); err != nil || v != "3.12" {
		t.Errorf("iperf3 3.12 --version: %q, %v", v, err)
	}
	if v, err := ParseNetperfVersion(read("netperf-version.txt")); err != nil || v != "2.7.1" {
		t.Errorf("netperf -V: %q, %v", v, err)
	}
	for _, bad := range []string{"", "sh: iperf3: not found", "iperf x"} {
		if v, err := ParseIperf3Version([]byte(bad)); err == nil {
			t.Errorf("ParseIperf3Version(%q) = %q, want an error", bad, v)
		}
	}
	for _, bad := range []string{"", "netperf: invalid option -- 'V'", "Netperf version "} {
		if v, err := ParseNetperfVersion([]byte(bad)); err == nil {
			t.Errorf("ParseNetperfVersion(%q) = %q, want an error", bad, v)
		}
	}
}
