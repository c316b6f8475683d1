package svn

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/vcs"
)

// fixture is one real Subversion repository shared by the package's tests,
// built with svnadmin and a single working copy. Each field names the
// revision that made one kind of change.
type fixture struct {
	root      string // repository root URL
	trunk     string // root + "/trunk"
	configDir string // isolated svn config dir, so ~/.subversion is never read

	rAdd, rModify, rDelete, rBinary, rProp, rCopy, rFilter, rBranch int64
	// Revisions after rBranch, all under trunk.
	rRename, rReplace, rDoomed, rDoomedGone, rTen, rHundred, rThousand, rHuge int64
	// rHugeEdit edits 10 lines of huge.txt, one line each of
	// many10/f0001.txt and many100/f0001.txt, a property of a.c, and
	// deletes many10/f0002.txt.
	rHugeEdit int64
	youngest  int64

	repo    string // repository directory (local_path)
	svnserv *svnserve
}

// hugeBytes is the size of huge.txt, the 50 MB file.
const hugeBytes = 50 << 20

var fx *fixture

func TestMain(m *testing.M) {
	if helperMain() {
		return
	}
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
	fx.svnserv, err = startSvnserve(tmp, fx.repo)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start svnserve:", err)
		os.RemoveAll(tmp)
		os.Exit(1)
	}
	code := m.Run()
	fx.svnserv.stop()
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
	f := &fixture{configDir: filepath.Join(tmp, "svnconfig"), repo: repo}
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
			firstErr = fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, stderr.String())
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

	svn("update", "-q")
	svn("move", "-q", "b.c", "renamed b.c")
	f.rRename = commit("rename b.c")

	svn("rm", "-q", "a.c")
	write("a.c", "replaced\n")
	svn("add", "-q", "a.c")
	f.rReplace = commit("replace a.c")

	write("doomed.txt", "soon gone\n")
	svn("add", "-q", "doomed.txt")
	f.rDoomed = commit("doomed")
	svn("rm", "-q", "doomed.txt")
	f.rDoomedGone = commit("delete doomed")

	for _, n := range []int{10, 100, 1000} {
		d := fmt.Sprintf("many%d", n)
		for i := 0; i < n; i++ {
			write(fmt.Sprintf("%s/f%04d.txt", d, i), fmt.Sprintf("file %d of %d\nsecond line\n", i, n))
		}
		svn("add", "-q", d)
		r := commit(fmt.Sprintf("%d files", n))
		switch n {
		case 10:
			f.rTen = r
		case 100:
			f.rHundred = r
		default:
			f.rThousand = r
		}
	}

	// A 50 MB commit through a working copy takes minutes on a busy
	// machine; svnadmin load of a generated dump takes a second.
	if firstErr == nil {
		firstErr = loadHuge(repo, false)
	}
	f.rHuge = commit("nothing")
	if firstErr == nil {
		firstErr = loadHuge(repo, true)
	}
	if out := sh(tmp, "svnlook", "youngest", repo); firstErr == nil {
		f.rHugeEdit, firstErr = strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	}
	f.youngest = f.rHugeEdit
	return f, firstErr
}

// loadHuge appends one revision adding trunk/huge.txt, hugeBytes of
// numbered text lines, with svnadmin load of a dump generated on the fly;
// with edit, the rHugeEdit revision instead.
func loadHuge(repo string, edit bool) error {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeHugeDump(pw, edit))
	}()
	cmd := exec.Command("svnadmin", "load", "-q", repo)
	cmd.Stdin = pr
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	pr.Close()
	if err != nil {
		return fmt.Errorf("svnadmin load: %w: %s", err, stderr.String())
	}
	return nil
}

// hugeEdited are the lines of huge.txt rHugeEdit rewrites.
var hugeEdited = vcs.LineRange{Start: 500001, End: 500010}

