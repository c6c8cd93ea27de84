package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

func versionFlags() *flagSet {
	return newFlagSet("version", "", "Print oxy's version: the module version, the commit it was built from and the Go version.")
}

func versionCommand(_ context.Context, env Env, args []string) error {
	fs := versionFlags()
	if err := fs.parse(env, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("version takes no arguments")
	}
	_, err := fmt.Fprintln(env.Stdout, versionString())
	return err
}

// versionString describes the binary from its build information, e.g.
// "oxy v1.2.0 (commit 1a2b3c4d5e6f, 2026-09-29T17:04:12Z) go1.26.8 linux/amd64".
func versionString() string {
	version, commit, when, modified := "(devel)", "", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" {
			version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	var b strings.Builder
	b.WriteString("oxy " + version)
	if commit != "" {
		if len(commit) > 12 {
			commit = commit[:12]
		}
		b.WriteString(" (commit " + commit)
		if modified {
			b.WriteString("+modified")
		}
		if when != "" {
			b.WriteString(", " + when)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, " %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return b.String()
}
