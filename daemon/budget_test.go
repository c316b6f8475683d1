package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/triggers"
)

// budgetZone is the daemon's time zone in these tests: a day starts at
// its midnight, not UTC's.
var budgetZone = time.FixedZone("CET", 3600)

// changedFile is the file each commit of the rig adds.
var changedFile = regexp.MustCompile(`app[0-9]+\.go`)

// budgetRig is a daemon's pipeline over a real svn repository, a real
// SQLite store, the file channel, and the llm agent against modelsim
// priced at $1/$10 per million tokens; the model answers a review in one
// request reporting 40,000 input and 2,000 output tokens: $0.06 a review.
// The clock is the test's.
type budgetRig struct {
	t     *testing.T
	sim   *modelsim.Server
	store *audit.Store
	parts *Components
	wc    string
	out   string
	now   time.Time
	rev   int
}

func newBudgetRig(t *testing.T, budget string) *budgetRig {
	t.Helper()
	requireSVN(t)
	dir := t.TempDir()
	r := &budgetRig{t: t, wc: filepath.Join(dir, "wc"), out: filepath.Join(dir, "reports.jsonl"),
		now: time.Date(2026, 12, 2, 10, 0, 0, 0, budgetZone)}
	repos := filepath.Join(dir, "repo")
	if out, err := exec.Command("svnadmin", "create", repos).CombinedOutput(); err != nil {
		t.Fatalf("svnadmin: %v %s", err, out)
	}
	if out, err := exec.Command("svn", "checkout", "file://"+repos, r.wc).CombinedOutput(); err != nil {
		t.Fatalf("checkout: %v %s", err, out)
	}
	r.sim = modelsim.StartFunc(t, func(req modelsim.Request) modelsim.Step {
		usage := modelsim.Usage{Input: 40000, Output: 2000}
		if req.ToolResults() > 0 {
			return modelsim.Step{Text: "Done.", Usage: usage}
		}
		file := ""
		if len(req.Messages) > 0 {
			file = changedFile.FindString(req.Messages[0].Text)
		}
		return modelsim.Step{Usage: usage, ToolCalls: []modelsim.ToolCall{
			{Name: req.Offered("report_problem"), Arguments: `{"file":"` + file + `","line":3,"severity":"medium","category":"naming","message":"model finding: Name shadows the package"}`},
			{Name: req.Offered("publish_summary"), Arguments: `{"markdown":"The model looked at it."}`},
		}}
	})
	t.Setenv("AICR_TEST_DAEMON_SECRET", string(testSecret))
	t.Setenv("AICR_TEST_MODEL_KEY", "k")
	path := filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`
[daemon]
listen = "127.0.0.1:0"
data_dir = "data"
secret_env = "AICR_TEST_DAEMON_SECRET"
[[repo]]
name = "main"
kind = "svn"
local_path = %q
reconcile_every = "off"
channels = ["reports"]
[[channel]]
name = "reports"
kind = "file"
path = %q
[agent]
kind = "llm"
[agent.llm]
api = "openai-chat"
base_url = %q
model = "big"
api_key_env = "AICR_TEST_MODEL_KEY"
max_turns = 4
price_per_mtok_in = 1.0
price_per_mtok_out = 10.0
%s
`, repos, r.out, r.sim.URL, budget)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Daemon.AicrBinary = "/bin/true"
	r.store, err = audit.Open(context.Background(), filepath.Join(dir, "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.store.Close() })
	clock := func() time.Time { return r.now }
	r.store.SetClock(clock)
	r.parts, err = Build(cfg, Deps{Store: r.store, Now: clock}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// commit commits a new file with a conflict marker the builtin rules
// report (a new file each time: findings tracked across commits would
// show the same finding as still open), and returns its revision.
func (r *budgetRig) commit() string {
	r.t.Helper()
	body := fmt.Sprintf("package app\n\nfunc Name() string { return %q }\n<<<<<<< mine\n", fmt.Sprint("v", r.rev+1))
	return r.commitFile(fmt.Sprintf("app%d.go", r.rev+1), body)
}

// commitFile commits name (added when new) with body.
func (r *budgetRig) commitFile(name, body string) string {
	r.t.Helper()
	r.rev++
	path := filepath.Join(r.wc, name)
	_, statErr := os.Stat(path)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		r.t.Fatal(err)
	}
	if statErr != nil {
		if out, err := exec.Command("svn", "add", path).CombinedOutput(); err != nil {
			r.t.Fatalf("svn add: %v %s", err, out)
		}
	}
	cmd := exec.Command("svn", "commit", "--username", "alice", "-m", "change "+fmt.Sprint(r.rev), "--non-interactive")
	cmd.Dir = r.wc
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("svn commit: %v %s", err, out)
	}
	return fmt.Sprint(r.rev)
}

// review commits a change at the clock's time, queues it as the trigger
// does, lets the pipeline take it as a worker does, and delivers its
// report; it returns the run as recorded and the report's line.
func (r *budgetRig) review(at time.Time) (*audit.RunDetail, map[string]any) {
	r.t.Helper()
	r.now = at
	return r.reviewRev(r.commit())
}

// reviewRev is review of a revision already committed.
func (r *budgetRig) reviewRev(rev string) (*audit.RunDetail, map[string]any) {
	r.t.Helper()
	ctx := context.Background()
	if _, err := r.store.Enqueue(ctx, triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: rev, User: "alice"}, triggers.SourceTrigger, time.Time{}); err != nil {
		r.t.Fatal(err)
	}
	run, err := r.store.ClaimNext(ctx)
	if err != nil || run == nil {
		r.t.Fatalf("claim: %+v %v", run, err)
	}
	if _, err := r.parts.Pipeline.Process(ctx, run, ProcessOptions{}); err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.parts.Dispatcher.DriveDue(ctx); err != nil {
		r.t.Fatal(err)
	}
	d, err := r.store.GetRun(ctx, run.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	var line map[string]any
	for _, l := range r.lines() {
		if id, _ := l["run_id"].(float64); int64(id) == run.ID {
			line = l
		}
	}
	if line == nil {
		r.t.Fatalf("run %d (%s, %s) sent no report", run.ID, d.Status, d.Error)
	}
	return d, line
}

func (r *budgetRig) lines() []map[string]any {
	r.t.Helper()
	f, err := os.Open(r.out)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			r.t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// modelReview checks that run was the configured (or the named) model's
// review, with no budget notice.
func (r *budgetRig) modelReview(d *audit.RunDetail, line map[string]any, model string) {
	r.t.Helper()
	text, _ := line["text"].(string)
	if d.Status != audit.RunSucceeded || d.Agent == nil || d.Agent.Agent != "llm" || d.Agent.Model != model || d.Agent.CostUSD == nil {
		r.t.Errorf("run %d is not a review by %s: %s %+v", d.ID, model, d.Status, d.Agent)
	}
	if !strings.Contains(text, "model finding") || !strings.Contains(text, "Unresolved merge-conflict marker") {
		r.t.Errorf("run %d's report lacks the model's or the builtin rules' finding:\n%s", d.ID, text)
	}
	if d.Budget != nil || strings.Contains(text, "budget") {
		r.t.Errorf("run %d: a review under budget carries a budget notice: %+v\n%s", d.ID, d.Budget, text)
	}
}

// The day's budget runs out at the second review: the third, the same
// day, is reviewed by the builtin rules only and says so; the first of
// the next day (midnight in the daemon's zone) is the model's again.
func TestSpentBudgetReviewsWithTheBuiltinRulesUntilTheNextDay(t *testing.T) {
	r := newBudgetRig(t, `
[[budget]]
name = "daily"
period = "day"
max_cost_usd = 0.10
action = "builtin-only"
`)
	day := r.now
	d, line := r.review(day)
	r.modelReview(d, line, "big")
	d, line = r.review(day.Add(time.Hour))
	r.modelReview(d, line, "big")
	asked := len(r.sim.Requests())
	if asked != 2 {
		t.Fatalf("two reviews made %d model requests, want 2", asked)
	}

	d, line = r.review(day.Add(2 * time.Hour))
	if n := len(r.sim.Requests()); n != asked {
		t.Errorf("a review past the budget asked the model %d times", n-asked)
	}
	text, _ := line["text"].(string)
	want := "The model budget daily for this day is spent ($0.12 of $0.10); reviewed with the builtin rules only; model reviews resume at 2026-12-03 00:00 CET."
	if !strings.Contains(text, want) {
		t.Errorf("report lacks %q:\n%s", want, text)
	}
	if b, _ := line["budget"].(map[string]any); b["name"] != "daily" || b["action"] != "builtin-only" {
		t.Errorf("the file channel's record lacks the budget: %v", line["budget"])
	}
	if !strings.Contains(text, "Unresolved merge-conflict marker") || strings.Contains(text, "model finding") {
		t.Errorf("a builtin-only review reports other than the builtin rules' finding:\n%s", text)
	}
	if d.Status != audit.RunSucceeded || d.Agent == nil || d.Agent.Agent != "builtin" || d.Agent.CostUSD != nil {
		t.Errorf("builtin-only run: %s %+v", d.Status, d.Agent)
	}
	if b := d.Budget; b == nil || b.Name != "daily" || b.Action != "builtin-only" || b.SpentUSD < 0.119 || b.LimitUSD != 0.10 ||
		!b.ResumesAt.Equal(time.Date(2026, 12, 3, 0, 0, 0, 0, budgetZone)) {
		t.Errorf("run budget %+v", d.Budget)
	}

	// /metrics measures the budget as the reviewer does.
	m := NewMetrics(r.store, "test")
	m.budgets.now = func() time.Time { return r.now }
	m.watchBudgets(r.parts.Config.Budgets)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`aicr_budget_spent_usd{budget="daily"} 0.12`, `aicr_budget_limit_usd{budget="daily"} 0.1`,
		`aicr_budget_remaining_usd{budget="daily"} 0`, `aicr_budget_exhausted{budget="daily"} 1`,
		fmt.Sprintf(`aicr_budget_period_end_timestamp_seconds{budget="daily"} %g`, float64(time.Date(2026, 12, 3, 0, 0, 0, 0, budgetZone).Unix()))} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, rec.Body.String())
		}
	}
	if strings.Contains(rec.Body.String(), "aicr_budget_spent_tokens") {
		t.Error("/metrics shows token gauges of a budget without a token limit")
	}

	// 23:59 is still the spent day; 00:30 the next is not.
	d, _ = r.review(time.Date(2026, 12, 2, 23, 59, 0, 0, budgetZone))
	if d.Budget == nil || d.Agent.Agent != "builtin" {
		t.Errorf("23:59 the same day: %+v %+v", d.Budget, d.Agent)
	}
	d, line = r.review(time.Date(2026, 12, 3, 0, 30, 0, 0, budgetZone))
	r.modelReview(d, line, "big")
	if n := len(r.sim.Requests()); n != asked+1 {
		t.Errorf("the next day's review made %d model requests, want 1", n-asked)
	}
}

