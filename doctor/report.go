package doctor

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
)

// WriteText prints the report for people: one line per check, its fix
// under it, grouped by repository.
func WriteText(w io.Writer, rep Report) {
	fmt.Fprintf(w, "aicr doctor: %s\n", rep.Config)
	// Grouped by repository in the order each first appears; "" is
	// this host's.
	var order []string
	byGroup := map[string][]Check{}
	for _, c := range rep.Checks {
		if _, ok := byGroup[c.Repo]; !ok {
			order = append(order, c.Repo)
		}
		byGroup[c.Repo] = append(byGroup[c.Repo], c)
	}
	failed := 0
	for _, group := range order {
		if group == "" {
			fmt.Fprintln(w, "this host")
		} else {
			fmt.Fprintf(w, "repo %s\n", group)
		}
		for _, c := range byGroup[group] {
			mark := "✓"
			switch {
			case c.Status == StatusWarn:
				mark = "!"
			case c.Failed():
				mark = "✗"
				failed++
			}
			fmt.Fprintf(w, "  %s %s: %s\n", mark, c.Name, c.Detail)
			if c.Status != StatusOK && c.Fix != "" {
				fmt.Fprintf(w, "      fix: %s\n", c.Fix)
			}
		}
	}
	if failed == 0 {
		fmt.Fprintln(w, "all checks passed")
	} else {
		fmt.Fprintf(w, "%d check(s) failed\n", failed)
	}
}

// logSince returns what was appended to path after offset, on one line
// and bounded, since a log of many hooks can be long.
func logSince(path string, offset int64) string {
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(f, 2048))
	return oneLine(string(b))
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// shellQuote quotes s for the fix lines people paste into a shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-:@+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
