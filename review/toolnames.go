package review

import (
	"fmt"
	"strings"
	"unicode"
)

// ToolNaming selects the names under which the server exposes the tools.
// The dotted names are the contract; underscore aliases exist for clients
// whose model APIs only accept [a-zA-Z0-9_-] in function names.
type ToolNaming string

const (
	// ToolNamingDotted exposes aicr.report_problem, ... (the default).
	ToolNamingDotted ToolNaming = "dotted"
	// ToolNamingUnderscore exposes aicr_report_problem, ... only.
	ToolNamingUnderscore ToolNaming = "underscore"
	// ToolNamingBoth exposes both spellings of every tool (ten tools).
	ToolNamingBoth ToolNaming = "both"
)

// ParseToolNaming accepts "", "dotted", "underscore" and "both".
func ParseToolNaming(s string) (ToolNaming, error) {
	switch n := ToolNaming(strings.ToLower(strings.TrimSpace(s))); n {
	case "":
		return ToolNamingDotted, nil
	case ToolNamingDotted, ToolNamingUnderscore, ToolNamingBoth:
		return n, nil
	}
	return "", fmt.Errorf("tool names %q: want dotted, underscore or both", s)
}

// UnderscoreToolName returns the alias of a canonical tool name
// (aicr.report_problem becomes aicr_report_problem).
func UnderscoreToolName(canonical string) string {
	return strings.Replace(canonical, ".", "_", 1)
}

// exposedNames lists the names registered for canonical under n.
func (n ToolNaming) exposedNames(canonical string) []string {
	switch n {
	case ToolNamingUnderscore:
		return []string{UnderscoreToolName(canonical)}
	case ToolNamingBoth:
		return []string{canonical, UnderscoreToolName(canonical)}
	}
	return []string{canonical}
}

// CanonicalToolName maps the spellings of an aicr tool name that agent
// CLIs and models produce back to the dotted name, and reports whether
// name is an aicr tool at all. Accepted, case- and whitespace-insensitive:
//
//	aicr.report_problem              canonical
//	aicr_report_problem              underscore alias
//	report_problem                   bare tool name
//	mcp__aicr__report_problem        Claude Code: mcp__<server>__<tool>
//	mcp__aicr-output__aicr_report_problem
//	aicr-output_aicr_report_problem  Kilo/OpenCode: <server>_<tool>
//	functions.aicr_report_problem    OpenAI-style transcripts
//
// A prefix is only stripped when each of its parts is "mcp", "functions"
// or a server name containing "aicr", so another server's report_problem
// (mcp__github__report_problem) is not taken for ours.
func CanonicalToolName(name string) (string, bool) {
	s := normalizeToolName(name)
	if s == "" {
		return "", false
	}
	for _, canonical := range ToolNames {
		base := strings.TrimPrefix(canonical, "aicr.")
		if !strings.HasSuffix(s, base) {
			continue
		}
		prefix := s[:len(s)-len(base)]
		if prefix == "" {
			return canonical, true
		}
		if !strings.HasSuffix(prefix, "_") {
			continue
		}
		if toolPrefixOK(strings.TrimSuffix(prefix, "_")) {
			return canonical, true
		}
	}
	return "", false
}

// normalizeToolName lower-cases name and turns every separator a client
// may use between namespace and tool (".", "/", ":", whitespace, runs of
// "_") into a single "_"; "-" is kept because server names contain it.
func normalizeToolName(name string) string {
	var b strings.Builder
	lastSep := true // drops leading separators
	for _, r := range strings.ToLower(name) {
		if r == '.' || r == '/' || r == ':' || r == '_' || unicode.IsSpace(r) {
			if !lastSep {
				b.WriteByte('_')
			}
			lastSep = true
			continue
		}
		b.WriteRune(r)
		lastSep = false
	}
	return strings.TrimSuffix(b.String(), "_")
}

func toolPrefixOK(prefix string) bool {
	for _, part := range strings.Split(prefix, "_") {
		switch {
		case part == "mcp", part == "functions", strings.Contains(part, "aicr"):
		default:
			return false
		}
	}
	return true
}
