package svn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/vcs"
)

// dumpedFile is what the revision's dump said about one changed file.
type dumpedFile struct {
	size     int64
	lines    int
	written  bool // the text is at the file's src path
	tooLarge bool // the text is over MaxFileBytes and was not written
	// mime is the svn:mime-type when propsKnown: the record listed the
	// file's full properties (an add, or a change of properties).
	mime       string
	propsKnown bool
	// sized is set when the dump gave the size but not the text (a delta
	// from svnrdump); md5 is the text's, to check the batched cat.
	sized bool
	md5   string
}

// hasText reports whether the dump settled the file's content, so no
// per-file cat is needed.
func (d *dumpedFile) hasText() bool { return d != nil && (d.written || d.tooLarge) }

// canDump reports whether the revision's files can be read from one
// dump: svnadmin on the repository on this host, svnrdump over a URL.
func (a *Adapter) canDump() bool {
	if a.access == AccessSvnlook {
		return a.svnadmin != ""
	}
	return a.svnrdump != ""
}

// dumpRevision reads the revision with one `svnadmin dump -r N
// --incremental` of the repository on this host and writes the text of
// every listed in-scope file to dst as it streams past, counting its
// bytes and lines. A text over MaxFileBytes is skipped unread: its size is
// in the record's headers, so it is known "too large" before anything
// diffs it. Files the dump carries no text for (copies and property
// changes that left the text alone) are absent or have no text; the
// caller cats those.
//
// Over a URL it is one `svnrdump dump -r N --incremental`, whose texts are
// deltas against the files' previous versions: they give each file's size
// and checksum, not its content, which catBatch then fetches.
func (a *Adapter) dumpRevision(ctx context.Context, info *repoInfo, rev int64, c *vcs.Change, dst vcs.Dest) (map[string]*dumpedFile, error) {
	out := map[string]*dumpedFile{}
	want := map[string]bool{}
	for _, f := range c.Files {
		if f.NodeKind == vcs.NodeFile && f.Action != vcs.ActionDelete && a.filter.Match(f.Path) {
			want[f.Path] = true
		}
	}
	if len(want) == 0 {
		return out, nil
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := readDump(pr, nil, func(n *dumpNode, text io.Reader) error {
			rel, ok := info.relPath("/" + n.path)
			if !ok || !want[rel] {
				return nil
			}
			d := out[rel]
			if d == nil {
				d = &dumpedFile{}
				out[rel] = d
			}
			// A delta against nothing (svnrdump's add) lists every property.
			if n.propsKnown && (!n.propDelta || n.action == "add" && n.copyFrom == "") {
				d.propsKnown, d.mime = true, strings.TrimSpace(n.props["svn:mime-type"])
			}
			switch {
			case !n.hasText:
				return nil
			case n.textDelta:
				// svnrdump: the size is in the delta's windows; the text
				// comes from one batched svn cat (catBatch).
				size, err := svndiffTargetSize(text)
				if err != nil {
					return fmt.Errorf("%s: %w", rel, err)
				}
				*d = dumpedFile{size: size, sized: true, tooLarge: size > a.cfg.MaxFileBytes, md5: n.textMD5, mime: d.mime, propsKnown: d.propsKnown}
				return nil
			}
			return a.writeDumped(rel, n.textLen, text, d, dst)
		})
		// Unblock the dumper if we stopped reading early.
		pr.CloseWithError(errors.Join(err, io.ErrClosedPipe))
		done <- err
	}()
	revStr := strconv.FormatInt(rev, 10)
	var err error
	name := "svnadmin dump"
	if a.access == AccessSvnlook {
		err = a.exec(ctx, a.svnadmin, pw, nil, []string{"dump", "-q", "--incremental", "-r", revStr, a.cfg.LocalPath})
	} else {
		name = "svnrdump dump"
		err = a.runTool(ctx, a.svnrdump, pw, "dump", "-q", "--incremental", "-r", revStr, info.url)
	}
	pw.CloseWithError(err)
	if derr := <-done; derr != nil {
		err = fmt.Errorf("%s r%d: %w", name, rev, derr)
	}
	if err != nil {
		removeDumped(dst, out)
		return nil, err
	}
	return out, nil
}

// writeDumped streams one text of size bytes to rel's src path, or,
// when it is over MaxFileBytes, marks it too large without reading it.
func (a *Adapter) writeDumped(rel string, size int64, text io.Reader, d *dumpedFile, dst vcs.Dest) error {
	p, err := srcPath(dst, rel)
	if err != nil {
		return err
	}
	if size > a.cfg.MaxFileBytes {
		// A replacement may have written an earlier text of this path.
		if d.written {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove %s: %w", rel, err)
			}
		}
		*d = dumpedFile{tooLarge: true, mime: d.mime, propsKnown: d.propsKnown}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("create dir for %s: %w", rel, err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", rel, err)
	}
	cw := &countWriter{w: f}
	n, err := io.Copy(cw, text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("%w: text of %s ends after %d of %d bytes", errDumpFormat, rel, n, size)
	}
	if err != nil {
		os.Remove(p)
		return fmt.Errorf("write %s: %w", rel, err)
	}
	d.size, d.lines, d.written, d.tooLarge = n, cw.lines.lines(), true, false
	return nil
}

// removeDumped deletes the texts the dump wrote for files that end up
// not reviewed (binary, over a cap) or, with keep nil, all of them.
func removeDumped(dst vcs.Dest, dumped map[string]*dumpedFile, keep ...func(rel string) bool) error {
	var errs []error
	for rel, d := range dumped {
		if !d.written || (len(keep) > 0 && keep[0](rel)) {
			continue
		}
		p, err := srcPath(dst, rel)
		if err == nil {
			err = os.Remove(p)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s: %w", rel, err))
		}
	}
	return errors.Join(errs...)
}
