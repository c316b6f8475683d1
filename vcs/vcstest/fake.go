package vcstest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// FakeTool writes dir/name, an executable shell script with body after
// the #!/bin/sh line. Tests use it as the svn or p4 client to make a
// server hang or to see what a child process is given.
func FakeTool(tb testing.TB, dir, name, body string) string {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		tb.Fatal(err)
	}
	return path
}

// HangScript is a FakeTool body that records its own pid in dir/leader,
// starts a child that would sleep for ten minutes and records that
// child's pid in dir/child, then waits for it: a hung client with a
// helper process, as svn+ssh leaves.
func HangScript(dir string) string {
	return "echo $$ > " + Quote(filepath.Join(dir, "leader")) + "\n" +
		"sleep 600 &\n" +
		"echo $! > " + Quote(filepath.Join(dir, "child")) + "\n" +
		"wait\n"
}

// Quote quotes s for a POSIX shell.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// RequireGone fails the test unless the process whose pid is in pidFile
// ends (or is a zombie awaiting its reaper) within a minute; the minute
// only bounds a failing test, the passing one returns at once.
func RequireGone(tb testing.TB, pidFile string) {
	tb.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		tb.Fatalf("the fake tool never recorded %s: %v", filepath.Base(pidFile), err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		tb.Fatalf("%s: %v", pidFile, err)
	}
	deadline := time.Now().Add(time.Minute)
	for !gone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			tb.Fatalf("process %d (%s) still runs: the timeout did not kill the whole process group", pid, filepath.Base(pidFile))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}

// WaitFile waits up to a minute for path to exist and fails the test
// otherwise.
func WaitFile(tb testing.TB, path string) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s never appeared", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
