package triggers

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// NotifyCheckEnv, when set, turns `aicr notify svn` into a dry run: it
// checks what it would need (config, secret, spool, log, daemon), writes
// the findings as JSON to the file the variable names, and sends nothing.
// aicr doctor sets it, and only it, when it runs a hook the way svn does:
// the hook forwards nothing but svn's arguments, and svn itself starts
// hooks with an empty environment, so a real commit can never enable it.
const NotifyCheckEnv = "AICR_NOTIFY_CHECK"

// SVNHookInfo is what an installed post-commit hook says about aicr.
type SVNHookInfo struct {
	// HasBlock reports the aicr marker block; the fields below are only
	// set when it is present and its notify line could be read.
	HasBlock   bool
	AicrPath   string
	ConfigPath string
	RepoName   string
	LogFile    string
	// Block is the aicr block, markers included, as written in the hook.
	Block string
	// OtherCommands reports commands outside the aicr block. aicr doctor
	// then runs only the block, so a made-up revision never reaches the
	// admin's own post-commit actions (mailers, mirrors).
	OtherCommands bool
}

// ErrNoNotifyLine means the aicr block holds no recognisable call of
// aicr notify svn or aicr-notify svn, e.g. after hand edits.
var ErrNoNotifyLine = errors.New("the aicr block has no aicr notify svn (or aicr-notify svn) line")

var shLogRE = regexp.MustCompile(`aicr_log=('(?:[^']|'\\'')*')`)

// InspectSVNHook reads the aicr block of a post-commit hook (sh, or cmd
// when windows) back into the paths it runs with.
func InspectSVNHook(script []byte, windows bool) (SVNHookInfo, error) {
	var info SVNHookInfo
	begin, end := SVNHookBegin, SVNHookEnd
	if windows {
		begin, end = SVNHookBeginCmd, SVNHookEndCmd
	}
	lines := splitLines(script)
	bi, ei, err := findMarkers(lines, begin, end)
	if err != nil {
		return info, err
	}
	if bi < 0 {
		return info, nil
	}
	info.HasBlock = true
	block := lines[bi : ei+1]
	info.Block = string(joinLines(block))
	rest := append(append([]string{}, lines[:bi]...), lines[ei+1:]...)
	info.OtherCommands = !onlyBoilerplate(withoutComments(rest))

	found := false
	for _, l := range block {
		l = strings.TrimSpace(strings.TrimSuffix(l, "\r"))
		var words []string
		switch {
		case !windows && strings.HasPrefix(l, "exec "):
			words = splitWords(l, false)[1:]
		case windows && strings.HasPrefix(strings.ToLower(l), "start "):
			// start "" /b "aicr.exe" notify svn ...
			words = splitWords(l, true)
			if len(words) < 3 {
				continue
			}
			words = words[3:]
			for _, w := range words {
				if strings.HasPrefix(w, "2>>") {
					info.LogFile = strings.TrimPrefix(w, "2>>")
				}
			}
		case !windows && strings.Contains(l, "aicr_log="):
			if m := shLogRE.FindStringSubmatch(l); m != nil {
				if w := splitWords(m[1], false); len(w) == 1 {
					info.LogFile = w[0]
				}
			}
			continue
		default:
			continue
		}
		var flags []string
		switch {
		case len(words) >= 3 && words[1] == "notify" && words[2] == "svn":
			flags = words[3:]
		case len(words) >= 2 && IsNotifier(words[0]) && words[1] == "svn":
			flags = words[2:]
		default:
			continue
		}
		found = true
		info.AicrPath = words[0]
		for i := 0; i+1 < len(flags); i++ {
			switch flags[i] {
			case "--config":
				info.ConfigPath = flags[i+1]
			case "--repo":
				info.RepoName = flags[i+1]
			}
		}
	}
	if !found {
		return info, ErrNoNotifyLine
	}
	return info, nil
}

// withoutComments drops comment lines, which onlyBoilerplate would take
// for commands.
func withoutComments(lines []string) []string {
	var out []string
	for _, l := range lines {
		t := strings.ToLower(strings.TrimSpace(strings.TrimSuffix(l, "\r")))
		if (strings.HasPrefix(t, "#") && !strings.HasPrefix(t, "#!")) || strings.HasPrefix(t, "rem ") || t == "rem" || strings.HasPrefix(t, "::") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// splitWords splits one line into words the way the hook's shell would
// for the quoting aicr writes: sh single and double quotes and backslash,
// or cmd double quotes with %% for %. Redirections stay glued to their
// word, which is all the inspector needs.
func splitWords(line string, cmd bool) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'' && !cmd:
			inWord = true
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				cur.WriteString(line[i+1:])
				i = len(line)
				continue
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			j := strings.IndexByte(line[i+1:], '"')
			if j < 0 {
				j = len(line) - i - 1
			}
			s := line[i+1 : i+1+j]
			if cmd {
				s = strings.ReplaceAll(s, "%%", "%")
			}
			cur.WriteString(s)
			i += j + 1
		case c == '\\' && !cmd && i+1 < len(line):
			inWord = true
			cur.WriteByte(line[i+1])
			i++
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// ProbeSpool proves dir is usable the way Spool.Write uses it: create it
// if missing, then create and delete a file in it. The probe carries the
// temp-file prefix so a concurrent drain ignores it.
func ProbeSpool(dir string) error {
	if dir == "" {
		return errors.New("no spool directory configured")
	}
	if err := os.MkdirAll(dir, spoolDirMode); err != nil {
		return fmt.Errorf("create spool dir: %w", err)
	}
	f, err := os.CreateTemp(dir, spoolTmpPrefix+"aicr-doctor-*")
	if err != nil {
		return fmt.Errorf("create a file in the spool dir: %w", err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("delete a file in the spool dir: %w", err)
	}
	return nil
}
