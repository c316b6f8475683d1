package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/internal/atomicfile"
)

// MCPInstallOptions are the inputs of `aicr mcp install`.
type MCPInstallOptions struct {
	Factory *Factory
	Client  string
	// Servers are the aicr MCP servers to register: review, admin.
	Servers []string
	Write   bool
	// File overrides the client's config file for --write.
	File string
	// Aicr is the aicr binary the client starts.
	Aicr string
}

// mcpClients are the coding agents aicr mcp install knows, with the
// config file --write merges into (relative: in the current directory,
// the project's scope).
var mcpClients = map[string]string{
	"claude-code": ".mcp.json",
	"cursor":      filepath.Join(".cursor", "mcp.json"),
	"opencode":    "opencode.json",
	"codex":       filepath.Join("~", ".codex", "config.toml"),
}

func newCmdMCPInstall(f *Factory, runF func(context.Context, *MCPInstallOptions) error) *cobra.Command {
	opts := &MCPInstallOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "install claude-code|codex|opencode|cursor",
		Short: "Print (or write) a coding agent's registration of aicr's MCP servers",
		Long: `Print the registration of aicr's MCP servers for a coding agent: aicr-review
(aicr mcp review: review sessions of a working copy, shelf or patch) and
aicr-admin (aicr mcp admin: the typed admin tools), both with --config.

With --write the registration is merged into the client's config file, keeping
every other entry: claude-code .mcp.json, cursor .cursor/mcp.json and opencode
opencode.json in the current directory (the project's scope), codex
~/.codex/config.toml. --file names another file. JSON files are rewritten with
sorted keys; in codex's TOML the tables are appended, and an existing aicr
table that differs is left for you to edit (the exact text is printed).`,
		Example: `  aicr mcp install claude-code
  aicr mcp install cursor --write
  aicr mcp install codex --server admin --write`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, ok := mcpClients[args[0]]; !ok {
				return usageErrorf("unknown client %q: want claude-code, codex, opencode or cursor", args[0])
			}
			for _, s := range opts.Servers {
				if s != "review" && s != "admin" {
					return usageErrorf("--server %q: want review or admin", s)
				}
			}
			opts.Client = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return mcpInstallRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringSliceVar(&opts.Servers, "server", []string{"review", "admin"}, "servers to register: review, admin")
	cmd.Flags().BoolVar(&opts.Write, "write", false, "merge the registration into the client's config file")
	cmd.Flags().StringVar(&opts.File, "file", "", "with --write: this config file instead of the client's default")
	cmd.Flags().StringVar(&opts.Aicr, "aicr", "", "the aicr binary the client runs (default: aicr as found on PATH, else this binary)")
	return cmd
}

// mcpEntry is one server as a client starts it.
type mcpEntry struct {
	Name    string
	Command string
	Args    []string
}

func mcpEntries(opts *MCPInstallOptions) ([]mcpEntry, error) {
	bin := opts.Aicr
	if bin == "" {
		// The path as found, not resolved: a /usr/local/bin/aicr symlink
		// keeps working across upgrades.
		if p, err := exec.LookPath("aicr"); err == nil {
			bin, _ = filepath.Abs(p)
		} else if p, err := opts.Factory.Executable(); err == nil {
			bin = p
		} else {
			return nil, fmt.Errorf("cannot tell where aicr is: give --aicr PATH")
		}
	}
	config, err := filepath.Abs(opts.Factory.ConfigPath)
	if err != nil {
		return nil, err
	}
	var out []mcpEntry
	for _, s := range []string{"review", "admin"} {
		if slices.Contains(opts.Servers, s) {
			out = append(out, mcpEntry{Name: "aicr-" + s, Command: bin, Args: []string{"mcp", s, "--config", config}})
		}
	}
	return out, nil
}

// clientEntry is an entry in the client's own JSON shape.
func clientEntry(client string, e mcpEntry) map[string]any {
	if client == "opencode" {
		return map[string]any{"type": "local", "command": append([]string{e.Command}, e.Args...), "enabled": true}
	}
	return map[string]any{"command": e.Command, "args": e.Args}
}

// clientKey is where a JSON client keeps its servers.
func clientKey(client string) string {
	if client == "opencode" {
		return "mcp"
	}
	return "mcpServers"
}

