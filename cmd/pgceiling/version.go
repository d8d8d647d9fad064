package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/pgceiling/pgceiling/result"
)

// versionText is what `pgceiling version` prints: the module's version and the VCS
// revision, time and modified flag the Go toolchain stamped into the binary (bi nil, or
// a build without them: result.ToolVersion and what is known).
func versionText(bi *debug.BuildInfo) string {
	version, revision, at, modified := result.ToolVersion, "", "", ""
	goVersion := ""
	if bi != nil {
		goVersion = bi.GoVersion
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
	}
	out := "pgceiling " + version
	if revision != "" {
		if len(revision) > 12 {
			revision = revision[:12]
		}
		out += ", revision " + revision
		if at != "" {
			out += " (" + at + ")"
		}
		if modified == "true" {
			out += ", modified"
		}
	}
	if goVersion != "" {
		out += ", built with " + goVersion
	}
	return out + fmt.Sprintf("; results format %d", result.FormatVersion)
}

func printVersion(w io.Writer) {
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprintln(w, versionText(bi))
}
