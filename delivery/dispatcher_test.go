package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/webhook"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/triggers"
)

// standIn is a webhook receiver that answers from a script, records every
// request, and (like a well-behaved receiver) accepts each Idempotency-Key
// once.
type standIn struct {
	mu       sync.Mutex
	script   []int // statuses to answer, in order; then 200 (or always)
	always   int   // when set, the status after the script runs out
	arrived  atomic.Int32
	retryAt  string
	block    chan struct{} // when set, requests wait on it
	requests []request
	accepted map[string]int
}

type request struct {
	at     time.Time
	key    string
	status int
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	s.arrived.Add(1)
	if s.block != nil {
		<-s.block
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	status := http.StatusOK
	if s.always != 0 {
		status = s.always
	}
	if len(s.script) > 0 {
		status, s.script = s.script[0], s.script[1:]
	}
	key := r.Header.Get(webhook.HeaderIdempotencyKey)
	s.requests = append(s.requests, request{at: time.Now(), key: key, status: status})
	if status == http.StatusTooManyRequests && s.retryAt != "" {
		w.Header().Set("Retry-After", s.retryAt)
	}
	if status == http.StatusOK {
		if s.accepted == nil {
			s.accepted = map[string]int{}
		}
		s.accepted[key]++
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"status":%d}`, status)
}

func (s *standIn) snapshot() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.requests...)
}

// clock is a settable test clock shared by the store and the dispatcher.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// plannedReport is the report every fixture dispatch is planned with.
func plannedReport(runID int64) *im.Report {
	r := im.BuildReport(im.Message{RunID: runID, Result: review.Result{Problems: []review.Problem{
		{File: "a.go", Line: 1, Severity: review.SeverityHigh, Message: "m"}}}})
	return &r
}

type fixture struct {
	t     *testing.T
	path  string
	store *audit.Store
	clk   *clock
	srv   *standIn
	url   string
	// channels are the dispatcher's, by name.
	channels map[string]im.Channel
}

func newFixture(t *testing.T, ratePerMinute int) *fixture {
	t.Helper()
	f := &fixture{t: t, path: filepath.Join(t.TempDir(), "aicr.db"), clk: &clock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}, srv: &standIn{}}
	hs := httptest.NewServer(f.srv)
	t.Cleanup(hs.Close)
	f.url = hs.URL + "/hook"
	t.Setenv("AICR_TEST_HOOK_URL", f.url)
	f.open()
	ch, err := (&webhook.Config{URLEnv: "AICR_TEST_HOOK_URL", RatePerMinute: ratePerMinute}).Build(im.ChannelConfig{Name: "hook", Kind: "webhook"}, im.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	f.channels = map[string]im.Channel{"hook": ch}
	return f
}

func (f *fixture) open() {
	s, err := audit.Open(context.Background(), f.path)
	if err != nil {
		f.t.Fatal(err)
	}
	s.SetClock(f.clk.Now)
	f.store = s
	f.t.Cleanup(func() { s.Close() })
}

func (f *fixture) dispatcher(maxAttempts int) *delivery.Dispatcher {
	return delivery.New(f.store, f.channels, delivery.Options{Config: delivery.Config{MaxAttempts: maxAttempts, Backoff: time.Second,
		MaxBackoff: time.Minute, Timeout: 2 * time.Second}, Now: f.clk.Now, Jitter: func() float64 { return 0.5 }})
}

// plan creates a finished run and a pending dispatch of it to "hook".
func (f *fixture) plan(rev int) delivery.Dispatch {
	f.t.Helper()
	ctx := context.Background()
	ev := triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: strconv.Itoa(rev)}
	if _, err := f.store.Enqueue(ctx, ev, triggers.SourceTrigger, time.Time{}); err != nil {
		f.t.Fatal(err)
	}
	run, err := f.store.ClaimNext(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.store.FinishRun(ctx, run.ID, audit.Outcome{Status: audit.RunSucceeded}); err != nil {
		f.t.Fatal(err)
	}
	d, err := f.store.PlanDispatch(ctx, run.ID, "hook", delivery.PurposeReport, delivery.StatusPending, "", plannedReport(run.ID))
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

func (f *fixture) attempts(id int64) []delivery.Attempt {
	f.t.Helper()
	a, err := f.store.DispatchAttempts(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

func TestRateLimited429HonoursRetryAfter(t *testing.T) {
	f := newFixture(t, 0)
	f.srv.script, f.srv.retryAt = []int{429}, "7"
	d := f.plan(1)
	disp := f.dispatcher(6)
	ctx := context.Background()

	got, err := disp.AttemptNow(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != delivery.StatusPending || got.NextAttemptAt.Sub(f.clk.Now()) < 7*time.Second {
		t.Fatalf("after 429: status %s next %v (now %v), want pending at least 7s later", got.Status, got.NextAttemptAt, f.clk.Now())
	}
	// Not due yet: nothing is sent.
	if n, err := disp.DriveDue(ctx); err != nil || n != 0 {
		t.Fatalf("DriveDue before Retry-After: %d attempts, %v", n, err)
	}
	f.clk.Add(7 * time.Second)
	if n, err := disp.DriveDue(ctx); err != nil || n != 1 {
		t.Fatalf("DriveDue after Retry-After: %d attempts, %v", n, err)
	}
	after, _ := f.store.GetDispatch(ctx, d.ID)
	if after.Status != delivery.StatusSent || after.Rendered == "" {
		t.Fatalf("final: %+v", after)
	}
	a := f.attempts(d.ID)
	if len(a) != 2 || a[0].Outcome != "retry" || a[0].StatusCode != 429 || a[0].Reason != "rate_limited" || a[1].Outcome != "sent" || a[1].StatusCode != 200 {
		t.Fatalf("attempts: %+v", a)
	}
	reqs := f.srv.snapshot()
	if len(reqs) != 2 || reqs[0].key != reqs[1].key || reqs[0].key != delivery.DedupeKey(d.RunID, "hook") {
		t.Fatalf("idempotency keys differ across retries: %+v", reqs)
	}
}

func TestServerErrorsThenSuccessBackOffExponentially(t *testing.T) {
	f := newFixture(t, 0)
	f.srv.script = []int{500, 502, 503}
	d := f.plan(1)
	disp := f.dispatcher(6)
	ctx := context.Background()
	got, _ := disp.AttemptNow(ctx, d.ID)
	var delays []time.Duration
	for got.Status == delivery.StatusPending {
		delay := got.NextAttemptAt.Sub(f.clk.Now())
		delays = append(delays, delay)
		f.clk.Add(delay)
		if _, err := disp.DriveDue(ctx); err != nil {
			t.Fatal(err)
		}
		got, _ = f.store.GetDispatch(ctx, d.ID)
	}
	if got.Status != delivery.StatusSent || got.Attempts != 4 {
		t.Fatalf("final %s after %d attempts", got.Status, got.Attempts)
	}
	// Jitter is pinned at the midpoint, so the delays are exactly 1s, 2s, 4s.
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	if fmt.Sprint(delays) != fmt.Sprint(want) {
		t.Fatalf("delays %v, want %v", delays, want)
	}
	if n := f.srv.accepted[delivery.DedupeKey(d.RunID, "hook")]; n != 1 {
		t.Fatalf("delivered %d times", n)
	}
}

func TestPermanentErrorFailsAtOnce(t *testing.T) {
	f := newFixture(t, 0)
	f.srv.script = []int{400}
	d := f.plan(1)
	got, err := f.dispatcher(6).AttemptNow(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != delivery.StatusFailed || got.Attempts != 1 || got.LastError == "" {
		t.Fatalf("got %+v", got)
	}
	if _, err := f.dispatcher(6).AttemptNow(context.Background(), d.ID); !errors.Is(err, delivery.ErrNotClaimable) {
		t.Fatalf("a failed dispatch was claimable again: %v", err)
	}
}

func TestDeadAfterMaxAttemptsAndManualRetry(t *testing.T) {
	f := newFixture(t, 0)
	f.srv.script = []int{503, 503, 503}
	d := f.plan(1)
	disp := f.dispatcher(3)
	ctx := context.Background()
	got, _ := disp.AttemptNow(ctx, d.ID)
	for got.Status == delivery.StatusPending {
		f.clk.Add(time.Hour)
		disp.DriveDue(ctx)
		got, _ = f.store.GetDispatch(ctx, d.ID)
	}
	if got.Status != delivery.StatusDead || got.Attempts != 3 {
		t.Fatalf("want dead after 3 attempts, got %s after %d", got.Status, got.Attempts)
	}
	// `aicr dispatch retry`: back to pending, fresh budget, delivered.
	if _, err := f.store.RetryDispatch(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	got, err := disp.AttemptNow(ctx, d.ID)
	if err != nil || got.Status != delivery.StatusSent {
		t.Fatalf("after manual retry: %+v %v", got, err)
	}
	if a := f.attempts(d.ID); len(a) != 4 || a[3].Attempt != 4 {
		t.Fatalf("attempt history: %+v", a)
	}
	if _, err := f.store.RetryDispatch(ctx, d.ID); !errors.Is(err, audit.ErrNotRetryable) {
		t.Fatalf("retrying a sent dispatch: %v", err)
	}
}

func TestTimeoutIsRetried(t *testing.T) {
	f := newFixture(t, 0)
	f.srv.block = make(chan struct{})
	d := f.plan(1)
	disp := delivery.New(f.store, f.channels, delivery.Options{Config: delivery.Config{Timeout: 50 * time.Millisecond}, Now: f.clk.Now})
	got, err := disp.AttemptNow(context.Background(), d.ID)
	close(f.srv.block) // let the abandoned request finish
	if err != nil {
		t.Fatal(err)
	}
	a := f.attempts(d.ID)
	if got.Status != delivery.StatusPending || a[0].Reason != "timeout" {
		t.Fatalf("after a timeout: %s, attempts %+v", got.Status, a)
	}
}

func TestNetworkErrorBeforeRequestIsRetried(t *testing.T) {
	f := newFixture(t, 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/hook?token=s3cr3t-token"
	ln.Close()
	t.Setenv("AICR_TEST_HOOK_URL", closed)
	d := f.plan(1)
	got, err := f.dispatcher(6).AttemptNow(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	a := f.attempts(d.ID)
	if got.Status != delivery.StatusPending || a[0].Reason != "network" {
		t.Fatalf("connection refused: %s, %+v", got.Status, a)
	}
	for _, s := range []string{got.LastError, a[0].Error} {
		if containsAny(s, "s3cr3t-token", "token=") {
			t.Fatalf("the URL's token leaked into the audit trail: %q", s)
		}
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// A daemon restart between attempts: the first process scheduled a retry
// and went away; a new dispatcher on the same database delivers it once.
func TestRestartBetweenAttemptsDeliversOnce(t *testing.T) {
	f := newFixture(t, 0)
	f.srv.script = []int{500}
	d := f.plan(1)
	ctx := context.Background()
	got, _ := f.dispatcher(6).AttemptNow(ctx, d.ID)
	if got.Status != delivery.StatusPending || got.NextAttemptAt.IsZero() {
		t.Fatalf("first attempt: %+v", got)
	}
	f.store.Close()

	f.open() // the new daemon
	if _, err := f.store.ReleaseDispatchLeases(ctx); err != nil {
		t.Fatal(err)
	}
	f.clk.Add(time.Minute)
	disp := f.dispatcher(6)
	if n, err := disp.DriveDue(ctx); err != nil || n != 1 {
		t.Fatalf("DriveDue: %d, %v", n, err)
	}
	if n, _ := disp.DriveDue(ctx); n != 0 {
		t.Fatalf("a sent dispatch was attempted again (%d)", n)
	}
	if n := f.srv.accepted[delivery.DedupeKey(d.RunID, "hook")]; n != 1 {
		t.Fatalf("accepted %d times", n)
	}
}

// A crash in the middle of a send leaves an attempt with no end; the next
// process sees it and the message carries MaybeDelivered and the same key.
func TestInterruptedAttemptIsFlagged(t *testing.T) {
	f := newFixture(t, 0)
	d := f.plan(1)
	ctx := context.Background()
	if _, err := f.store.ClaimDispatch(ctx, d.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	f.store.Close() // died mid-send

	f.open()
	if n, err := f.store.ReleaseDispatchLeases(ctx); err != nil || n != 1 {
		t.Fatalf("release leases: %d %v", n, err)
	}
	var seen im.Message
	f.channels["hook"] = recordingChannel{Channel: f.channels["hook"], seen: &seen}
	if _, err := f.dispatcher(6).DriveDue(ctx); err != nil {
		t.Fatal(err)
	}
	if !seen.MaybeDelivered || seen.DedupeKey != delivery.DedupeKey(d.RunID, "hook") {
		t.Fatalf("message after an interrupted attempt: %+v", seen)
	}
	a := f.attempts(d.ID)
	if len(a) != 2 || !a[0].FinishedAt.IsZero() || a[1].Outcome != "sent" {
		t.Fatalf("attempts: %+v", a)
	}
}

type recordingChannel struct {
	im.Channel
	seen *im.Message
}

func (r recordingChannel) Send(ctx context.Context, msg im.Message) (im.Receipt, error) {
	*r.seen = msg
	return r.Channel.Send(ctx, msg)
}

// Deliveries to one channel go out in the order they were planned, an
// earlier retry holding later ones back, and never faster than the
// channel's rate, measured on the stand-in's own clock.
func TestOrderAndRateLimit(t *testing.T) {
	const perMinute = 600 // 100ms apart
	f := newFixture(t, perMinute)
	f.srv.script = []int{503}
	ctx := context.Background()
	disp := f.dispatcher(6)
	first := f.plan(1)
	if got, _ := disp.AttemptNow(ctx, first.ID); got.Status != delivery.StatusPending {
		t.Fatalf("first: %s", got.Status)
	}
	var later []delivery.Dispatch
	for rev := 2; rev <= 5; rev++ {
		d := f.plan(rev)
		if _, err := disp.AttemptNow(ctx, d.ID); !errors.Is(err, delivery.ErrNotClaimable) {
			t.Fatalf("dispatch %d jumped the queue: %v", d.ID, err)
		}
		later = append(later, d)
	}
	f.clk.Add(time.Hour)
	if n, err := disp.DriveDue(ctx); err != nil || n != 5 {
		t.Fatalf("DriveDue: %d %v", n, err)
	}
	reqs := f.srv.snapshot()[1:] // after the failed first attempt
	wantOrder := []int64{first.RunID}
	for _, d := range later {
		wantOrder = append(wantOrder, d.RunID)
	}
	if len(reqs) != len(wantOrder) {
		t.Fatalf("%d requests, want %d", len(reqs), len(wantOrder))
	}
	minGap := time.Minute / perMinute
	for i, r := range reqs {
		if r.key != delivery.DedupeKey(wantOrder[i], "hook") {
			t.Errorf("request %d is %s, want run %d", i, r.key, wantOrder[i])
		}
	}
	// Arrival times carry transport jitter under load, so the check is
	// on windows rather than single gaps: no window of one interval holds
	// more than two requests, and the whole run spans at least n-2
	// intervals. Unthrottled, all five arrive within a few milliseconds.
	for i := range reqs {
		in := 0
		for _, r := range reqs[i:] {
			if r.at.Sub(reqs[i].at) < minGap*9/10 {
				in++
			}
		}
		if in > 2 {
			t.Errorf("%d requests within %v of request %d; limit is one per %v", in, minGap*9/10, i, minGap)
		}
	}
	if span := reqs[len(reqs)-1].at.Sub(reqs[0].at); span < time.Duration(len(reqs)-2)*minGap {
		t.Errorf("%d requests in %v, limit is one per %v", len(reqs), span, minGap)
	}
}

// countingStore counts the dispatcher's look for due work.
type countingStore struct {
	delivery.Store
	looks atomic.Int32
}

func (s *countingStore) DueChannels(ctx context.Context) ([]string, error) {
	s.looks.Add(1)
	return s.Store.DueChannels(ctx)
}

// With Quiet, an idle Run sleeps through its poll and Tick without a
// query while nothing is pending and nobody commits, and still sends a
// dispatch planned behind its back at the next poll.
func TestIdleRunSkipsQueriesUntilACommit(t *testing.T) {
	f := newFixture(t, 0)
	counting := &countingStore{Store: f.store}
	disp := delivery.New(counting, f.channels, delivery.Options{Config: delivery.Config{MaxAttempts: 3, Backoff: time.Second,
		MaxBackoff: time.Minute, Timeout: 2 * time.Second}, Now: f.clk.Now, Poll: 20 * time.Millisecond,
		Quiet: &delivery.QuietCheck{
			Mark:        func() (any, bool) { m, ok := f.store.ChangeMark(); return m, ok },
			NonePending: f.store.NoDispatchPending,
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { disp.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	time.Sleep(200 * time.Millisecond) // ten polls
	for range 5 {
		disp.Tick()
		time.Sleep(5 * time.Millisecond)
	}
	if n := counting.looks.Load(); n != 1 {
		t.Fatalf("an idle dispatcher looked for due work %d times in ten polls and five ticks, want once (at start)", n)
	}

	f.plan(1) // as another process would: a commit, no Wake
	deadline := time.Now().Add(10 * time.Second)
	for f.srv.arrived.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a dispatch planned behind the dispatcher's back was not sent (%d looks)", counting.looks.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := counting.looks.Load()
	disp.Wake()
	deadline = time.Now().Add(5 * time.Second)
	for counting.looks.Load() == before {
		if time.Now().After(deadline) {
			t.Fatal("Wake did not make the dispatcher look")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// OnRateLimitWait hears only attempts that waited for a token: the first
// send takes a free one and is not a wait (it was reported as one, so
// aicr_rate_limit_waits_total counted every delivery).
func TestOnRateLimitWaitOnlyForRealWaits(t *testing.T) {
	// A second apart, burst 1: the second send finds no token even when a
	// loaded machine takes a few hundred milliseconds over the first.
	const perMinute = 60
	f := newFixture(t, perMinute)
	var mu sync.Mutex
	var waits []time.Duration
	disp := delivery.New(f.store, f.channels, delivery.Options{Config: delivery.Config{MaxAttempts: 3, Backoff: time.Second,
		MaxBackoff: time.Minute, Timeout: 2 * time.Second}, Now: f.clk.Now, Jitter: func() float64 { return 0.5 },
		OnRateLimitWait: func(_ string, d time.Duration) { mu.Lock(); waits = append(waits, d); mu.Unlock() }})
	ctx := context.Background()
	for rev := 1; rev <= 2; rev++ {
		d := f.plan(rev)
		if got, err := disp.AttemptNow(ctx, d.ID); err != nil || got.Status != delivery.StatusSent {
			t.Fatalf("dispatch %d: %s %v", d.ID, got.Status, err)
		}
		mu.Lock()
		n := len(waits)
		mu.Unlock()
		if want := rev - 1; n != want {
			t.Fatalf("after send %d: %d rate-limit waits reported (%v), want %d", rev, n, waits, want)
		}
	}
	if waits[0] <= 0 || waits[0] > time.Minute/perMinute {
		t.Errorf("second send waited %v, want about %v", waits[0], time.Minute/perMinute)
	}
}