// Action skip reviews nothing past the budget: the run is recorded as
// skipped for the budget and its report says the change was not reviewed.
func TestSpentBudgetSkipsReviewsWithANotice(t *testing.T) {
	r := newBudgetRig(t, `
[[budget]]
name = "main-daily"
repos = ["main"]
period = "day"
max_input_tokens = 70000
action = "skip"
`)
	day := r.now
	d, line := r.review(day)
	r.modelReview(d, line, "big")
	d, line = r.review(day.Add(time.Minute))
	asked := len(r.sim.Requests())
	if asked != 2 {
		t.Fatalf("%d model requests, want 2", asked)
	}
	r.modelReview(d, line, "big")
	d, line = r.review(day.Add(2 * time.Minute))
	if n := len(r.sim.Requests()); n != asked {
		t.Errorf("a skipped review asked the model %d times", n-asked)
	}
	if d.Status != audit.RunSkipped || d.SkipReason != im.ReasonBudgetSpent || d.Agent != nil {
		t.Errorf("skipped run: %s %q %+v", d.Status, d.SkipReason, d.Agent)
	}
	if b := d.Budget; b == nil || b.Action != "skip" || !b.Tokens || b.SpentTokens != 80000 || b.LimitTokens != 70000 {
		t.Errorf("run budget %+v", d.Budget)
	}
	text, _ := line["text"].(string)
	for _, want := range []string{
		"The model budget main-daily for this day is spent (80,000 of 70,000 prompt tokens); the change was not reviewed; reviews resume at 2026-12-03 00:00 CET.",
		"Not reviewed: the model budget is spent.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if skip, _ := line["skip"].(map[string]any); skip["reason"] != im.ReasonBudgetSpent {
		t.Errorf("report skip %v", line["skip"])
	}
	d, line = r.review(day.Add(24 * time.Hour))
	r.modelReview(d, line, "big")
}

