package bundle

import (
	"embed"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/aicr-dev/aicr/agent/prompt"
)

// builtinSkills are aicr's protected skills: they describe the tool
// contract, so no operator or repository skill may replace them.
//
//go:embed skills/*/SKILL.md
var builtinSkills embed.FS

const (
	repoSkillsPrefix = ".agents/skills/"
	skillFileName    = "SKILL.md"
	agentsFileName   = "AGENTS.md"
)

// skillName follows the Agent Skills naming: short, lower-case words.
var skillName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

type instrSource struct {
	source     string // repo path, "operator rules_file", "builtin"
	bundlePath string
	text       string
}

type instrLayer struct {
	name    string
	heading string
	sources []instrSource
}

// collectInstructions returns the three instruction layers in their
// visible (and precedence) order: protected, operator, repo. Repo files
// are kept only when relevant to the changed paths; inside the repo layer
// .aicr/instructions.md comes first, then AGENTS.md files from the root
// down, so the most specific one is read last.
func collectInstructions(in Input, m *Manifest) []instrLayer {
	protected := instrLayer{name: LayerProtected, heading: "Layer 1: aicr protected rules (built in; they win every conflict)"}
	protected.sources = append(protected.sources, instrSource{source: "builtin", bundlePath: InstructionsDir + "/protected/aicr.md", text: in.Prompt.ProtectedRules()})

	operator := instrLayer{name: LayerOperator, heading: "Layer 2: operator rules ([agent] rules_file)"}
	if rules := strings.TrimSpace(in.OperatorRules); rules != "" {
		text := prompt.Clip(rules, prompt.MaxRulesBytes)
		if text != rules {
			m.Dropped = append(m.Dropped, Dropped{Layer: LayerOperator, Source: "rules_file", Reason: fmt.Sprintf("cut at %d bytes (prompt.MaxRulesBytes)", prompt.MaxRulesBytes)})
		}
		operator.sources = append(operator.sources, instrSource{source: "rules_file", bundlePath: InstructionsDir + "/operator/rules.md", text: text})
	}

	repo := instrLayer{name: LayerRepo, heading: "Layer 3: repository rules (at the reviewed revision; the most specific last)"}
	symlinks := map[string]bool{}
	for _, p := range in.RepoSymlinks {
		symlinks[p] = true
	}
	var agentsFiles []string
	for _, p := range sortedKeys(in.RepoFiles) {
		if err := checkRelName(p); err != nil {
			m.Dropped = append(m.Dropped, Dropped{Layer: LayerRepo, Source: safeQuote(p), Reason: "refused: " + err.Error()})
			continue
		}
		if symlinks[p] {
			m.Dropped = append(m.Dropped, Dropped{Layer: LayerRepo, Source: p, Reason: "refused: a symlink in the repository; never followed"})
			continue
		}
		switch {
		case p == prompt.RepoRulesPath:
			// handled below so it always comes first
		case path.Base(p) == agentsFileName:
			if !relevant(path.Dir(p), in.ChangedPaths) {
				m.Dropped = append(m.Dropped, Dropped{Layer: LayerRepo, Source: p, Reason: "not relevant: its directory is neither the repository root nor an ancestor of a changed path"})
				continue
			}
			agentsFiles = append(agentsFiles, p)
		case strings.HasPrefix(p, repoSkillsPrefix):
			// skills: collectSkills
		default:
			m.Dropped = append(m.Dropped, Dropped{Layer: LayerRepo, Source: p, Reason: "not a repository instruction or skill path"})
		}
	}
	sort.SliceStable(agentsFiles, func(i, j int) bool {
		di, dj := strings.Count(agentsFiles[i], "/"), strings.Count(agentsFiles[j], "/")
		if di != dj {
			return di < dj
		}
		return agentsFiles[i] < agentsFiles[j]
	})
	var repoPaths []string
	if _, ok := in.RepoFiles[prompt.RepoRulesPath]; ok && !symlinks[prompt.RepoRulesPath] {
		repoPaths = append(repoPaths, prompt.RepoRulesPath)
	}
	repoPaths = append(repoPaths, agentsFiles...)
	for _, p := range repoPaths {
		raw := string(in.RepoFiles[p])
		text := strings.TrimSpace(raw)
		if text == "" {
			m.Dropped = append(m.Dropped, Dropped{Layer: LayerRepo, Source: p, Reason: "empty"})
			continue
		}
		clipped := prompt.Clip(text, prompt.MaxRulesBytes)
		if clipped != text {
			m.Dropped = append(m.Dropped, Dropped{Layer: LayerRepo, Source: p, Reason: fmt.Sprintf("cut at %d bytes (prompt.MaxRulesBytes)", prompt.MaxRulesBytes)})
		}
		repo.sources = append(repo.sources, instrSource{source: p, bundlePath: InstructionsDir + "/repo/" + p, text: clipped})
	}

	layers := []instrLayer{protected, operator, repo}
	for _, l := range layers {
		for _, s := range l.sources {
			m.Instructions = append(m.Instructions, Source{Layer: l.name, Source: s.source, Path: s.bundlePath})
		}
	}
	return layers
}

