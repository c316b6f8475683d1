package review

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/aicr-dev/aicr/redact"
	"github.com/aicr-dev/aicr/vcs"
)

// Validator checks agent output one item at a time against a change. Each
// call is judged on its own (plus the counts already in the state), so an
// agent gets an actionable error for the call it just made.
type Validator struct {
	change *vcs.Change
	srcDir string
	limits Limits

	mu    sync.Mutex
	lines map[string][]string // src file lines, read once per file
}

// NewValidator returns a validator for change whose new file contents are
// under srcDir (src/<path>).
func NewValidator(change *vcs.Change, srcDir string, limits Limits) *Validator {
	return &Validator{
		change: change,
		srcDir: srcDir,
		limits: limits.WithDefaults(),
		lines:  map[string][]string{},
	}
}

// Limits returns the effective limits.
func (v *Validator) Limits() Limits { return v.limits }

// cleanPath is CleanPath that also accepts names with wildcard
// characters when they are exactly a file of the change.
func (v *Validator) cleanPath(field, p string) (string, *ToolError) {
	return cleanPath(field, p, func(clean string) bool {
		_, ok := v.change.File(clean)
		return ok
	})
}

func toolErr(code, remedy, format string, args ...any) *ToolError {
	return &ToolError{Code: code, Message: fmt.Sprintf(format, args...), Remedy: remedy}
}

var nonKebab = regexp.MustCompile(`[^a-z0-9]+`)

// NormalizeCategory turns a free-form category into lower-case kebab case
// ("Hard Coded_Secret" becomes "hard-coded-secret") so channels and audit
// queries can group by it.
func NormalizeCategory(c string) string {
	return strings.Trim(nonKebab.ReplaceAllString(strings.ToLower(c), "-"), "-")
}

var fingerprintChars = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)

// Problem validates and normalizes one reported problem against the change
// and the problems already in st. A problem whose fingerprint is already
// in st passes (the caller records it as a duplicate) even when the
// problem limit is reached.
func (v *Validator) Problem(p Problem, st *State) (Problem, *ToolError) {
	file, terr := v.cleanPath("file", p.File)
	if terr != nil {
		return p, terr
	}
	p.File = file
	fc, ok := v.change.File(file)
	if !ok {
		return p, toolErr(CodeFileNotInChange, v.changedFilesRemedy(),
			"file %q is not part of this change", file)
	}
	if fc.NodeKind == vcs.NodeDir || fc.Action == vcs.ActionDelete || (len(fc.Added) == 0 && len(fc.Hunks) == 0) {
		why := fc.Skipped
		if why == "" {
			why = string(fc.Action)
		}
		return p, toolErr(CodeLineNotInDiff, v.changedFilesRemedy(),
			"file %q has no new lines to anchor a problem to (%s)", file, why)
	}
	if p.Line < 1 {
		return p, toolErr(CodeInvalidInput, "line is a 1-based line number in the new version of the file",
			"line must be >= 1, got %d", p.Line)
	}
	if !anchorable(fc, p.Line) {
		return p, toolErr(CodeLineNotInDiff, nearestRemedy(fc, p.Line),
			"line %d of %q is not a changed line or inside a diff hunk", p.Line, file)
	}
	if p.EndLine != 0 {
		if p.EndLine < p.Line {
			return p, toolErr(CodeInvalidInput, "omit end_line for a single line, or give end_line >= line",
				"end_line %d is before line %d", p.EndLine, p.Line)
		}
		if !anchorable(fc, p.EndLine) {
			return p, toolErr(CodeLineNotInDiff, nearestRemedy(fc, p.EndLine),
				"end_line %d of %q is not a changed line or inside a diff hunk", p.EndLine, file)
		}
		if p.EndLine == p.Line {
			p.EndLine = 0
		}
	}
	sev := Severity(strings.ToLower(strings.TrimSpace(string(p.Severity))))
	if !sev.Valid() {
		return p, toolErr(CodeInvalidInput, "use one of: "+severityList(),
			"severity %q is not valid", string(p.Severity))
	}
	p.Severity = sev
	cat := NormalizeCategory(p.Category)
	if cat == "" {
		return p, toolErr(CodeInvalidInput, "give a short kebab-case category, e.g. hard-coded-credential, sql-injection, null-dereference",
			"category is required")
	}
	if len(cat) > maxCategoryBytes {
		return p, toolErr(CodeInvalidInput, "use a short category; put details in the message",
			"category is longer than %d bytes", maxCategoryBytes)
	}
	p.Category = cat
	p.Message = strings.TrimSpace(p.Message)
	if p.Message == "" {
		return p, toolErr(CodeInvalidInput, "describe the problem in message", "message is required")
	}
	if len(p.Message) > v.limits.MaxMessageBytes {
		return p, toolErr(CodeInvalidInput, fmt.Sprintf("shorten message to at most %d bytes", v.limits.MaxMessageBytes),
			"message is %d bytes, more than %d", len(p.Message), v.limits.MaxMessageBytes)
	}
	p.Suggestion = strings.TrimSpace(p.Suggestion)
	if len(p.Suggestion) > v.limits.MaxMessageBytes {
		return p, toolErr(CodeInvalidInput, fmt.Sprintf("shorten suggestion to at most %d bytes", v.limits.MaxMessageBytes),
			"suggestion is %d bytes, more than %d", len(p.Suggestion), v.limits.MaxMessageBytes)
	}
	p.Fingerprint = strings.TrimSpace(p.Fingerprint)
	if p.Fingerprint == "" {
		p.Fingerprint = v.Fingerprint(p.File, p.Category, p.Line)
	} else if len(p.Fingerprint) > maxFingerprintBytes || !fingerprintChars.MatchString(p.Fingerprint) {
		return p, toolErr(CodeInvalidInput, "omit fingerprint to let aicr derive one, or use letters, digits and . _ : - only",
			"fingerprint must be at most %d bytes of [A-Za-z0-9._:-]", maxFingerprintBytes)
	}
	// Agent text is published, audited and kept in the state file: a
	// credential the agent quotes is blanked here, once for all of them.
	p.Message, p.Suggestion = redact.Text(p.Message), redact.Text(p.Suggestion)
	if st != nil {
		if st.ProblemIndex(p.Fingerprint) >= 0 {
			return p, nil
		}
		if len(st.Problems) >= v.limits.MaxProblems {
			return p, toolErr(CodeLimitExceeded, "report only the most important problems; stop reporting and publish a summary",
				"at most %d problems may be reported per review", v.limits.MaxProblems)
		}
	}
	return p, nil
}

