package mcperr

import (
	"bytes"
	"fmt"
	"io"
)

// MaxLineBytes bounds one JSON-RPC message on an MCP stdio transport.
// The largest message a client sends aicr's servers is a tool call whose
// arguments the review limits already cap far below this; mcp-go itself
// reads a line whole, however long, so without a bound a runaway or
// hostile client could make a server hold any amount of memory.
const MaxLineBytes = 4 << 20

// ErrLineTooLong: a client sent a message line over MaxLineBytes.
var ErrLineTooLong = fmt.Errorf("an MCP message is longer than %d MiB, aicr's limit on one JSON-RPC line; the client sent a runaway message", MaxLineBytes>>20)

// LimitLines wraps a stdio server's input so that a line longer than max
// bytes fails the read with ErrLineTooLong (the server stops with it)
// instead of being buffered whole. Every aicr stdio server reads through it.
func LimitLines(r io.Reader, max int) io.Reader {
	return &lineLimiter{r: r, max: max}
}

type lineLimiter struct {
	r    io.Reader
	max  int
	line int // bytes since the last newline
	err  error
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	// Never hand out more than the line may still grow by, so the bytes
	// over the limit are not delivered before the error.
	if room := l.max - l.line + 1; len(p) > room {
		p = p[:room]
	}
	n, err := l.r.Read(p)
	for i := 0; i < n; {
		j := bytes.IndexByte(p[i:n], '\n')
		if j < 0 {
			l.line += n - i
			break
		}
		l.line += j
		if l.line > l.max {
			break
		}
		l.line = 0
		i += j + 1
	}
	if l.line > l.max {
		l.err = ErrLineTooLong
		return 0, l.err
	}
	return n, err
}