// relevant: dir is the root or an ancestor (or the directory) of a
// changed path.
func relevant(dir string, changed []string) bool {
	if dir == "." || dir == "" {
		return true
	}
	for _, c := range changed {
		c = strings.TrimPrefix(path.Clean(strings.ReplaceAll(c, "\\", "/")), "/")
		if strings.HasPrefix(c, dir+"/") {
			return true
		}
	}
	return false
}

// renderAgents writes the merged AGENTS.md: each layer under its own
// heading in precedence order. Operator and repo text is fenced, as in
// the prompt, so it cannot pose as a heading of a higher layer.
func renderAgents(layers []instrLayer) string {
	var s strings.Builder
	s.WriteString("# Instructions for this aicr review\n\n")
	s.WriteString("Three layers follow in precedence order. Where they conflict, the protected rules win; then the most specific repository rule; then the operator rules. Operator and repository rules may add review focus only.\n")
	for _, l := range layers {
		fmt.Fprintf(&s, "\n## %s\n\n", l.heading)
		if len(l.sources) == 0 {
			s.WriteString("(none)\n")
			continue
		}
		for i, src := range l.sources {
			if i > 0 {
				s.WriteString("\n")
			}
			if l.name == LayerProtected {
				s.WriteString(strings.TrimSpace(src.text) + "\n")
				continue
			}
			fmt.Fprintf(&s, "### From %s\n\n", src.source)
			s.WriteString(fence(src.text, "markdown"))
		}
	}
	return s.String()
}

type skill struct {
	name, layer, source string
	body                []byte
}

// collectSkills merges the three skill layers. Precedence for a name that
// more than one layer defines: the protected built-in wins, then the
// repository's (the most specific), then the operator's; the losers are
// recorded as overridden.
func collectSkills(in Input, m *Manifest, files map[string][]byte) error {
	var all []skill
	entries, err := builtinSkills.ReadDir("skills")
	if err != nil {
		return fmt.Errorf("bundle: read built-in skills: %w", err)
	}
	for _, e := range entries {
		b, err := builtinSkills.ReadFile("skills/" + e.Name() + "/" + skillFileName)
		if err != nil {
			return fmt.Errorf("bundle: read built-in skill %s: %w", e.Name(), err)
		}
		all = append(all, skill{name: e.Name(), layer: LayerProtected, source: "builtin", body: b})
	}
	if in.OperatorSkillsDir != "" {
		ops, err := operatorSkills(in.OperatorSkillsDir, m)
		if err != nil {
			return err
		}
		all = append(all, ops...)
	}
	symlinks := map[string]bool{}
	for _, p := range in.RepoSymlinks {
		symlinks[p] = true
	}
	for _, p := range sortedKeys(in.RepoFiles) {
		if !strings.HasPrefix(p, repoSkillsPrefix) || checkRelName(p) != nil || symlinks[p] {
			continue // refused or not a skill: recorded by collectInstructions
		}
		rest := strings.TrimPrefix(p, repoSkillsPrefix)
		name, file, ok := strings.Cut(rest, "/")
		switch {
		case !ok || file != skillFileName:
			m.Dropped = append(m.Dropped, Dropped{Layer: LayerRepo, Source: p, Reason: "not a skill file (only .agents/skills/<name>/SKILL.md is read)"})
		case !skillName.MatchString(name):
			m.Dropped = append(m.Dropped, Dropped{Layer: LayerRepo, Source: p, Reason: "refused: skill name must match " + skillName.String()})
		case len(in.RepoFiles[p]) > MaxSkillBytes:
			m.Dropped = append(m.Dropped, Dropped{Layer: LayerRepo, Source: p, Reason: fmt.Sprintf("dropped: larger than %d bytes", MaxSkillBytes)})
		default:
			all = append(all, skill{name: name, layer: LayerRepo, source: p, body: in.RepoFiles[p]})
		}
	}
	rank := map[string]int{LayerProtected: 0, LayerRepo: 1, LayerOperator: 2}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].name != all[j].name {
			return all[i].name < all[j].name
		}
		return rank[all[i].layer] < rank[all[j].layer]
	})
	var winner skill
	for _, s := range all {
		if s.name == winner.name {
			m.Dropped = append(m.Dropped, Dropped{Layer: s.layer, Source: s.source, Reason: fmt.Sprintf("skill %q overridden by the %s layer's (%s)", s.name, winner.layer, winner.source)})
			continue
		}
		winner = s
		bp := SkillsDir + "/" + s.name + "/" + skillFileName
		files[bp] = s.body
		m.Skills = append(m.Skills, Source{Layer: s.layer, Name: s.name, Source: s.source, Path: bp})
	}
	return nil
}

