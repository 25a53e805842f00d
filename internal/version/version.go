// Package version reports which stevedore build is running. Release builds set
// Version with -ldflags "-X github.com/stevedore-autoscaler/stevedore/internal/version.Version=v0.1.0";
// other builds report the module version or "devel" with the VCS revision.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release, set at link time.
var Version = ""

// Commit is the VCS revision, set at link time by builds made without the
// repository's history (the image's: its build context has no .git); other
// builds read it from the build information Go records.
var Commit = ""

// Info describes the running build.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the running build's description.
func Get() Info {
	info := Info{Version: Version, Revision: Commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && info.Revision == "" {
				info.Revision = s.Value
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	return info
}

func (i Info) String() string {
	s := "stevedore " + i.Version
	if i.Revision != "" {
		s += " (" + i.Revision + ")"
	}
	return fmt.Sprintf("%s %s %s", s, i.GoVersion, i.Platform)
}
