package main

import (
	"io"
	"unicode/utf8"

	"github.com/aicr-dev/aicr/im"
)

// termSafe is the one filter between text a person reads (tables, run
// details, CSV, status lines, errors) and their terminal: committer and
// agent text (an svn author, a summary title, a run's error) may carry
// escape sequences that recolour, retitle or rewrite the terminal. It
// drops control characters other than newline and tab, and bidirectional
// overrides, the way im.Sanitize does for chat; a rune split across two
// writes is held until it is whole. JSON output does not go through it:
// the encoder escapes control characters itself.
func termSafe(w io.Writer) io.Writer {
	if _, ok := w.(*termWriter); ok {
		return w
	}
	return &termWriter{w: w}
}

type termWriter struct {
	w       io.Writer
	pending []byte
}

func (t *termWriter) Write(p []byte) (int, error) {
	buf := append(t.pending, p...)
	cut := len(buf)
	// Hold back an incomplete rune at the end (at most 3 bytes).
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-3; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				cut = i
			}
			break
		}
	}
	t.pending = append([]byte(nil), buf[cut:]...)
	if _, err := io.WriteString(t.w, im.Sanitize(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// termText is termSafe for one string.
func termText(s string) string { return im.Sanitize(s) }
