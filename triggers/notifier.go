package triggers

import (
	"os"
	"path/filepath"
	"strings"
)

// NotifierName is the file name (plus .exe on Windows) of the hook-only
// client built from cmd/aicr-notify. Its command line is aicr's without
// the "notify" word: `aicr-notify svn ...` is `aicr notify svn ...`.
const NotifierName = "aicr-notify"

// IsNotifier reports whether path names the aicr-notify binary. Both
// separators count, because a Windows hook is inspected on any host.
func IsNotifier(path string) bool {
	base := path
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	return strings.TrimSuffix(strings.ToLower(base), ".exe") == NotifierName
}

// NotifyCommand is what a hook or trigger line runs after the binary's
// path to hand over a commit of kind (KindSVN or KindP4).
func NotifyCommand(binPath, kind string) string {
	if IsNotifier(binPath) {
		return kind
	}
	return "notify " + kind
}

// NotifierBeside returns the aicr-notify installed next to the aicr binary
// exe, when there is an executable one: the installers prefer it, since a
// commit waits for its hook's start-up.
func NotifierBeside(exe string) (string, bool) {
	name := NotifierName
	if strings.EqualFold(filepath.Ext(exe), ".exe") {
		name += ".exe"
	}
	p := filepath.Join(filepath.Dir(exe), name)
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() || (filepath.Ext(p) == "" && st.Mode().Perm()&0o111 == 0) {
		return "", false
	}
	return p, true
}