func anchorable(fc vcs.FileChange, line int) bool {
	return fc.IsAdded(line) || fc.IsCommentable(line)
}

func severityList() string {
	s := make([]string, len(Severities))
	for i, v := range Severities {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// changedFilesRemedy names a few files a problem can be anchored to.
func (v *Validator) changedFilesRemedy() string {
	const max = 5
	var names []string
	n := 0
	for _, f := range v.change.Files {
		if len(f.Added) == 0 && len(f.Hunks) == 0 {
			continue
		}
		n++
		if len(names) < max {
			names = append(names, f.Path)
		}
	}
	if n == 0 {
		return "this change has no files with new lines; use aicr.skip with reason no_reviewable_code"
	}
	r := "anchor problems to a changed file, e.g. " + strings.Join(names, ", ")
	if n > len(names) {
		r += fmt.Sprintf(" (and %d more)", n-len(names))
	}
	return r
}

// nearestRemedy names the changed ranges of fc closest to line.
func nearestRemedy(fc vcs.FileChange, line int) string {
	ranges := append([]vcs.LineRange(nil), fc.Added...)
	if len(ranges) == 0 {
		ranges = append(ranges, fc.Hunks...)
	}
	dist := func(r vcs.LineRange) int {
		switch {
		case line < r.Start:
			return r.Start - line
		case line > r.End:
			return line - r.End
		}
		return 0
	}
	sort.SliceStable(ranges, func(i, j int) bool { return dist(ranges[i]) < dist(ranges[j]) })
	if len(ranges) > 3 {
		ranges = ranges[:3]
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].Start < ranges[j].Start })
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		if r.Start == r.End {
			parts[i] = fmt.Sprint(r.Start)
		} else {
			parts[i] = fmt.Sprintf("%d-%d", r.Start, r.End)
		}
	}
	return fmt.Sprintf("use new-file line numbers of changed lines; nearest changed lines of %s: %s",
		fc.Path, strings.Join(parts, ", "))
}

// Fingerprint derives a stable identity for a problem from its file, its
// category and the text of the line it is anchored to (whitespace
// collapsed). Neither the message nor the line number takes part, so a
// reworded message or a line moved by an unrelated edit keeps the
// fingerprint. When the line's text is unavailable or blank, the line
// number stands in for it.
func (v *Validator) Fingerprint(file, category string, line int) string {
	anchor := strings.Join(strings.Fields(v.sourceLine(file, line)), " ")
	if anchor == "" {
		anchor = fmt.Sprintf("line:%d", line)
	}
	sum := sha256.Sum256([]byte(file + "\x00" + category + "\x00" + anchor))
	return hex.EncodeToString(sum[:])[:fingerprintHexLen]
}

func (v *Validator) sourceLine(file string, line int) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	lines, ok := v.lines[file]
	if !ok {
		lines = readLines(v.srcDir, file)
		v.lines[file] = lines
	}
	if line < 1 || line > len(lines) {
		return ""
	}
	return lines[line-1]
}

// Summary validates one summary against the summaries already in st.
func (v *Validator) Summary(s Summary, st *State) (Summary, *ToolError) {
	s.Title = strings.TrimSpace(s.Title)
	s.Markdown = strings.TrimSpace(s.Markdown)
	if s.Markdown == "" {
		return s, toolErr(CodeInvalidInput, "write the summary in markdown", "markdown is required")
	}
	if len(s.Markdown) > v.limits.MaxSummaryBytes {
		return s, toolErr(CodeInvalidInput, fmt.Sprintf("shorten the summary to at most %d bytes", v.limits.MaxSummaryBytes),
			"markdown is %d bytes, more than %d", len(s.Markdown), v.limits.MaxSummaryBytes)
	}
	if len(s.Title) > maxTitleBytes {
		return s, toolErr(CodeInvalidInput, fmt.Sprintf("shorten the title to at most %d bytes", maxTitleBytes),
			"title is %d bytes, more than %d", len(s.Title), maxTitleBytes)
	}
	if st != nil && len(st.Summaries) >= v.limits.MaxSummaries {
		return s, toolErr(CodeLimitExceeded, "put everything into the summaries already published",
			"at most %d summaries may be published per review", v.limits.MaxSummaries)
	}
	s.Title, s.Markdown = redact.Text(s.Title), redact.Text(s.Markdown)
	return s, nil
}

