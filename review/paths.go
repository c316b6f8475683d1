package review

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CleanPath checks that p names one file relative to the repository root
// and returns it in canonical form ("./a//b" becomes "a/b"). Absolute
// paths and paths escaping the root are PATH_OUT_OF_SCOPE; malformed ones
// (empty, control characters, backslashes, wildcards) are INVALID_INPUT.
// Validator methods accept wildcard characters in the name of a file the
// change holds; CleanPath alone does not know the change and refuses them.
func CleanPath(field, p string) (string, *ToolError) {
	return cleanPath(field, p, nil)
}

// cleanPath is CleanPath where a name containing *, ? or [ (or Perforce's
// "...") is accepted when inChange reports that its clean form is exactly
// a file of the change: such names are legal in SVN and, escaped as %2A
// and so on, in Perforce. Anything else with those characters is a glob,
// and a glob names no one file.
func cleanPath(field, p string, inChange func(string) bool) (string, *ToolError) {
	const remedy = "give one file path relative to the repository root, with forward slashes, e.g. src/app/main.go"
	switch {
	case strings.TrimSpace(p) == "":
		return "", toolErr(CodeInvalidInput, remedy, "%s is required", field)
	case len(p) > maxPathBytes:
		return "", toolErr(CodeInvalidInput, remedy, "%s is longer than %d bytes", field, maxPathBytes)
	case !utf8.ValidString(p):
		return "", toolErr(CodeInvalidInput, remedy, "%s is not valid UTF-8", field)
	case strings.IndexFunc(p, unicode.IsControl) >= 0:
		return "", toolErr(CodeInvalidInput, remedy, "%s contains control characters", field)
	case strings.Contains(p, `\`):
		return "", toolErr(CodeInvalidInput, remedy, "%s %q contains a backslash", field, p)
	case strings.HasPrefix(p, "/"):
		return "", toolErr(CodePathOutOfScope, remedy, "%s %q is absolute", field, p)
	case hasDriveLetter(p):
		return "", toolErr(CodePathOutOfScope, remedy, "%s %q is absolute", field, p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", toolErr(CodePathOutOfScope, remedy, "%s %q leaves the repository root", field, p)
		}
	}
	clean := path.Clean(p)
	if clean == "." {
		return "", toolErr(CodeInvalidInput, remedy, "%s %q names the repository root, not a file", field, p)
	}
	if hasWildcard(clean) && (inChange == nil || !inChange(clean)) {
		return "", toolErr(CodeInvalidInput, remedy+"; a name with *, ? or [ must be exactly a file of the change",
			"%s %q contains a wildcard (*, ?, [ or ...) and is not a file of this change", field, p)
	}
	return clean, nil
}

func hasWildcard(p string) bool {
	return strings.ContainsAny(p, "*?[") || strings.Contains(p, "...")
}

func hasDriveLetter(p string) bool {
	return len(p) >= 2 && p[1] == ':' && ((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z'))
}

// maxSourceBytes bounds what ReadSource reads of one file; the change's
// files are bounded by the adapters' max_file_bytes long before this.
const maxSourceBytes = 64 << 20

// ReadSource reads rel (slash-separated, as the change names files) from
// srcDir, the run's src/ directory, and never from outside it: a symlink
// that leads out of srcDir (a committed svn symlink, or a hostile change)
// and any ".." are refused, while symlinks that stay inside are followed.
// Only regular files are read, so a FIFO cannot block the reader.
func ReadSource(srcDir, rel string) ([]byte, error) {
	root, err := os.OpenRoot(srcDir)
	if err != nil {
		return nil, fmt.Errorf("read source: %w", err)
	}
	defer root.Close()
	name := filepath.FromSlash(rel)
	fi, err := root.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("read source %s: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read source %s: not a regular file (%s)", rel, fi.Mode().Type())
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read source %s: %w", rel, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSourceBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read source %s: %w", rel, err)
	}
	if len(data) > maxSourceBytes {
		return nil, fmt.Errorf("read source %s: larger than %d bytes", rel, maxSourceBytes)
	}
	return data, nil
}

// readLines returns nil for unreadable files: a fingerprint then falls back
// to the line number rather than failing the call.
func readLines(srcDir, rel string) []string {
	data, err := ReadSource(srcDir, rel)
	if err != nil {
		return nil
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}
