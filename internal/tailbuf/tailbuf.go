// Package tailbuf keeps the last bytes a child process wrote to stderr,
// for error messages: the end of a crash report is the part that says why,
// and a runaway child must not grow the buffer without bound.
package tailbuf

import "sync"

// Buffer is an io.Writer that keeps only the last Max bytes written; safe
// for concurrent writers (exec copies stderr from its own goroutine).
type Buffer struct {
	Max int

	mu  sync.Mutex
	buf []byte
}

// New returns a Buffer keeping the last max bytes.
func New(max int) *Buffer { return &Buffer{Max: max} }

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.Max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// String returns what is kept.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
