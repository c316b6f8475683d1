package triggers

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aicr-dev/aicr/internal/atomicfile"
)

// Marker lines around the aicr part of a post-commit hook. The block is
// found, replaced and removed by these exact lines.
const (
	SVNHookBegin = "# >>> aicr post-commit >>>"
	SVNHookEnd   = "# <<< aicr post-commit <<<"
	// The same markers in a Windows post-commit.cmd (VisualSVN Server and
	// other Windows servers run hooks/post-commit.cmd or .bat).
	SVNHookBeginCmd = "REM >>> aicr post-commit >>>"
	SVNHookEndCmd   = "REM <<< aicr post-commit <<<"
)

// hookPATH is set by the hook itself: svn runs hooks with an empty
// environment.
const hookPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

var (
	ErrNotSVNRepo  = errors.New("not a Subversion repository")
	ErrForeignHook = errors.New("existing post-commit hook is not a shell script")
	ErrHookMarkers = errors.New("post-commit hook has an unmatched aicr marker")
	ErrSymlinkHook = errors.New("post-commit hook is a symlink")
)

// SVNHookOptions says where the post-commit hook is installed and what it
// runs.
type SVNHookOptions struct {
	ReposPath  string // repository directory on the server (has format, hooks/)
	AicrPath   string // aicr or aicr-notify binary the hook runs
	ConfigPath string // config file passed to aicr notify
	RepoName   string // repo name as configured in the daemon
	SpoolDir   string // where notify spools; created and made writable for the repo owner
	LogFile    string // notify's stderr; default <SpoolDir>/notify.log
	// Windows writes hooks/post-commit.cmd (cmd.exe syntax) instead of the
	// POSIX sh hooks/post-commit.
	Windows bool
	// Force replaces a hook that is a symlink (often one script shared by
	// every repository) with a file: the target's lines plus the aicr
	// block. Without it a symlinked hook is refused (ErrSymlinkHook).
	Force bool
}

// SVNHookPath is the hook file InstallSVNHook writes in reposPath.
func SVNHookPath(reposPath string, windows bool) string {
	if windows {
		return filepath.Join(reposPath, "hooks", "post-commit.cmd")
	}
	return filepath.Join(reposPath, "hooks", "post-commit")
}

// InstallSVNHook writes or updates <ReposPath>/hooks/post-commit so each
// commit runs `aicr notify svn` detached. An existing hook keeps its own
// lines; the aicr block is replaced in place on reinstall, so installing
// twice yields the same bytes. It returns the hook's path. A hook in
// another language is refused with ErrForeignHook; InstallSVNHookOrHelper
// writes a helper script for it instead.
func InstallSVNHook(opts SVNHookOptions) (string, error) {
	res, err := installSVNHook(opts, false)
	return res.Hook, err
}

// InstallSVNHookOrHelper is InstallSVNHook, except that a post-commit
// hook written in another language (python, perl, a binary) is left
// alone: the aicr block goes into its own script beside it
// (SVNHelperPath) and the result says the exact line to add to the hook.
func InstallSVNHookOrHelper(opts SVNHookOptions) (SVNHookResult, error) {
	return installSVNHook(opts, true)
}

// SVNHookResult says what InstallSVNHookOrHelper wrote.
type SVNHookResult struct {
	// Hook is the file holding the aicr block: hooks/post-commit, or the
	// helper script when the hook is not a shell script.
	Hook string `json:"hook"`
	// PasteInto, when set, is the foreign hook that must call Hook;
	// nothing runs aicr until the operator adds PasteLine to it.
	PasteInto string `json:"paste_into,omitempty"`
	// PasteLine is the exact line to add, in the hook's own language.
	PasteLine string `json:"paste_line,omitempty"`
	// Language is the foreign hook's interpreter ("python3", "binary").
	Language string `json:"language,omitempty"`
	// AlreadyCalled: PasteInto already names Hook (pasted earlier).
	AlreadyCalled bool `json:"already_called,omitempty"`
}

func installSVNHook(opts SVNHookOptions, helper bool) (SVNHookResult, error) {
	var res SVNHookResult
	o, err := opts.resolve()
	if err != nil {
		return res, err
	}
	owner, err := os.Stat(o.ReposPath)
	if err != nil {
		return res, fmt.Errorf("stat repository: %w", err)
	}
	hookPath := SVNHookPath(o.ReposPath, o.Windows)
	if err := checkSymlinkHook(hookPath, o.Force); err != nil {
		return res, err
	}
	existing, err := os.ReadFile(hookPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("read existing hook: %w", err)
	}
	var script []byte
	if o.Windows {
		script, err = mergeCmdHook(existing, svnCmdHookBlock(o))
	} else {
		script, err = mergeHook(existing, svnHookBlock(o))
	}
	var foreign *foreignHookError
	if helper && errors.As(err, &foreign) {
		return installHelper(o, owner, hookPath, existing, foreign.language)
	}
	if err != nil {
		return res, fmt.Errorf("%s: %w", hookPath, err)
	}
	if err := prepareSpool(o.SpoolDir, o.LogFile, owner); err != nil {
		return res, err
	}
	if err := writeHook(hookPath, script, owner); err != nil {
		return res, err
	}
	res.Hook = hookPath
	return res, nil
}

