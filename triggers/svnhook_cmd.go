package triggers

import (
	"strings"
)

// svnCmdHookBlock is the aicr part of a Windows post-commit.cmd. Like the
// POSIX block it uses absolute paths, sets its own LC_ALL (the service
// runs hooks with a bare environment) and detaches with `start "" /b`
// with its streams redirected, so the committing client never waits for
// the daemon. The file always ends in `exit /b 0`.
func svnCmdHookBlock(o SVNHookOptions) string {
	lines := []string{
		SVNHookBeginCmd,
		"REM Written by aicr; reinstalling replaces everything between these markers.",
		"REM The server runs hooks with a bare environment and waits for their output,",
		"REM so this sets LC_ALL and starts aicr detached; the commit never waits for aicr.",
		"setlocal",
		"set LC_ALL=C.UTF-8",
		`start "" /b ` + cmdQuote(o.AicrPath) + " " + NotifyCommand(o.AicrPath, KindSVN) + " --config " + cmdQuote(o.ConfigPath) +
			" --repo " + cmdQuote(o.RepoName) + ` "%~1" "%~2" "%~3" <NUL >NUL 2>>` + cmdQuote(o.LogFile),
		"endlocal",
		SVNHookEndCmd,
	}
	return strings.Join(lines, "\r\n") + "\r\n"
}

// cmdQuote double-quotes s for cmd.exe; '%' is doubled so a path holding
// one is not expanded as a variable.
func cmdQuote(s string) string {
	return `"` + strings.ReplaceAll(s, "%", "%%") + `"`
}

// mergeCmdHook returns the .cmd hook with block in it: replacing an old
// block, else before the final `exit /b`, else at the end.
func mergeCmdHook(existing []byte, block string) ([]byte, error) {
	if len(strings.TrimSpace(string(existing))) == 0 {
		return []byte("@echo off\r\n" + block + "exit /b 0\r\n"), nil
	}
	lines := splitLines(existing)
	blockLines := splitLines([]byte(block))
	begin, end, err := findMarkers(lines, SVNHookBeginCmd, SVNHookEndCmd)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(lines[0], "\r") {
		// Keep the file's line endings: a hook written with LF gets LF.
		for i := range blockLines {
			blockLines[i] = strings.TrimSuffix(blockLines[i], "\r")
		}
	}
	var out []string
	if begin >= 0 {
		out = append(append(append(out, lines[:begin]...), blockLines...), lines[end+1:]...)
		return joinLines(out), nil
	}
	at := len(lines)
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.ToLower(strings.TrimSpace(lines[i]))
		if l == "" || strings.HasPrefix(l, "rem ") || strings.HasPrefix(l, "::") {
			continue
		}
		if l == "exit" || strings.HasPrefix(l, "exit ") {
			at = i
		}
		break
	}
	out = append(append(append(out, lines[:at]...), blockLines...), lines[at:]...)
	return joinLines(out), nil
}
