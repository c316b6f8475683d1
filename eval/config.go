package eval

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

// Column is one configuration under test: the agent tables of a config
// file, the base config's when no --agent-config overrides them.
type Column struct {
	// Name labels the column in the output: the override file's base
	// name without .toml, or "base".
	Name string `json:"name"`
	// Path is the file the agent tables came from; "" for the default
	// builtin agent.
	Path string `json:"path,omitempty"`

	// agent and sandbox are the [agent] and [sandbox] tables, with the
	// relative paths in them made absolute against their own file.
	agent, sandbox map[string]any
	// aicrBinary is the base config's [daemon] aicr_binary, absolute.
	aicrBinary string
}

// Columns reads the base config (basePath "" is `[agent] kind =
// "builtin"`) and one column per override; with no override the base
// config is the only column. Each override replaces the base's [agent]
// (with [agent.llm]) and, when it has one, [sandbox].
func Columns(basePath string, overrides []string) ([]Column, error) {
	base := Column{Name: "base", Path: basePath, agent: map[string]any{"kind": "builtin"}}
	dataDir := triggers.DefaultDataDir
	if basePath != "" {
		m, err := readTOML(basePath)
		if err != nil {
			return nil, err
		}
		dir := filepath.Dir(absPath(basePath))
		if a, ok := m["agent"].(map[string]any); ok {
			base.agent = a
		}
		base.sandbox, _ = m["sandbox"].(map[string]any)
		if d, ok := m["daemon"].(map[string]any); ok {
			if s, ok := d["data_dir"].(string); ok && s != "" {
				dataDir = inDir(dir, s)
			}
			if s, ok := d["aicr_binary"].(string); ok && s != "" {
				base.aicrBinary = inDir(dir, s)
			}
		}
		absolutize(dir, base.agent, base.sandbox)
	}
	// Agent CLIs were installed under the base's data_dir; the replay's
	// own data_dir must not hide them.
	setCLIInstallDir(base.agent, filepath.Join(dataDir, "agent-clis"))
	if len(overrides) == 0 {
		return []Column{base}, nil
	}
	var cols []Column
	seen := map[string]bool{}
	for _, p := range overrides {
		m, err := readTOML(p)
		if err != nil {
			return nil, err
		}
		for k := range m {
			if k != "agent" && k != "sandbox" {
				return nil, fmt.Errorf("--agent-config %s: [%s]: an agent config holds only [agent], [agent.llm] and [sandbox]", p, k)
			}
		}
		a, ok := m["agent"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("--agent-config %s: no [agent] table", p)
		}
		c := Column{Name: strings.TrimSuffix(filepath.Base(p), ".toml"), Path: p, agent: a, sandbox: base.sandbox, aicrBinary: base.aicrBinary}
		if s, ok := m["sandbox"].(map[string]any); ok {
			c.sandbox = s
		}
		absolutize(filepath.Dir(absPath(p)), c.agent, m["sandbox"])
		setCLIInstallDir(c.agent, filepath.Join(dataDir, "agent-clis"))
		for n := 2; seen[c.Name]; n++ {
			c.Name = fmt.Sprintf("%s-%d", strings.TrimSuffix(filepath.Base(p), ".toml"), n)
		}
		seen[c.Name] = true
		cols = append(cols, c)
	}
	return cols, nil
}

// BuiltinColumn is the column of the builtin agent, for tests and for
// `aicr eval` without a config.
func BuiltinColumn() Column {
	c, _ := Columns("", nil)
	return c[0]
}

// AgentKind is the column's [agent] kind.
func (c Column) AgentKind() string {
	k, _ := c.agent["kind"].(string)
	if k == "" {
		return "builtin"
	}
	return k
}