// UninstallSVNHook removes the aicr block from the post-commit hook, and
// the hook itself when nothing but a shebang and exit remain. A missing
// hook or block is not an error.
func UninstallSVNHook(reposPath string) error {
	_, err := uninstallHook(reposPath, false)
	return err
}

// UninstallSVNCmdHook is UninstallSVNHook for the Windows post-commit.cmd.
func UninstallSVNCmdHook(reposPath string) error {
	_, err := uninstallHook(reposPath, true)
	return err
}

// What an uninstall did to the hook file, for the operator's message.
const (
	UninstallNoHook       = "no-hook"       // there was no hook file
	UninstallNoBlock      = "no-block"      // the hook had no aicr block
	UninstallRemovedFile  = "removed-file"  // the hook held only the block: deleted
	UninstallRemovedBlock = "removed-block" // the block was cut, the rest kept
)

// UninstallSVNHookOutcome is UninstallSVNHook (or, with windows, its
// .cmd variant) that also says what it did (Uninstall*).
func UninstallSVNHookOutcome(reposPath string, windows bool) (string, error) {
	return uninstallHook(reposPath, windows)
}

func uninstallHook(reposPath string, windows bool) (string, error) {
	hookPath := SVNHookPath(reposPath, windows)
	begin, end := SVNHookBegin, SVNHookEnd
	if windows {
		begin, end = SVNHookBeginCmd, SVNHookEndCmd
	}
	if !windows {
		if err := removeHelper(reposPath); err != nil {
			return "", err
		}
	}
	existing, err := os.ReadFile(hookPath)
	if errors.Is(err, os.ErrNotExist) {
		return UninstallNoHook, nil
	}
	if err != nil {
		return "", fmt.Errorf("read hook: %w", err)
	}
	lines := splitLines(existing)
	bi, ei, err := findMarkers(lines, begin, end)
	if err != nil {
		return "", fmt.Errorf("%s: %w", hookPath, err)
	}
	if bi < 0 {
		return UninstallNoBlock, nil
	}
	if target, err := os.Readlink(hookPath); err == nil {
		// Rewriting would replace the link (and whatever else shares its
		// target) with a file.
		return "", fmt.Errorf("%w: %s links to %s, which holds the aicr block; remove the block (%s ... %s) from %s by hand",
			ErrSymlinkHook, hookPath, target, begin, end, target)
	}
	rest := append(append([]string{}, lines[:bi]...), lines[ei+1:]...)
	if onlyBoilerplate(rest) {
		if err := os.Remove(hookPath); err != nil {
			return "", fmt.Errorf("remove hook: %w", err)
		}
		return UninstallRemovedFile, nil
	}
	info, err := os.Stat(hookPath)
	if err != nil {
		return "", fmt.Errorf("stat hook: %w", err)
	}
	if err := writeHook(hookPath, joinLines(rest), info); err != nil {
		return "", err
	}
	return UninstallRemovedBlock, nil
}

