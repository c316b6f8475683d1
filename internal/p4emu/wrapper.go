package p4emu

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteWrapper writes dir/p4, a shell script that runs the emulator
// binary emuBin with EnvDepot and EnvLog set (log may be empty). The
// adapter gives p4 an allowlisted environment (vcs.ChildEnv), so the
// emulator's own variables cannot come from the test process: the script
// carries them, the way a site's wrapper would carry P4PORT.
func WriteWrapper(dir, emuBin, depot, log string) (string, error) {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	fmt.Fprintf(&b, "%s=%s; export %s\n", EnvDepot, shellQuote(depot), EnvDepot)
	if log != "" {
		fmt.Fprintf(&b, "%s=%s; export %s\n", EnvLog, shellQuote(log), EnvLog)
	}
	fmt.Fprintf(&b, "exec %s \"$@\"\n", shellQuote(emuBin))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "p4")
	if err := os.WriteFile(path, []byte(b.String()), 0o755); err != nil {
		return "", err
	}
	return path, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