func writeHugeDump(w io.Writer, edit bool) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	kv := func(k, v string) string { return fmt.Sprintf("K %d\n%s\nV %d\n%s\n", len(k), k, len(v), v) }
	props := kv("svn:author", "alice") + kv("svn:log", "50 MB") +
		kv("svn:date", time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")) + "PROPS-END\n"
	fmt.Fprintf(bw, "SVN-fs-dump-format-version: 2\n\nRevision-number: 1\nProp-content-length: %d\nContent-length: %d\n\n%s\n",
		len(props), len(props), props)
	const nodeProps = "PROPS-END\n"
	if edit {
		text := func(p, content string) {
			fmt.Fprintf(bw, "Node-path: trunk/%s\nNode-kind: file\nNode-action: change\nText-content-length: %d\nContent-length: %d\n\n%s\n\n",
				p, len(content), len(content), content)
		}
		text("many10/f0001.txt", "file 1 of 10\nSECOND line\n")
		text("many100/f0001.txt", "file 1 of 100\nsecond LINE\n")
		aProps := kv("custom", "v2") + "PROPS-END\n"
		fmt.Fprintf(bw, "Node-path: trunk/a.c\nNode-kind: file\nNode-action: change\nProp-content-length: %d\nContent-length: %d\n\n%s\n\n",
			len(aProps), len(aProps), aProps)
		fmt.Fprintf(bw, "Node-path: trunk/many10/f0002.txt\nNode-action: delete\n\n")
		fmt.Fprintf(bw, "Node-path: trunk/huge.txt\nNode-kind: file\nNode-action: change\nText-content-length: %d\nContent-length: %d\n\n",
			hugeBytes, hugeBytes)
	} else {
		fmt.Fprintf(bw, "Node-path: trunk/huge.txt\nNode-kind: file\nNode-action: add\nProp-content-length: %d\nText-content-length: %d\nContent-length: %d\n\n%s",
			len(nodeProps), hugeBytes, len(nodeProps)+hugeBytes, nodeProps)
	}
	line := []byte("0000000 the quick brown fox jumps over the lazy dog\n")
	for i, n := 0, 0; n < hugeBytes; i++ {
		copy(line, fmt.Sprintf("%07d", i%10000000))
		copy(line[8:], "the quick")
		if edit && hugeEdited.Contains(i+1) {
			copy(line[8:], "THE QUICK")
		}
		k := min(len(line), hugeBytes-n)
		if k < len(line) {
			line[k-1] = '\n'
		}
		bw.Write(line[:k])
		n += k
	}
	bw.WriteString("\n\n")
	return bw.Flush()
}

// svnserve is a real svnserve on loopback with password authentication
// and anonymous access off.
type svnserve struct {
	url      string // svn://127.0.0.1:PORT/repo
	trunk    string
	user     string
	passFile string // holds the password, for password_file
	cmd      *exec.Cmd
}

func startSvnserve(tmp, repo string) (*svnserve, error) {
	s := &svnserve{user: "reviewer", passFile: filepath.Join(tmp, "svn-password")}
	const password = "s3cret pass"
	conf := "[general]\nanon-access = none\nauth-access = write\npassword-db = passwd\nrealm = aicr-test\n"
	if err := os.WriteFile(filepath.Join(repo, "conf", "svnserve.conf"), []byte(conf), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(repo, "conf", "passwd"), []byte("[users]\n"+s.user+" = "+password+"\n"), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(s.passFile, []byte(password+"\n"), 0o600); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s.cmd = exec.Command("svnserve", "-d", "--foreground", "--listen-host", "127.0.0.1",
		"--listen-port", strconv.Itoa(port), "-r", filepath.Dir(repo))
	s.cmd.Stderr = os.Stderr
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	// Wait until it accepts connections; the guard only turns a hang into
	// a failure.
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if i > 3000 {
			s.stop()
			return nil, fmt.Errorf("svnserve not listening on %d: %w", port, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.url = fmt.Sprintf("svn://127.0.0.1:%d/%s", port, filepath.Base(repo))
	s.trunk = s.url + "/trunk"
	return s, nil
}

func (s *svnserve) stop() {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
}