func (opts SVNHookOptions) resolve() (SVNHookOptions, error) {
	o := opts
	var err error
	if o.ReposPath == "" {
		return o, errors.New("svn hook: repository path is empty: pass the repository directory on the server")
	}
	if o.ReposPath, err = filepath.Abs(o.ReposPath); err != nil {
		return o, fmt.Errorf("resolve repository path: %w", err)
	}
	if !isFile(filepath.Join(o.ReposPath, "format")) || !isDir(filepath.Join(o.ReposPath, "hooks")) {
		return o, fmt.Errorf("%w: %s has no format file or hooks directory; pass the directory made by svnadmin create, not a working copy", ErrNotSVNRepo, o.ReposPath)
	}
	if o.RepoName == "" {
		return o, errors.New("svn hook: repo name is empty: pass the name the daemon's config uses for this repository")
	}
	for _, p := range []struct {
		what string
		path *string
	}{{"aicr binary", &o.AicrPath}, {"config file", &o.ConfigPath}} {
		if *p.path == "" {
			return o, fmt.Errorf("svn hook: %s path is empty", p.what)
		}
		if *p.path, err = filepath.Abs(*p.path); err != nil {
			return o, fmt.Errorf("resolve %s path: %w", p.what, err)
		}
		if !isFile(*p.path) {
			return o, fmt.Errorf("svn hook: %s %s does not exist or is not a file", p.what, *p.path)
		}
	}
	if info, _ := os.Stat(o.AicrPath); info.Mode().Perm()&0o111 == 0 {
		return o, fmt.Errorf("svn hook: aicr binary %s is not executable: chmod +x it", o.AicrPath)
	}
	if o.SpoolDir == "" {
		return o, errors.New("svn hook: spool directory is empty: pass where notify may spool events")
	}
	if o.SpoolDir, err = filepath.Abs(o.SpoolDir); err != nil {
		return o, fmt.Errorf("resolve spool dir: %w", err)
	}
	if o.LogFile == "" {
		o.LogFile = filepath.Join(o.SpoolDir, "notify.log")
	}
	if o.LogFile, err = filepath.Abs(o.LogFile); err != nil {
		return o, fmt.Errorf("resolve log file: %w", err)
	}
	// Quoting would cope, but a newline would split the marker-delimited
	// block into lines we could no longer recognise.
	for _, s := range []string{o.ReposPath, o.AicrPath, o.ConfigPath, o.RepoName, o.SpoolDir, o.LogFile} {
		if strings.ContainsAny(s, "\n\r\x00") {
			return o, fmt.Errorf("svn hook: %q contains a line break; use a path without one", s)
		}
	}
	return o, nil
}

// svnHookBlock is the aicr part of the hook, markers included. The
// notifier runs in a background subshell with all three standard streams
// away from svn's pipes: svn waits for those pipes to close, so inheriting
// one would make every commit wait for the daemon.
func svnHookBlock(o SVNHookOptions) string {
	log := shQuote(o.LogFile)
	return SVNHookBegin + "\n" +
		"# Written by aicr; reinstalling replaces everything between these markers.\n" +
		"# svn runs hooks with an empty environment and waits for their output, so\n" +
		"# this sets its own environment and detaches; the commit never waits for aicr.\n" +
		"(\n" +
		"  LC_ALL=C.UTF-8\n" +
		"  PATH=" + hookPATH + "\n" +
		"  export LC_ALL PATH\n" +
		"  if (: >>" + log + ") 2>/dev/null; then aicr_log=" + log + "; else aicr_log=/dev/null; fi\n" +
		"  exec " + shQuote(o.AicrPath) + " " + NotifyCommand(o.AicrPath, KindSVN) + " --config " + shQuote(o.ConfigPath) +
		" --repo " + shQuote(o.RepoName) + " \"$1\" \"$2\" \"$3\" </dev/null >/dev/null 2>>\"$aicr_log\"\n" +
		") </dev/null >/dev/null 2>&1 &\n" +
		SVNHookEnd + "\n"
}

// shQuote single-quotes s for POSIX sh; a quote inside becomes '\”.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// mergeHook returns the hook script with block in it: replacing an old
// block, else before the script's final exit, else at the end.
func mergeHook(existing []byte, block string) ([]byte, error) {
	if len(bytes.TrimSpace(existing)) == 0 {
		return []byte("#!/bin/sh\n" + block + "exit 0\n"), nil
	}
	if err := checkShellScript(existing); err != nil {
		return nil, err
	}
	lines := splitLines(existing)
	blockLines := splitLines([]byte(block))
	begin, end, err := findBlock(lines)
	if err != nil {
		return nil, err
	}
	var out []string
	switch {
	case begin >= 0:
		out = append(append(append(out, lines[:begin]...), blockLines...), lines[end+1:]...)
	default:
		at := finalExit(lines)
		out = append(append(append(out, lines[:at]...), blockLines...), lines[at:]...)
	}
	return joinLines(out), nil
}

// checkShellScript refuses to splice sh into a hook written in another
// language (a *foreignHookError, which is ErrForeignHook).
func checkShellScript(script []byte) error {
	if lang := hookLanguage(script); lang != "" {
		return &foreignHookError{language: lang}
	}
	return nil
}

// hookLanguage is "" for a shell script (or a file without a #! line,
// which svn runs with /bin/sh), else its interpreter's name, or
// "binary".
func hookLanguage(script []byte) string {
	if bytes.IndexByte(script, 0) >= 0 {
		return "binary"
	}
	first, _, _ := strings.Cut(string(script), "\n")
	if !strings.HasPrefix(first, "#!") {
		return ""
	}
	fields := strings.Fields(strings.TrimPrefix(first, "#!"))
	if len(fields) == 0 {
		return ""
	}
	interp := filepath.Base(fields[0])
	if interp == "env" && len(fields) > 1 {
		interp = filepath.Base(fields[len(fields)-1])
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "-") {
				interp = filepath.Base(f)
				break
			}
		}
	}
	switch interp {
	case "sh", "bash", "dash", "ksh", "mksh", "zsh", "ash", "busybox":
		return ""
	}
	return interp
}

