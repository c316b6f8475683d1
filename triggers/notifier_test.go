package triggers

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsNotifier(t *testing.T) {
	for path, want := range map[string]bool{
		"/usr/local/bin/aicr-notify":            true,
		`C:\Program Files\aicr\aicr-notify.exe`: true,
		`C:\Program Files\aicr\AICR-NOTIFY.EXE`: true,
		"/usr/local/bin/aicr":                   false,
		`C:\Program Files\aicr\aicr.exe`:        false,
		"/opt/aicr-notify/bin/aicr":             false,
		"/usr/local/bin/aicr-notify-wrapper":    false,
		"aicr-notify":                           true,
	} {
		if got := IsNotifier(path); got != want {
			t.Errorf("IsNotifier(%q) = %v, want %v", path, got, want)
		}
	}
	if got := NotifyCommand("/bin/aicr-notify", KindP4); got != "p4" {
		t.Errorf("aicr-notify: %q", got)
	}
	if got := NotifyCommand("/bin/aicr", KindSVN); got != "notify svn" {
		t.Errorf("aicr: %q", got)
	}
}

func TestNotifierBeside(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "aicr")
	if _, ok := NotifierBeside(exe); ok {
		t.Fatal("found an aicr-notify in an empty directory")
	}
	n := filepath.Join(dir, "aicr-notify")
	if err := os.WriteFile(n, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := NotifierBeside(exe); ok {
		t.Fatal("took a non-executable aicr-notify")
	}
	if err := os.Chmod(n, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, ok := NotifierBeside(exe); !ok || got != n {
		t.Fatalf("NotifierBeside = %q %v, want %q", got, ok, n)
	}
}

// The hook block names aicr-notify svn for the hook-only binary, and
// aicr doctor reads both spellings back.
func TestSVNHookWithAicrNotifyRoundTrips(t *testing.T) {
	for _, windows := range []bool{false, true} {
		o := SVNHookOptions{AicrPath: "/opt/aicr/bin/aicr-notify", ConfigPath: "/etc/aicr/aicr.toml", RepoName: "main", LogFile: "/var/lib/aicr/spool/notify.log"}
		block := svnHookBlock(o)
		if windows {
			o.AicrPath = `C:\aicr\aicr-notify.exe`
			block = svnCmdHookBlock(o)
		}
		if strings.Contains(block, "notify svn") {
			t.Fatalf("windows=%v: block runs notify svn:\n%s", windows, block)
		}
		script := "#!/bin/sh\n" + block + "exit 0\n"
		if windows {
			script = "@echo off\r\n" + block + "exit /b 0\r\n"
		}
		info, err := InspectSVNHook([]byte(script), windows)
		if err != nil {
			t.Fatalf("windows=%v: %v\n%s", windows, err, script)
		}
		if info.AicrPath != o.AicrPath || info.ConfigPath != o.ConfigPath || info.RepoName != "main" {
			t.Fatalf("windows=%v: read back %+v", windows, info)
		}
	}
	// A hand-written line with "notify svn" after aicr-notify is accepted
	// too (aicr-notify takes it), so is aicr's own.
	for _, line := range []string{
		"  exec '/bin/aicr-notify' notify svn --config '/c.toml' --repo 'r' \"$1\" \"$2\"",
		"  exec '/bin/aicr' notify svn --config '/c.toml' --repo 'r' \"$1\" \"$2\"",
	} {
		info, err := InspectSVNHook([]byte("#!/bin/sh\n"+SVNHookBegin+"\n"+line+"\n"+SVNHookEnd+"\n"), false)
		if err != nil || info.ConfigPath != "/c.toml" || info.RepoName != "r" {
			t.Fatalf("%s: %+v %v", line, info, err)
		}
	}
	if _, err := InspectSVNHook([]byte("#!/bin/sh\n"+SVNHookBegin+"\n  exec '/bin/aicr' svn --config '/c.toml'\n"+SVNHookEnd+"\n"), false); !errors.Is(err, ErrNoNotifyLine) {
		t.Fatalf("aicr svn (not a notify line) read as one: %v", err)
	}
}
