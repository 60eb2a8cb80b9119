// Package buildinfo tells which countersign this is: its module version and
// the commit it was built from, read from the binary's build information
// (debug.ReadBuildInfo), for `countersign version` and the
// countersign_build_info metric.
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Set at link time when the build has no VCS information (a container build
// from a context without .git): -ldflags "-X .../buildinfo.commit=SHA".
var (
	version = ""
	commit  = ""
)

// Info is what the binary knows about its build.
type Info struct {
	Version   string // module version ("(devel)" for a build from a work tree)
	Commit    string // VCS revision, "unknown" when not recorded
	Modified  bool   // built from a work tree with uncommitted changes
	GoVersion string
}

// Read returns the binary's build information.
func Read() Info {
	in := Info{Version: "(devel)", Commit: "unknown"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		in.GoVersion = bi.GoVersion
		if v := bi.Main.Version; v != "" {
			in.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Commit = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		in.Version = version
	}
	if commit != "" && in.Commit == "unknown" {
		in.Commit = commit
	}
	return in
}

// String is one line: "countersign VERSION (commit COMMIT[, modified], GO)".
func (in Info) String() string {
	mod := ""
	if in.Modified {
		mod = ", modified"
	}
	return fmt.Sprintf("countersign %s (commit %s%s, %s)", in.Version, in.Commit, mod, in.GoVersion)
}