// foreignHookError is ErrForeignHook with the hook's language.
type foreignHookError struct{ language string }

func (e *foreignHookError) Error() string {
	if e.language == "binary" {
		return ErrForeignHook.Error() + ": it is a binary; run `aicr install svn-hook` to get the helper script and the exact command to call from it"
	}
	return fmt.Sprintf("%s: it runs %s; run `aicr install svn-hook` to get the helper script and the exact line to add to it", ErrForeignHook, e.language)
}

func (e *foreignHookError) Is(target error) bool { return target == ErrForeignHook }

// findBlock returns the line indexes of the markers, or -1, -1.
func findBlock(lines []string) (begin, end int, err error) {
	return findMarkers(lines, SVNHookBegin, SVNHookEnd)
}

func findMarkers(lines []string, beginMark, endMark string) (begin, end int, err error) {
	begin, end = -1, -1
	for i, l := range lines {
		switch strings.TrimSpace(l) {
		case beginMark:
			if begin >= 0 {
				return 0, 0, fmt.Errorf("%w: two %q lines; remove the aicr block by hand", ErrHookMarkers, beginMark)
			}
			begin = i
		case endMark:
			if begin < 0 || end >= 0 {
				return 0, 0, fmt.Errorf("%w: %q without a matching begin; remove the aicr block by hand", ErrHookMarkers, endMark)
			}
			end = i
		}
	}
	if begin >= 0 && end < 0 {
		return 0, 0, fmt.Errorf("%w: %q without a matching end; remove the aicr block by hand", ErrHookMarkers, beginMark)
	}
	return begin, end, nil
}

// finalExit returns the index of the script's last statement when it is an
// exit or exec (so a block placed before it still runs), else len(lines).
func finalExit(lines []string) int {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if l == "exit" || strings.HasPrefix(l, "exit ") || strings.HasPrefix(l, "exec ") {
			return i
		}
		break
	}
	return len(lines)
}

// onlyBoilerplate reports whether a script without the aicr block does
// nothing: only a shebang, blank lines and exit 0.
func onlyBoilerplate(lines []string) bool {
	for _, l := range lines {
		l = strings.TrimSpace(l)
		switch strings.ToLower(l) {
		case "", "exit 0", "exit", "@echo off", "exit /b 0", "exit /b":
			continue
		}
		if strings.HasPrefix(l, "#!") {
			continue
		}
		return false
	}
	return true
}

// splitLines splits without the newlines; a missing final newline is
// added back by joinLines.
func splitLines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func joinLines(lines []string) []byte {
	if len(lines) == 0 {
		return nil
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// writeHook replaces the hook atomically, so a commit landing mid-install
// runs either the old or the new script, never half of one.
func writeHook(path string, script []byte, owner os.FileInfo) error {
	tmp, err := atomicfile.WriteTemp(filepath.Dir(path), ".post-commit.aicr-*", script, 0o755, func(name string) error {
		if err := chownLike(name, owner); err != nil {
			return fmt.Errorf("chown hook: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write hook: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("install hook: %w", err)
	}
	if err := atomicfile.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("install hook: %w", err)
	}
	return nil
}

// prepareSpool creates the spool dir and log file so the hook, which runs
// as the repository's owner, can write there even when the installer runs
// as root. Directories it creates are handed to that owner too, or the
// owner could not reach the spool through them.
func prepareSpool(dir, logFile string, owner os.FileInfo) error {
	var created []string
	for d := dir; !exists(d); d = filepath.Dir(d) {
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, spoolDirMode); err != nil {
		return fmt.Errorf("create spool dir %s: %w (create it by hand, writable by the repository owner)", dir, err)
	}
	for _, d := range created {
		if err := os.Chmod(d, spoolDirMode); err != nil {
			return fmt.Errorf("chmod spool dir: %w", err)
		}
		if err := chownLike(d, owner); err != nil {
			return fmt.Errorf("chown spool dir %s: %w", d, err)
		}
	}
	if !exists(logFile) {
		if err := os.MkdirAll(filepath.Dir(logFile), spoolDirMode); err != nil {
			return fmt.Errorf("create log dir: %w", err)
		}
		f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, spoolFileMode)
		if err != nil {
			return fmt.Errorf("create log file %s: %w", logFile, err)
		}
		f.Close()
		if err := chownLike(logFile, owner); err != nil {
			return fmt.Errorf("chown log file: %w", err)
		}
	}
	return nil
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func isFile(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.Mode().IsRegular()
}

func isDir(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.IsDir()
}
