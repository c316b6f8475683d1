package svn

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/vcs"
)

// checkRelPath rejects paths that could name something outside the
// reviewed directory or outside dir/src once joined.
func checkRelPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return fmt.Errorf("path %q: must be a non-empty path relative to the repository URL", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("path %q: must not contain empty, . or .. segments", p)
		}
	}
	return nil
}

// srcPath is where rel's content goes, after the svn-specific name
// checks; the run directory's own escape check follows in SrcPath.
func srcPath(dst vcs.Dest, rel string) (string, error) {
	if err := checkRelPath(rel); err != nil {
		return "", err
	}
	return dst.SrcPath(rel)
}

// escapePath escapes a slash-separated path segment by segment, so
// spaces, '#', '%', '?' and non-ASCII survive in a URL.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// fileURL is base/rel@rev. The peg revision is always given, so a file
// deleted after rev is still found, and an '@' inside rel is harmless
// because svn takes the last '@' as the peg revision.
func fileURL(base, rel string, rev int64) string {
	return base + "/" + escapePath(rel) + "@" + strconv.FormatInt(rev, 10)
}

// headURL appends an empty peg revision (HEAD) so an '@' inside the URL
// is not taken for one.
func headURL(u string) string { return u + "@" }

func pegURL(base string, rev int64) string {
	return base + "@" + strconv.FormatInt(rev, 10)
}

// relPath turns a repository path ("/trunk/a.c") into one relative to the
// reviewed directory ("a.c"); ok is false for paths outside it and the
// directory itself.
func (r *repoInfo) relPath(p string) (string, bool) {
	rel, ok := strings.CutPrefix(p, r.path+"/")
	return rel, ok && rel != ""
}

// repoPath is rel as a path inside the repository, for svnlook.
func (r *repoInfo) repoPath(rel string) string { return r.path + "/" + rel }

func action(a string) vcs.Action {
	switch a {
	case "A":
		return vcs.ActionAdd
	case "D":
		return vcs.ActionDelete
	case "R":
		return vcs.ActionReplace
	}
	return vcs.ActionModify
}

// MimeTypeIsBinary reports whether Subversion treats a file with this
// svn:mime-type as binary: anything but text/*, except two X bitmap
// types it knows to be text.
func MimeTypeIsBinary(mime string) bool {
	mime = strings.TrimSpace(mime)
	base, _, _ := strings.Cut(mime, ";")
	base, _, _ = strings.Cut(base, " ")
	return !strings.HasPrefix(base, "text/") && base != "image/x-xbitmap" && base != "image/x-xpixmap"
}
