// Package version holds the build metadata burned into every LCM binary.
//
// The release build sets the variables with -ldflags (see Makefile):
//
//	-X github.com/lcmproject/lcm/internal/version.semver=0.1.0
//	-X github.com/lcmproject/lcm/internal/version.build=17
//	-X github.com/lcmproject/lcm/internal/version.commit=abc1234-dirty
//	-X github.com/lcmproject/lcm/internal/version.buildTime=2026-11-22T02:00:00Z
//
// A plain `go build` falls back to the toolchain's VCS stamp
// (runtime/debug.ReadBuildInfo), so even an ad-hoc binary names its commit.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// Set by -ldflags; empty in a plain go build.
var (
	semver    string
	build     string
	commit    string
	buildTime string
)

// fallbackSemver is used when neither ldflags nor VERSION reach the binary.
// Keep it in step with the VERSION file (a test checks this).
const fallbackSemver = "0.1.0"

// Info is the build metadata of the running binary.
type Info struct {
	Version   string `json:"version"`
	Build     string `json:"build"`
	Commit    string `json:"commit"`
	Dirty     bool   `json:"dirty"`
	BuildTime string `json:"build_time"`
	GoVersion string `json:"go_version"`
}

var (
	once sync.Once
	info Info
)

// Get returns the build metadata, computed once.
func Get() Info {
	once.Do(func() { info = compute(semver, build, commit, buildTime, readVCS) })
	return info
}

type vcsStamp struct {
	revision string
	time     string
	modified bool
	ok       bool
}

func readVCS() vcsStamp {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return vcsStamp{}
	}
	var s vcsStamp
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			s.revision, s.ok = kv.Value, true
		case "vcs.time":
			s.time = kv.Value
		case "vcs.modified":
			s.modified = kv.Value == "true"
		}
	}
	return s
}

func compute(sv, b, c, bt string, vcs func() vcsStamp) Info {
	i := Info{Version: sv, Build: b, Commit: c, BuildTime: bt, GoVersion: runtime.Version()}
	if i.Version == "" {
		i.Version = fallbackSemver
	}
	if i.Build == "" {
		i.Build = "0"
	}
	if i.Commit == "" {
		if s := vcs(); s.ok {
			i.Commit = shortCommit(s.revision)
			if s.modified {
				i.Commit += "-dirty"
			}
			if i.BuildTime == "" {
				i.BuildTime = s.time
			}
		} else {
			i.Commit = "unknown"
		}
	}
	i.Dirty = strings.HasSuffix(i.Commit, "-dirty")
	return i
}

func shortCommit(rev string) string {
	if len(rev) > 7 {
		return rev[:7]
	}
	return rev
}

// String renders the -version line: "<name> <semver> (Build <n>, <commit>)".
func (i Info) String(name string) string {
	return fmt.Sprintf("%s %s (Build %s, %s)", name, i.Version, i.Build, i.Commit)
}
