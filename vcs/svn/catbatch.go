package svn

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"

	"github.com/aicr-dev/aicr/vcs"
)

// catBatch fetches, over a URL, the texts whose sizes svnrdump gave, with
// one `svn cat --ignore-keywords URL@N...` per maxTargetBytes of URLs
// instead of one svn cat per file. svn prints the texts back to back; the
// known sizes cut the stream into files, and each file's MD5 from the dump
// proves the cut. Files over MaxFileBytes, and files the dump's properties
// mark binary, are left out.
//
// When a text does not match (svn translated its line endings for
// svn:eol-style, say) or the batch fails for a reason of its own, the
// files not yet written are left to fetchFile's per-file cat, which
// reports their errors; only cancellation, a timeout or an unreachable
// server end the fetch here.
func (a *Adapter) catBatch(ctx context.Context, info *repoInfo, rev int64, c *vcs.Change, dumped map[string]*dumpedFile, dst vcs.Dest) error {
	if a.access != AccessSVN || len(dumped) == 0 {
		return nil
	}
	var files []batchFile
	for _, f := range c.Files {
		d := dumped[f.Path]
		if d == nil || !d.sized || d.tooLarge || d.written || d.propsKnown && d.mime != "" && MimeTypeIsBinary(d.mime) {
			continue
		}
		files = append(files, batchFile{rel: f.Path, d: d})
	}
	for start := 0; start < len(files); {
		end, size := start, 0
		args := []string{"--ignore-keywords"}
		for ; end < len(files) && (size == 0 || size < maxTargetBytes); end++ {
			u := fileURL(info.url, files[end].rel, rev)
			args = append(args, u)
			size += len(u) + 1
		}
		sp := &catSplitter{files: files[start:end], dst: dst}
		cctx, cancel := context.WithCancel(ctx)
		sp.cancel = cancel
		err := a.run(cctx, sp, "cat", args...)
		if err == nil {
			err = sp.finish()
		}
		sp.abort()
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && (errors.Is(err, vcs.ErrTimeout) || errors.Is(err, vcs.ErrUnavailable)):
			return err
		case err != nil:
			// The rest of this batch and every later one go file by file.
			return nil //nolint:nilerr // the batch's failure is not the read's: the caller reads the rest one file at a time
		}
		start = end
	}
	return nil
}

type batchFile struct {
	rel string
	d   *dumpedFile
}

// catSplitter is the batched cat's stdout: it writes each next size bytes
// to the next file's src path.
type catSplitter struct {
	files  []batchFile
	dst    vcs.Dest
	cancel context.CancelFunc

	i    int // the file being written
	out  *os.File
	cw   *countWriter
	sum  hash.Hash
	left int64
	err  error
}

func (s *catSplitter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	written := 0
	for {
		if s.out == nil {
			if s.i >= len(s.files) {
				if len(p) > 0 {
					return written, s.fail(fmt.Errorf("svn cat printed more than the dump's sizes"))
				}
				return written, nil
			}
			if err := s.open(); err != nil {
				return written, s.fail(err)
			}
		}
		if s.left == 0 {
			if err := s.close(); err != nil {
				return written, s.fail(err)
			}
			continue
		}
		if len(p) == 0 {
			return written, nil
		}
		n := int64(len(p))
		if n > s.left {
			n = s.left
		}
		if _, err := s.cw.Write(p[:n]); err != nil {
			return written, s.fail(err)
		}
		s.sum.Write(p[:n])
		s.left -= n
		written += int(n)
		p = p[n:]
	}
}

func (s *catSplitter) open() error {
	f := s.files[s.i]
	p, err := srcPath(s.dst, f.rel)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("create dir for %s: %w", f.rel, err)
	}
	out, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", f.rel, err)
	}
	s.out, s.cw, s.sum, s.left = out, &countWriter{w: out}, md5.New(), f.d.size
	return nil
}

// close ends the current file once all its bytes are in and checks them.
func (s *catSplitter) close() error {
	f := s.files[s.i]
	err := s.out.Close()
	s.out = nil
	if err != nil {
		return fmt.Errorf("write %s: %w", f.rel, err)
	}
	if got := hex.EncodeToString(s.sum.Sum(nil)); f.d.md5 != "" && got != f.d.md5 {
		p, _ := srcPath(s.dst, f.rel)
		os.Remove(p)
		return fmt.Errorf("%s: svn cat's text is not the dumped one (md5 %s, want %s)", f.rel, got, f.d.md5)
	}
	f.d.written, f.d.lines = true, s.cw.lines.lines()
	s.i++
	return nil
}

// finish closes the files the stream ended with (empty ones print
// nothing) and fails if any text came out short.
func (s *catSplitter) finish() error {
	if _, err := s.Write(nil); err != nil {
		return err
	}
	if s.out != nil || s.i < len(s.files) {
		return s.fail(fmt.Errorf("svn cat ended before file %d of %d (%s)", s.i+1, len(s.files), s.files[min(s.i, len(s.files)-1)].rel))
	}
	return nil
}

func (s *catSplitter) fail(err error) error {
	if s.err == nil {
		s.err = err
		s.cancel()
	}
	return s.err
}

// abort removes the file left half-written by a failed batch.
func (s *catSplitter) abort() {
	if s.out == nil {
		return
	}
	s.out.Close()
	s.out = nil
	if p, err := srcPath(s.dst, s.files[s.i].rel); err == nil {
		os.Remove(p)
	}
}