// Action fallback reviews with the fallback model on the same server;
// the report names it, and the configured model is back the next month.
func TestSpentBudgetFallsBackToTheCheaperModel(t *testing.T) {
	r := newBudgetRig(t, `
[[budget]]
name = "monthly"
period = "month"
max_cost_usd = 0.05
action = "fallback"
fallback_model = "small"
`)
	d, line := r.review(r.now)
	r.modelReview(d, line, "big")
	asked := len(r.sim.Requests())
	d, line = r.review(r.now.Add(time.Hour))
	reqs := r.sim.Requests()[asked:]
	if len(reqs) == 0 {
		t.Fatal("the fallback review asked no model")
	}
	for _, q := range reqs {
		if q.Model != "small" {
			t.Errorf("fallback review asked model %q", q.Model)
		}
	}
	if d.Agent == nil || d.Agent.Model != "small" || d.Budget == nil || d.Budget.Action != "fallback" {
		t.Errorf("fallback run: %+v %+v", d.Agent, d.Budget)
	}
	text, _ := line["text"].(string)
	want := "The model budget monthly for this month is spent ($0.06 of $0.05); reviewed with the fallback model small; the configured model resumes at 2027-01-01 00:00 CET."
	if !strings.Contains(text, want) || !strings.Contains(text, "model finding") {
		t.Errorf("report lacks %q or the model's finding:\n%s", want, text)
	}
	d, line = r.review(time.Date(2027, 1, 1, 0, 0, 1, 0, budgetZone))
	r.modelReview(d, line, "big")
}

