package triggers

import (
	"io"
	"os"
	"sync"
	"time"
)

// StampLog makes the hook's stderr readable as a log when svn or p4d has
// it appended to a file (the hook line's `2>>notify.log`): each line then
// starts with the UTC time, so an admin can tell last night's failure from
// last month's. A terminal or a pipe (a person, a test, p4d reading the
// output) gets the lines unchanged.
func StampLog(w io.Writer) io.Writer {
	f, ok := w.(*os.File)
	if !ok {
		return w
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return w
	}
	return &stampedWriter{w: w, now: time.Now, lineStart: true}
}

type stampedWriter struct {
	mu        sync.Mutex
	w         io.Writer
	now       func() time.Time
	lineStart bool
}

// Write prefixes every line that starts in p. It reports len(p) written
// when the underlying writes succeed, as callers of io.Writer expect.
func (s *stampedWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]byte, 0, len(p)+32)
	for _, b := range p {
		if s.lineStart {
			out = s.now().UTC().AppendFormat(out, "2006-01-02T15:04:05Z ")
			s.lineStart = false
		}
		out = append(out, b)
		if b == '\n' {
			s.lineStart = true
		}
	}
	if _, err := s.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