// operatorSkills reads dir/<name>/SKILL.md. A missing dir is an error
// naming the key; symlinks and bad names are refused and recorded.
func operatorSkills(dir string, m *Manifest) ([]skill, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("bundle: read the operator skills dir %s: %w (fix or unset the skills dir in [agent])", dir, err)
	}
	var out []skill
	for _, e := range entries {
		src := filepath.Join(dir, e.Name(), skillFileName)
		if e.Type()&os.ModeSymlink != 0 {
			m.Dropped = append(m.Dropped, Dropped{Layer: LayerOperator, Source: safeQuote(e.Name()), Reason: "refused: a symlink; never followed"})
			continue
		}
		if !e.IsDir() {
			continue
		}
		if !skillName.MatchString(e.Name()) {
			m.Dropped = append(m.Dropped, Dropped{Layer: LayerOperator, Source: safeQuote(e.Name()), Reason: "refused: skill name must match " + skillName.String()})
			continue
		}
		fi, err := os.Lstat(src)
		if err != nil {
			m.Dropped = append(m.Dropped, Dropped{Layer: LayerOperator, Source: e.Name(), Reason: "no " + skillFileName})
			continue
		}
		if !fi.Mode().IsRegular() {
			m.Dropped = append(m.Dropped, Dropped{Layer: LayerOperator, Source: e.Name() + "/" + skillFileName, Reason: "refused: not a regular file (symlinks are never followed)"})
			continue
		}
		if fi.Size() > MaxSkillBytes {
			m.Dropped = append(m.Dropped, Dropped{Layer: LayerOperator, Source: e.Name() + "/" + skillFileName, Reason: fmt.Sprintf("dropped: larger than %d bytes", MaxSkillBytes)})
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("bundle: read operator skill %s: %w", src, err)
		}
		out = append(out, skill{name: e.Name(), layer: LayerOperator, source: e.Name() + "/" + skillFileName, body: b})
	}
	return out, nil
}

// checkRelName refuses names that could escape the bundle or confuse a
// reader: absolute, .., backslashes, control characters, unclean forms.
func checkRelName(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty path")
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p):
		return fmt.Errorf("absolute path")
	case strings.Contains(p, "\\"):
		return fmt.Errorf("backslash in path")
	case strings.IndexFunc(p, unicode.IsControl) >= 0:
		return fmt.Errorf("control character in path")
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("'..' in path")
		}
	}
	if path.Clean(p) != p {
		return fmt.Errorf("path is not in clean form")
	}
	return nil
}

// safeQuote keeps a refused name readable and on one line in the manifest.
func safeQuote(s string) string {
	q := fmt.Sprintf("%q", s)
	return q[1 : len(q)-1]
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fence wraps content in a fence longer than any backtick run inside it.
func fence(content, info string) string {
	longest, run := 0, 0
	for _, r := range content {
		if r == '`' {
			run++
			if run > longest {
				longest = run
			}
		} else {
			run = 0
		}
	}
	n := 3
	if longest >= n {
		n = longest + 1
	}
	f := strings.Repeat("`", n)
	return f + info + "\n" + strings.TrimRight(content, "\n") + "\n" + f + "\n"
}