// A review the budget left to the builtin rules resolves none of the
// model's findings: it never looked for them. The model's next review
// does.
func TestBuiltinOnlyReviewResolvesNoModelFinding(t *testing.T) {
	r := newBudgetRig(t, `
[[budget]]
name = "daily"
period = "day"
max_cost_usd = 0.05
action = "builtin-only"
`)
	d, line := r.review(r.now)
	r.modelReview(d, line, "big")
	open := func() int {
		t.Helper()
		fs, err := r.store.ListFindings(context.Background(), findings.Filter{Repo: "main", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range fs {
			if f.Path == "app1.go" && f.Category == "naming" && f.State.Active() {
				n++
			}
		}
		return n
	}
	if open() != 1 {
		t.Fatal("the model's finding is not open after its review")
	}
	// The line the model flagged is rewritten, under a spent budget.
	r.now = r.now.Add(time.Hour)
	d, _ = r.reviewRev(r.commitFile("app1.go", "package app\n\n// rewritten\nfunc Other() {}\n"))
	if d.Budget == nil || d.Agent == nil || d.Agent.Agent != "builtin" {
		t.Fatalf("not a builtin-only review: %+v %+v", d.Budget, d.Agent)
	}
	if open() != 1 {
		t.Error("a builtin-only review resolved the model's finding")
	}
}