func mcpInstallRun(_ context.Context, opts *MCPInstallOptions) error {
	entries, err := mcpEntries(opts)
	if err != nil {
		return err
	}
	w := opts.Factory.IOStreams.Out
	if !opts.Write {
		return printRegistration(w, opts.Client, entries)
	}
	path := opts.File
	if path == "" {
		path = mcpClients[opts.Client]
	}
	if rest, ok := strings.CutPrefix(path, "~"+string(filepath.Separator)); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("find your home directory for %s: %w (give --file)", path, err)
		}
		path = filepath.Join(home, rest)
	}
	if opts.Client == "codex" {
		err = mergeCodexTOML(path, entries)
	} else {
		err = mergeClientJSON(path, opts.Client, entries)
	}
	if err != nil {
		return err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name)
	}
	fmt.Fprintf(opts.Factory.IOStreams.ErrOut, "registered %s in %s\n", strings.Join(names, ", "), path)
	return nil
}

func printRegistration(w io.Writer, client string, entries []mcpEntry) error {
	switch client {
	case "claude-code":
		for _, e := range entries {
			fmt.Fprintf(w, "claude mcp add %s -- %s\n", e.Name, shellJoin(append([]string{e.Command}, e.Args...)))
		}
		return nil
	case "codex":
		_, err := io.WriteString(w, codexTOML(entries))
		return err
	default:
		servers := map[string]any{}
		for _, e := range entries {
			servers[e.Name] = clientEntry(client, e)
		}
		doc := map[string]any{clientKey(client): servers}
		if client == "opencode" {
			doc["$schema"] = "https://opencode.ai/config.json"
		}
		return writeJSON(w, doc)
	}
}

// mergeClientJSON sets the entries in path's server map, keeping every
// other key; the file is replaced atomically with its mode kept.
func mergeClientJSON(path, client string, entries []mcpEntry) error {
	doc := map[string]any{}
	mode := os.FileMode(0o644)
	switch b, err := os.ReadFile(path); {
	case err == nil:
		if len(bytes.TrimSpace(b)) > 0 {
			if err := json.Unmarshal(b, &doc); err != nil {
				return fmt.Errorf("%s is not JSON (%w): fix it or give --file, or paste the output of aicr mcp install %s by hand", path, err, client)
			}
		}
		if st, err := os.Stat(path); err == nil {
			mode = st.Mode().Perm()
		}
	case errors.Is(err, os.ErrNotExist):
		if client == "opencode" {
			doc["$schema"] = "https://opencode.ai/config.json"
		}
	default:
		return err
	}
	key := clientKey(client)
	servers, ok := doc[key].(map[string]any)
	if doc[key] != nil && !ok {
		return fmt.Errorf("%s: %q is not an object; fix it by hand", path, key)
	}
	if servers == nil {
		servers = map[string]any{}
	}
	for _, e := range entries {
		servers[e.Name] = clientEntry(client, e)
	}
	doc[key] = servers
	var buf bytes.Buffer
	if err := writeJSON(&buf, doc); err != nil {
		return err
	}
	return writeConfigFile(path, buf.Bytes(), mode)
}

func codexTOML(entries []mcpEntry) string {
	var b strings.Builder
	for i, e := range entries {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[mcp_servers.%s]\ncommand = %s\nargs = [", e.Name, tomlString(e.Command))
		for j, a := range e.Args {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(tomlString(a))
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// mergeCodexTOML appends the tables that are missing, so the user's
// comments and layout stay; a table that exists and differs is refused.
func mergeCodexTOML(path string, entries []mcpEntry) error {
	var doc struct {
		MCPServers map[string]struct {
			Command string   `toml:"command"`
			Args    []string `toml:"args"`
		} `toml:"mcp_servers"`
	}
	existing, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if _, err := toml.Decode(string(existing), &doc); err != nil {
		return fmt.Errorf("%s is not valid TOML (%w): fix it, or paste the output of aicr mcp install codex by hand", path, err)
	}
	var missing []mcpEntry
	for _, e := range entries {
		have, ok := doc.MCPServers[e.Name]
		switch {
		case !ok:
			missing = append(missing, e)
		case have.Command != e.Command || !slices.Equal(have.Args, e.Args):
			return fmt.Errorf("%s already has [mcp_servers.%s] with another command; replace it by hand with:\n%s", path, e.Name, codexTOML([]mcpEntry{e}))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	text := string(existing)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if text != "" {
		text += "\n"
	}
	text += codexTOML(missing)
	mode := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return writeConfigFile(path, []byte(text), mode)
}

// writeConfigFile replaces a client's config file atomically, making its
// directory first for a client that has never run.
func writeConfigFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data, mode)
}

// shellJoin quotes what a POSIX shell would split or expand.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@,+", r))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