// Check loads the column's config as a replay would, through the
// daemon's loader, so a mistake in [agent] or [sandbox] is reported
// (file:line) before any case is replayed.
func (c Column) Check() error {
	if c.Path != "" {
		// The file itself first, with a repository added so the loader
		// accepts an agent-only file: its problems keep their lines.
		data, err := os.ReadFile(c.Path)
		if err != nil {
			return fmt.Errorf("read config: %w", err)
		}
		data = append(data, "\n[[repo]]\nname = \"aicr-eval-check\"\nkind = \"svn\"\nurl = \"file:///aicr-eval-check\"\n"...)
		if _, err := config.Parse(c.Path, absPath(c.Path), data); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", "aicr-eval-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	_, err = c.config(dir, []repoSpec{{name: "check", path: filepath.Join(dir, "repo")}})
	return err
}

// repoSpec is one replayed case's scratch repository.
type repoSpec struct{ name, path string }

// config is the column's config for one replay: the agent tables, a
// data_dir of its own and one [[repo]] per case, through the loader the
// daemon uses (defaults, strict decode, validation).
func (c Column) config(dataDir string, repos []repoSpec) (*config.Config, error) {
	daemon := map[string]any{"data_dir": dataDir}
	if c.aicrBinary != "" {
		daemon["aicr_binary"] = c.aicrBinary
	}
	doc := map[string]any{"daemon": daemon, "agent": c.agent}
	if c.sandbox != nil {
		doc["sandbox"] = c.sandbox
	}
	var rs []map[string]any
	for _, r := range repos {
		rs = append(rs, map[string]any{"name": r.name, "kind": "svn", "url": "file://" + r.path, "local_path": r.path})
	}
	doc["repo"] = rs
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(doc); err != nil {
		return nil, fmt.Errorf("column %s: encode config: %w", c.Name, err)
	}
	name := "aicr eval's config of column " + c.Name
	path := filepath.Join(dataDir, "aicr-eval.toml")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return nil, err
	}
	cfg, err := config.Parse(name, path, buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("column %s: %w", c.Name, err)
	}
	return cfg, nil
}

func readTOML(p string) (map[string]any, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	var m map[string]any
	if _, err := toml.Decode(string(data), &m); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return m, nil
}

// absolutize makes the path keys of [agent] and [sandbox] absolute
// against dir, the directory of the file they were written in, as the
// config loader would have.
func absolutize(dir string, agentT map[string]any, sandboxT any) {
	fix := func(t map[string]any, key string) {
		if s, ok := t[key].(string); ok && s != "" {
			t[key] = inDir(dir, s)
		}
	}
	if agentT != nil {
		fix(agentT, "rules_file")
		if l, ok := agentT["llm"].(map[string]any); ok {
			fix(l, "api_key_file")
			fix(l, "headers_file")
		}
		if c, ok := agentT["cli"].(map[string]any); ok {
			fix(c, "install_dir")
		}
	}
	if s, ok := sandboxT.(map[string]any); ok {
		if p, ok := s["podman"].(map[string]any); ok {
			fix(p, "containers_conf")
		}
	}
}

func setCLIInstallDir(agentT map[string]any, dir string) {
	c, ok := agentT["cli"].(map[string]any)
	if !ok {
		c = map[string]any{}
	}
	if s, _ := c["install_dir"].(string); s == "" {
		c["install_dir"] = dir
	}
	agentT["cli"] = c
}

func inDir(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

func absPath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// JudgeConfig is the [agent.llm] table of the config file at path, with
// its relative paths resolved against the file, for the judge.
func JudgeConfig(path string) (llm.Config, error) {
	m, err := readTOML(path)
	if err != nil {
		return llm.Config{}, err
	}
	a, _ := m["agent"].(map[string]any)
	l, ok := a["llm"].(map[string]any)
	if !ok {
		return llm.Config{}, fmt.Errorf("%s: no [agent.llm] table for the judge (the judge talks to a model server; give --judge-config a file with one)", path)
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(l); err != nil {
		return llm.Config{}, err
	}
	var cfg llm.Config
	md, err := toml.Decode(buf.String(), &cfg)
	if err != nil {
		return llm.Config{}, fmt.Errorf("%s: [agent.llm]: %w", path, err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		return llm.Config{}, fmt.Errorf("%s: [agent.llm]: unknown key %q", path, u[0].String())
	}
	return cfg.InDir(filepath.Dir(absPath(path))), nil
}
