package triggers

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// SVNHelperPath is the script holding the aicr block when post-commit is
// written in another language: that hook calls it (SVNHookResult.PasteLine).
func SVNHelperPath(reposPath string) string {
	return filepath.Join(reposPath, "hooks", "post-commit.aicr")
}

// checkSymlinkHook refuses to replace a symlinked hook unless forced:
// rename(2) over the link would quietly turn a script shared by every
// repository into this repository's private copy.
func checkSymlinkHook(hookPath string, force bool) error {
	target, err := os.Readlink(hookPath)
	if err != nil || force {
		return nil //nolint:nilerr // Readlink fails when the hook is no symlink (or not there yet): nothing to refuse
	}
	return fmt.Errorf("%w: %s links to %s; installing would replace the link with a file and this repository would stop following %s. "+
		"Pass --force to replace the link with a copy of %s plus the aicr block, or have %s call each repository's own hook",
		ErrSymlinkHook, hookPath, target, target, target, target)
}

// installHelper writes the aicr block as its own sh script beside a hook
// in another language, and says the line that hook needs to call it. The
// foreign hook itself is never edited.
func installHelper(o SVNHookOptions, owner os.FileInfo, hookPath string, existing []byte, language string) (SVNHookResult, error) {
	helper := SVNHelperPath(o.ReposPath)
	res := SVNHookResult{Hook: helper, PasteInto: hookPath, Language: language}
	if err := checkSymlinkHook(helper, o.Force); err != nil {
		return res, err
	}
	if err := prepareSpool(o.SpoolDir, o.LogFile, owner); err != nil {
		return res, err
	}
	if err := writeHook(helper, []byte("#!/bin/sh\n"+svnHookBlock(o)+"exit 0\n"), owner); err != nil {
		return res, err
	}
	res.PasteLine = helperCall(language, helper)
	res.AlreadyCalled = bytes.Contains(existing, []byte(helper))
	return res, nil
}

// helperCall is the line that runs the helper from a hook written in
// language, passing the hook's arguments (REPOS REV TXN_NAME) on. The
// helper detaches and returns at once, so a plain call is enough.
func helperCall(language, helper string) string {
	lang := strings.TrimRight(language, "0123456789.")
	switch lang {
	case "python":
		return fmt.Sprintf("import subprocess, sys; subprocess.call([%s] + sys.argv[1:])", strconv.Quote(helper))
	case "perl":
		return fmt.Sprintf("system(%s, @ARGV);", perlQuote(helper))
	case "ruby":
		return fmt.Sprintf("system(%s, *ARGV)", perlQuote(helper))
	case "node", "nodejs":
		return fmt.Sprintf("require('child_process').spawnSync(%s, process.argv.slice(2), {stdio: 'ignore'});", strconv.Quote(helper))
	}
	// A binary or another interpreter: the command its author must run.
	return shQuote(helper) + ` "$REPOS" "$REV" "$TXN_NAME"`
}

// perlQuote single-quotes s for Perl and Ruby, where only \ and ' are
// special inside single quotes.
func perlQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// removeHelper takes the helper out of service. While the foreign hook
// still calls it, it becomes a script that does nothing (a missing one
// would make that hook fail and svn warn every committer); otherwise it
// is deleted. aicr never edits the foreign hook itself.
func removeHelper(reposPath string) error {
	helper := SVNHelperPath(reposPath)
	info, err := os.Stat(helper)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat %s: %w", helper, err)
	}
	hook, _ := os.ReadFile(SVNHookPath(reposPath, false))
	if bytes.Contains(hook, []byte(helper)) {
		return writeHook(helper, []byte(helperRetired), info)
	}
	if err := os.Remove(helper); err != nil {
		return fmt.Errorf("remove %s: %w", helper, err)
	}
	return nil
}

// helperRetired is the helper after uninstall while a hook still calls it.
const helperRetired = "#!/bin/sh\n# aicr was uninstalled: remove the line calling this script from post-commit, then this file.\nexit 0\n"

// HelperStillCalled reports whether the hook of reposPath still calls the
// (retired) helper, so uninstall can say which line to remove.
func HelperStillCalled(reposPath string) bool {
	hook, _ := os.ReadFile(SVNHookPath(reposPath, false))
	return exists(SVNHelperPath(reposPath)) && bytes.Contains(hook, []byte(SVNHelperPath(reposPath)))
}

// SVNBlockFile is the file that holds reposPath's aicr block: the helper
// when post-commit (a hook in another language) calls it, else
// post-commit itself. Whoever inspects an installed hook (doctor) reads
// this one.
func SVNBlockFile(reposPath string) string {
	if HelperStillCalled(reposPath) {
		return SVNHelperPath(reposPath)
	}
	return SVNHookPath(reposPath, false)
}
