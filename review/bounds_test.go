package review_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/mcperr"
	"github.com/aicr-dev/aicr/review"
)

// filler yields n bytes of 'a' without holding them.
type filler struct{ n int64 }

func (f *filler) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > f.n {
		p = p[:f.n]
	}
	for i := range p {
		p[i] = 'a'
	}
	f.n -= int64(len(p))
	return len(p), nil
}

// A client that sends one 100 MB line stops the stdio server with an
// error naming the limit, having read little more than the limit.
func TestStdioServerRefusesAHugeLine(t *testing.T) {
	f := newFixture(t)
	initLine := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
	huge := &filler{n: 100 << 20}
	in := io.MultiReader(strings.NewReader(initLine), strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"aicr.report_problem","arguments":{"message":"`),
		huge, strings.NewReader(`"}}}`+"\n"))
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	err := review.Serve(ctx, review.ServerOptions{StatePath: f.statePath, ChangePath: f.changePath}, in, &out)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if !errors.Is(err, mcperr.ErrLineTooLong) {
		t.Fatalf("Serve = %v, want ErrLineTooLong", err)
	}
	if !strings.Contains(err.Error(), "4 MiB") {
		t.Errorf("error %q does not name the limit", err)
	}
	if read := int64(100<<20) - huge.n; read > 2*mcperr.MaxLineBytes {
		t.Errorf("read %d bytes of the line, want it stopped near %d", read, mcperr.MaxLineBytes)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("allocated %d MiB serving it", alloc>>20)
	}
}
