package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/mcpserver"
	"github.com/switchboardhq/switchboard/panelspec"
)

// versionInfo is what `switchboard version --json` prints. Field names are
// part of the CLI's JSON contract.
type versionInfo struct {
	Module    string    `json:"module"`
	Version   string    `json:"version"`              // module version, "(devel)" when built from a checkout
	Commit    string    `json:"commit,omitempty"`     // vcs.revision stamped by go build
	CommitAt  string    `json:"commitTime,omitempty"` // vcs.time
	Modified  bool      `json:"modified,omitempty"`   // built from a tree with uncommitted changes
	GoVersion string    `json:"goVersion"`
	Platform  string    `json:"platform"`
	Protocols protocols `json:"protocols"`
}

type protocols struct {
	Switchboard string   `json:"switchboard"` // manifests and the browser SDK's wire contract
	MCP         []string `json:"mcp"`         // revisions /mcp negotiates, newest first
	PanelSpec   int      `json:"panelSpec"`
}

// buildVersion reads what the Go toolchain stamped into the binary: the
// module version (set by `go install module@version`) and, for a build
// from a git checkout, the commit — no -ldflags needed.
func buildVersion() versionInfo {
	v := versionInfo{
		Module: "github.com/switchboardhq/switchboard", Version: "(unknown)",
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Protocols: protocols{Switchboard: switchboard.ProtocolVersion, MCP: mcpserver.ProtocolVersions(), PanelSpec: panelspec.Version},
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitAt = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func newVersion(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the build's version, commit, Go version and protocol versions",
		Long: `Print what this binary was built from: the module version (set by
'go install ...@version'; "(devel)" for a build from a checkout), the git commit
and its time when built from a checkout, the Go version, and the protocol
versions it speaks. It does not contact the daemon.`,
		Example: `  switchboard version
  switchboard version --json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := buildVersion()
			if g.json {
				return g.printJSON(v)
			}
			commit := "unknown"
			if v.Commit != "" {
				commit = v.Commit
				if v.CommitAt != "" {
					commit += " (" + v.CommitAt + ")"
				}
				if v.Modified {
					commit += ", with uncommitted changes"
				}
			}
			fmt.Fprintf(g.stdout, "switchboard %s\n", v.Version)
			fmt.Fprintf(g.stdout, "commit:    %s\n", commit)
			fmt.Fprintf(g.stdout, "go:        %s %s\n", v.GoVersion, v.Platform)
			fmt.Fprintf(g.stdout, "protocols: switchboard %s, MCP %s, panel spec v%d\n",
				v.Protocols.Switchboard, strings.Join(v.Protocols.MCP, " "), v.Protocols.PanelSpec)
			return nil
		},
	}
}