// Skip validates a skip.
func (v *Validator) Skip(s Skip) (Skip, *ToolError) {
	s.Reason = strings.TrimSpace(s.Reason)
	if s.Reason == "" {
		return s, toolErr(CodeInvalidInput, "give a reason, e.g. lgtm or no_reviewable_code", "reason is required")
	}
	if len(s.Reason) > maxSkipReasonBytes {
		return s, toolErr(CodeInvalidInput, "use a short reason such as lgtm or no_reviewable_code",
			"reason is longer than %d bytes", maxSkipReasonBytes)
	}
	s.Reason = redact.Text(s.Reason)
	return s, nil
}

// ContextRequest validates a request for more context. The path need not
// be part of the change, but it must lie inside the repository and its
// include/exclude (Change.Scope).
func (v *Validator) ContextRequest(r ContextRequest, st *State) (ContextRequest, *ToolError) {
	p, rng, reason, terr := v.request(r.Path, r.Range, r.Reason)
	if terr != nil {
		return r, terr
	}
	r.Path, r.Range, r.Reason = p, rng, reason
	if st != nil && !containsRequest(st.ContextRequests, r.Path, r.Range) && len(st.ContextRequests) >= v.limits.MaxContextRequests {
		return r, toolErr(CodeLimitExceeded, "review with the context you have",
			"at most %d context requests may be made per review", v.limits.MaxContextRequests)
	}
	return r, nil
}

// AttributionRequest validates a blame request, with the same path rules
// as ContextRequest.
func (v *Validator) AttributionRequest(r AttributionRequest, st *State) (AttributionRequest, *ToolError) {
	p, rng, reason, terr := v.request(r.Path, r.Range, r.Reason)
	if terr != nil {
		return r, terr
	}
	r.Path, r.Range, r.Reason = p, rng, reason
	if st != nil && !containsAttribution(st.AttributionRequests, r.Path, r.Range) && len(st.AttributionRequests) >= v.limits.MaxAttributionRequests {
		return r, toolErr(CodeLimitExceeded, "review without further attribution",
			"at most %d attribution requests may be made per review", v.limits.MaxAttributionRequests)
	}
	return r, nil
}

func (v *Validator) request(p string, rng *vcs.LineRange, reason string) (string, *vcs.LineRange, string, *ToolError) {
	clean, terr := v.cleanPath("path", p)
	if terr != nil {
		return p, rng, reason, terr
	}
	if sc := v.change.Scope; sc != nil && !sc.Match(clean) {
		return p, rng, reason, toolErr(CodePathOutOfScope,
			"ask only for files inside the repository's review scope; this file is not reviewed and cannot be read",
			"path %q is outside the repository's include/exclude", clean)
	}
	if rng != nil {
		if rng.Start < 1 {
			return p, rng, reason, toolErr(CodeInvalidInput, "line numbers are 1-based; omit range for the whole file",
				"range.start_line must be >= 1, got %d", rng.Start)
		}
		if rng.End < rng.Start {
			return p, rng, reason, toolErr(CodeInvalidInput, "give end_line >= start_line",
				"range.end_line %d is before range.start_line %d", rng.End, rng.Start)
		}
		rng = &vcs.LineRange{Start: rng.Start, End: rng.End}
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return p, rng, reason, toolErr(CodeInvalidInput, "say what you need it for", "reason is required")
	}
	if len(reason) > v.limits.MaxMessageBytes {
		return p, rng, reason, toolErr(CodeInvalidInput, fmt.Sprintf("shorten reason to at most %d bytes", v.limits.MaxMessageBytes),
			"reason is %d bytes, more than %d", len(reason), v.limits.MaxMessageBytes)
	}
	return clean, rng, redact.Text(reason), nil
}

func sameRange(a, b *vcs.LineRange) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func containsRequest(rs []ContextRequest, p string, rng *vcs.LineRange) bool {
	for _, r := range rs {
		if r.Path == p && sameRange(r.Range, rng) {
			return true
		}
	}
	return false
}

func containsAttribution(rs []AttributionRequest, p string, rng *vcs.LineRange) bool {
	for _, r := range rs {
		if r.Path == p && sameRange(r.Range, rng) {
			return true
		}
	}
	return false
}

// ProblemIndex returns the index of the problem with fingerprint fp, or -1.
func (s *State) ProblemIndex(fp string) int {
	for i, p := range s.Problems {
		if p.Fingerprint == fp {
			return i
		}
	}
	return -1
}
