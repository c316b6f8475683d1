// Package imtest holds local stand-ins for the chat platforms aicr posts
// to, for tests. Each one implements the platform's documented webhook
// protocol on a loopback httptest server: it verifies signatures with its
// own code (written from the platform's documentation, not shared with
// the channel), enforces the size and rate limits, and answers with the
// platform's real error bodies (HTTP 200 with a non-zero code).
package imtest

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aicr-dev/aicr/im"
)

// AssertNoLeak fails the test if any secret appears in s. Channel tests
// run it on every error string, log line and rendered body they see.
func AssertNoLeak(t testing.TB, what, s string, secrets ...string) {
	t.Helper()
	for _, sec := range secrets {
		if sec != "" && strings.Contains(s, sec) {
			t.Errorf("%s leaks a secret (%q…): %s", what, sec[:min(4, len(sec))], s)
		}
	}
}

// Canned is a scripted answer returned instead of the normal processing,
// for fault tests (HTTP 500, 429 with Retry-After, a code in a 200).
type Canned struct {
	Status int
	Header http.Header
	Body   string
}

// window is a sliding-window rate limit: at most limit requests in any
// period, the strictest reading of "N per minute".
type window struct {
	limit  int
	period time.Duration
	times  []time.Time
}

func (w *window) allow(now time.Time) bool {
	cut := now.Add(-w.period)
	kept := w.times[:0]
	for _, t := range w.times {
		if t.After(cut) {
			kept = append(kept, t)
		}
	}
	w.times = kept
	if len(w.times) >= w.limit {
		return false
	}
	w.times = append(w.times, now)
	return true
}

// base is what every stand-in shares: a clock, a script of canned
// answers, and rate windows.
type base struct {
	mu      sync.Mutex
	now     func() time.Time
	script  []Canned
	windows []*window
}

// SetNow replaces the stand-in's clock (signature freshness and rate
// windows), so tests never depend on real time passing.
func (b *base) SetNow(now func() time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now = now
}

// Script queues canned answers for the next requests, in order.
func (b *base) Script(c ...Canned) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.script = append(b.script, c...)
}

// popScript returns the next canned answer, if any. Callers hold mu.
func (b *base) popScript() (Canned, bool) {
	if len(b.script) == 0 {
		return Canned{}, false
	}
	c := b.script[0]
	b.script = b.script[1:]
	return c, true
}

// allow checks every rate window. Callers hold mu.
func (b *base) allow() bool {
	now := b.clock()
	for _, w := range b.windows {
		if !w.allow(now) {
			return false
		}
	}
	return true
}

func (b *base) clock() time.Time {
	if b.now == nil {
		return time.Now()
	}
	return b.now()
}

func writeCanned(w http.ResponseWriter, c Canned) {
	for k, vs := range c.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	status := c.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(c.Body))
}

func writeJSON(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(body))
}

// CheckPart asserts what every part of a split report must satisfy:
// valid UTF-8, every code fence it opens closed again, and the "(i/n)"
// label in its head when there is more than one part.
func CheckPart(t testing.TB, what, head, body string, i, n int) {
	t.Helper()
	if !utf8.ValidString(head) || !utf8.ValidString(body) {
		t.Errorf("%s: part %d is not valid UTF-8", what, i)
	}
	open := ""
	for _, line := range strings.Split(body, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "```") {
			continue
		}
		fence := t[:len(t)-len(strings.TrimLeft(t, "`"))]
		switch {
		case open == "":
			open = fence
		case fence == open && strings.Trim(t, "`") == "":
			open = ""
		}
	}
	if open != "" {
		t.Errorf("%s: part %d leaves a code fence open", what, i)
	}
	label := fmt.Sprintf("(%d/%d)", i, n)
	if n > 1 && !strings.Contains(head, label) {
		t.Errorf("%s: part %d head %q lacks %s", what, i, head, label)
	}
	if n == 1 && strings.Contains(head, "(1/1)") {
		t.Errorf("%s: single part labelled: %q", what, head)
	}
}

// AssertSendLeaksNothing is the no-leak check every channel test runs on
// the outcome of a Send: the error (its text and every field of a
// *im.SendError, response excerpt included) and the receipt (rendered
// body, response, message id) must contain none of the secrets, which
// should include the webhook URL and the token inside it.
func AssertSendLeaksNothing(t testing.TB, rec im.Receipt, err error, secrets ...string) {
	t.Helper()
	if err != nil {
		AssertNoLeak(t, "error", err.Error(), secrets...)
		AssertNoLeak(t, "error fields", fmt.Sprintf("%+v", err), secrets...)
		var se *im.SendError
		if errors.As(err, &se) {
			AssertNoLeak(t, "error response", se.Response+" "+se.PlatformCode+" "+se.MessageID, secrets...)
		}
	}
	AssertNoLeak(t, "receipt", rec.Rendered+"\n"+rec.Response+"\n"+rec.MessageID, secrets...)
}

// bot is a stand-in webhook robot: its server, and the messages it
// accepted.
type bot[M any] struct {
	base
	Server   *httptest.Server
	received []M
}

// start serves handle, with mu held and after any scripted answer, until
// the test ends; windows are the platform's rate limits.
func (b *bot[M]) start(t testing.TB, handle http.HandlerFunc, windows []*window) {
	b.windows = windows
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if c, ok := b.popScript(); ok {
			writeCanned(w, c)
			return
		}
		handle(w, r)
	}))
	t.Cleanup(b.Server.Close)
}

// Received returns the messages accepted so far.
func (b *bot[M]) Received() []M {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]M(nil), b.received...)
}
