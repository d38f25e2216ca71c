// Package version holds the build identity stamped by the Makefile with -ldflags -X, with fallbacks from the Go
// build info so `go install` builds still say something true.
package version

import (
	"runtime"
	"runtime/debug"
)

// Stamped by -ldflags "-X github.com/meshbench/meshbench/internal/version.Version=...".
var (
	Version   = "dev"
	Commit    = ""
	BuildDate = ""
)

// Info is the build identity.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	BuildDate string `json:"buildDate"`
	Platform  string `json:"platform"`
}

// Get returns the build identity; unstamped fields fall back to VCS data embedded by the go command.
func Get() Info {
	i := Info{Version: Version, Commit: Commit, BuildDate: BuildDate, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && i.Commit == "":
				i.Commit = s.Value
			case s.Key == "vcs.time" && i.BuildDate == "":
				i.BuildDate = s.Value
			}
		}
		if i.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
	}
	if i.Commit == "" {
		i.Commit = "unknown"
	}
	if i.BuildDate == "" {
		i.BuildDate = "unknown"
	}
	return i
}
