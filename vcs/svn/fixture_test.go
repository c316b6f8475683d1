package svn

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fixture is one real Subversion repository shared by the package's tests,
// built with svnadmin and a single working copy. Each field names the
// revision that made one kind of change.
type fixture struct {
	root      string // repository root URL
	trunk     string // root + "/trunk"
	configDir string // isolated svn config dir, so ~/.subversion is never read

	rAdd, rModify, rDelete, rBinary, rProp, rCopy, rFilter, rBranch int64
}

var fx *fixture

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "aicr-svn-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fx, err = buildFixture(tmp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build svn fixture:", err)
		os.RemoveAll(tmp)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// Lines of a.c as committed in rAdd and rModify.
const (
	aAdd    = "line1\nline2\nline3\nline4\nline5\n"
	aModify = "line1\nLINE2\nline3\nline4\nline5\nline6\nline7\n"
)

const nonASCIIPath = "中文 目录/文件@2x.txt"
const weirdPath = "we#ird %41 ?.txt"

func buildFixture(tmp string) (*fixture, error) {
	repo := filepath.Join(tmp, "repo")
	wc := filepath.Join(tmp, "wc")
	f := &fixture{configDir: filepath.Join(tmp, "svnconfig")}
	root := (&url.URL{Scheme: "file", Path: repo}).String()
	f.root, f.trunk = root, root+"/trunk"

	var firstErr error
	sh := func(dir, name string, args ...string) string {
		if firstErr != nil {
			return ""
		}
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			firstErr = fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
		}
		return string(out)
	}
	svn := func(args ...string) {
		sh(wc, "svn", append([]string{"--non-interactive", "--config-dir", f.configDir}, args...)...)
	}
	write := func(rel, content string) {
		p := filepath.Join(wc, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil && firstErr == nil {
			firstErr = err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	// commit commits the working copy as alice and returns the new
	// revision as svnlook sees it.
	commit := func(msg string) int64 {
		svn("commit", "--username", "alice", "-m", msg)
		svn("update", "-q")
		out := sh(tmp, "svnlook", "youngest", repo)
		n, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("svnlook youngest: %q", out)
		}
		return n
	}

	sh(tmp, "svnadmin", "create", repo)
	sh(tmp, "svn", "--non-interactive", "--config-dir", f.configDir, "mkdir", "--username", "alice", "-m", "layout", f.trunk, root+"/branches")
	sh(tmp, "svn", "--non-interactive", "--config-dir", f.configDir, "checkout", "-q", f.trunk, wc)

	write("a.c", aAdd)
	write(nonASCIIPath, "hello\nworld\n")
	write(weirdPath, "weird\n")
	write("empty.txt", "")
	svn("add", "-q", "a.c", "中文 目录", weirdPath, "empty.txt")
	f.rAdd = commit("add files\n\n多行 message")

	write("a.c", aModify)
	f.rModify = commit("modify a.c")

	svn("rm", "-q", weirdPath)
	f.rDelete = commit("delete")

	write("nul.dat", "x\x00y\n")
	write("img.png", "looks like text\n")
	svn("add", "-q", "nul.dat", "img.png") // svn add marks nul.dat application/octet-stream itself
	svn("propset", "-q", "svn:mime-type", "application/octet-stream", "img.png")
	f.rBinary = commit("binary")

	svn("propset", "-q", "custom", "v1", "a.c")
	svn("propset", "-q", "custom", "v1", "nul.dat")
	f.rProp = commit("props only")

	svn("copy", "-q", "a.c", "b.c")
	write("b.c", aModify+"line8\n")
	f.rCopy = commit("copy")

	write("src/main.go", "package main\n")
	write("docs/readme.md", "# readme\n")
	write("vendor/lib/x.go", "package lib\n")
	write("notes.txt", "notes\n")
	write("big.txt", strings.Repeat("0123456789\n", 200))
	svn("add", "-q", "src", "docs", "vendor", "notes.txt", "big.txt")
	f.rFilter = commit("filter")

	svn("copy", "-q", f.trunk, root+"/branches/b1", "--username", "alice", "-m", "branch")
	f.rBranch = commit("nothing") // nothing to commit: returns the branch revision
	return f, firstErr
}
