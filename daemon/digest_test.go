package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/internal/admintest"
)

// digestRig is a data_dir with the admintest findings (reported at
// 10:00 and fixed at 14:00 the day before day), a run that cost $0.25
// at 20:00, a daily digest at 09:00 UTC to the file channel, the real
// dispatcher, and a clock the test moves.
type digestRig struct {
	fx    admintest.Fixture
	fs    admintest.Findings
	cfg   *config.Config
	store *audit.Store
	parts *Components
	now   time.Time
	day   time.Time
}

func newDigestRig(t *testing.T) *digestRig {
	t.Helper()
	r := &digestRig{fx: admintest.New(t), day: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	r.fs = admintest.AddFindingsAt(t, r.fx, r.day.Add(-23*time.Hour), r.day.Add(-19*time.Hour))
	cfg, err := config.Load(r.fx.Config)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Digests = []config.DigestTable{{Name: "daily", Channel: "reports", Every: "CRON_TZ=UTC 0 9 * * *", Repos: []string{"main"}}}
	r.cfg = cfg
	r.store, err = audit.Open(context.Background(), r.fx.DB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.store.Close() })
	clock := func() time.Time { return r.now }
	r.store.SetClock(clock)
	r.now = r.day.Add(-13 * time.Hour)
	ctx := context.Background()
	// The fixture's queued run (main r5) is reviewed now.
	e, err := r.store.ClaimNext(ctx)
	if err != nil || e == nil || e.ID != r.fx.Queued {
		t.Fatalf("claim %+v %v", e, err)
	}
	cost := 0.25
	if err := r.store.AddAgentStats(ctx, e.ID, audit.AgentStats{Agent: "llm", Model: "m", CostUSD: &cost}); err != nil {
		t.Fatal(err)
	}
	if err := r.store.FinishRun(ctx, e.ID, audit.Outcome{Status: audit.RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	r.parts, err = Build(cfg, Deps{Store: r.store, Now: clock}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sent are the file channel's lines.
func (r *digestRig) sent(t *testing.T) []map[string]any {
	t.Helper()
	path := filepath.Join(filepath.Dir(r.fx.Config), "reports.jsonl")
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// tick runs the digest job as the daemon schedules it, then the
// dispatcher.
func (r *digestRig) tick(t *testing.T) {
	t.Helper()
	j := &jobs{sched: cron.New()}
	var first []func()
	if err := scheduleFindingJobs(context.Background(), j, r.parts, r.store, Options{Config: r.cfg, Now: func() time.Time { return r.now }}, &first); err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 || len(j.sched.Entries()) != 1 {
		t.Fatalf("%d catch-ups, %d cron entries", len(first), len(j.sched.Entries()))
	}
	first[0]()
	if _, err := r.parts.Dispatcher.DriveDue(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestDigestPlannedOncePerPeriodWithItsFigures(t *testing.T) {
	r := newDigestRig(t)
	r.now = r.day.Add(30 * time.Second)
	r.tick(t)
	lines := r.sent(t)
	if len(lines) != 1 {
		t.Fatalf("%d lines after the first tick: %v", len(lines), lines)
	}
	text, _ := lines[0]["text"].(string)
	t.Logf("digest as the file channel wrote it:\n%s", text)
	for _, want := range []string{
		"aicr digest: daily (main), 2026-11-29 09:00 – 2026-11-30 09:00 UTC",
		"1 open finding; new 3, resolved 1, dismissed 1.",
		"`src/a.go`: 1 open, oldest less than a day",
		"- False-positive rate: 33% (1 of 3 reported)",
		"- Reviews: 1, $0.25",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
	// The same tick again (a second daemon, a restart within the
	// minute): planned already, nothing more is sent.
	r.now = r.day.Add(5 * time.Minute)
	r.tick(t)
	if n := len(r.sent(t)); n != 1 {
		t.Fatalf("the period was sent %d times", n)
	}
	rows, err := r.store.ListDispatches(context.Background(), audit.DispatchFilter{Channel: "reports", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	digests := 0
	for _, d := range rows {
		if d.Purpose == delivery.PurposeDigest {
			digests++
			if d.Status != delivery.StatusSent || d.RunID != 0 || d.Slot != DigestSlot("daily", r.day.Add(-24*time.Hour)) {
				t.Errorf("digest row %+v", d)
			}
		}
	}
	if digests != 1 {
		t.Fatalf("%d digest rows", digests)
	}

	// The next day: the next period, with nothing new in it.
	r.now = r.day.Add(24*time.Hour + time.Second)
	r.tick(t)
	lines = r.sent(t)
	if len(lines) != 2 {
		t.Fatalf("%d lines after the second day", len(lines))
	}
	if text, _ := lines[1]["text"].(string); !strings.Contains(text, "2026-11-30 09:00 – 2026-12-01 09:00 UTC") ||
		!strings.Contains(text, "1 open finding; new 0, resolved 0, dismissed 0.") || !strings.Contains(text, "oldest 1 day") {
		t.Fatalf("second digest:\n%s", text)
	}
}

// A daemon down over several ticks sends, when it starts, the last
// closed period once: not each one it missed.
func TestDigestCatchesUpOnceAfterMissedTicks(t *testing.T) {
	r := newDigestRig(t)
	r.now = r.day.Add(3*24*time.Hour + 4*time.Hour)
	r.tick(t)
	lines := r.sent(t)
	if len(lines) != 1 {
		t.Fatalf("%d digests at start after three missed ticks", len(lines))
	}
	if text, _ := lines[0]["text"].(string); !strings.Contains(text, "2026-12-02 09:00 – 2026-12-03 09:00 UTC") {
		t.Fatalf("catch-up digest:\n%s", text)
	}
	r.now = r.now.Add(time.Hour)
	r.tick(t)
	if n := len(r.sent(t)); n != 1 {
		t.Fatalf("a second start sent the period again (%d)", n)
	}
}

func TestLastTick(t *testing.T) {
	s, err := cron.ParseStandard("CRON_TZ=UTC 0 9 * * 1")
	if err != nil {
		t.Fatal(err)
	}
	wed := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	mon := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	if got := lastTick(s, wed); !got.Equal(mon) {
		t.Fatalf("last tick before %s = %s", wed, got)
	}
	if got := lastTick(s, mon); !got.Equal(mon) {
		t.Fatalf("a tick is its own last tick: %s", got)
	}
	if got := lastTick(s, mon.Add(-time.Second)); !got.Equal(mon.Add(-7 * 24 * time.Hour)) {
		t.Fatalf("the one before: %s", got)
	}
}

// The daemon plans the last closed period's digest when it starts and
// its dispatcher sends it to the file channel; a restart does not send
// it again.
func TestDaemonSendsTheMissedDigestAtStartOnce(t *testing.T) {
	requireSVN(t)
	fx := admintest.New(t)
	admintest.AddFindings(t, fx)
	t.Setenv("AICR_TEST_DAEMON_SECRET", string(testSecret))
	cfg, err := config.Load(fx.Config)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Daemon.Listen, cfg.Daemon.AicrBinary = "127.0.0.1:0", "/bin/true"
	cfg.Digests = []config.DigestTable{{Name: "daily", Channel: "reports", Every: "0 9 * * *"}}
	reports := filepath.Join(filepath.Dir(fx.Config), "reports.jsonl")
	digests := func() []string {
		b, _ := os.ReadFile(reports)
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if strings.Contains(line, "aicr digest: daily (every repo)") {
				out = append(out, line)
			}
		}
		return out
	}
	d := startDaemon(t, cfg)
	deadline := time.Now().Add(20 * time.Second)
	for len(digests()) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(digests()); n != 1 {
		t.Fatalf("%d digests after the start", n)
	}
	d.stop()
	d = startDaemon(t, cfg)
	time.Sleep(time.Second)
	d.stop()
	if n := len(digests()); n != 1 {
		t.Fatalf("%d digests after a restart", n)
	}
}

// The digest shows the budgets covering its repos as the period closes:
// the month's $0.25 against $0.20 is spent (and what reviews do until
// when), a day's token budget untouched; a budget of another repo is
// not shown.
func TestDigestShowsTheBudgetsOfItsRepos(t *testing.T) {
	r := newDigestRig(t)
	r.cfg.Budgets = []config.BudgetTable{
		{Name: "monthly", Period: config.BudgetMonth, MaxCostUSD: 0.20, Action: config.BudgetFallback, FallbackModel: "small"},
		{Name: "tokens", Repos: []string{"main"}, Period: config.BudgetDay, MaxInputTokens: 1000000, Action: config.BudgetSkip},
		{Name: "docs-only", Repos: []string{"docs"}, Period: config.BudgetDay, MaxCostUSD: 1, Action: config.BudgetSkip},
	}
	r.now = r.day.Add(30 * time.Second)
	r.tick(t)
	lines := r.sent(t)
	if len(lines) != 1 {
		t.Fatalf("%d lines", len(lines))
	}
	text, _ := lines[0]["text"].(string)
	for _, want := range []string{
		"Model budgets",
		"- monthly (this month): $0.25 of $0.20 spent, $0.00 left; spent: fallback (small) until 2026-12-01 00:00 UTC",
		"- tokens (this day): 0 of 1,000,000 prompt tokens spent, 1,000,000 left",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
	if strings.Contains(text, "docs-only") {
		t.Errorf("a budget of another repo is in main's digest:\n%s", text)
	}
	dig, _ := lines[0]["digest"].(map[string]any)
	if bs, _ := dig["budgets"].([]any); len(bs) != 2 {
		t.Errorf("structured digest budgets: %v", dig["budgets"])
	}
}
