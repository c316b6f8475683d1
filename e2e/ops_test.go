package e2e

// Operating a real `aicr daemon` process: /healthz and /metrics after a
// review of a real svn commit, config reloads (aicr reload and SIGHUP)
// with good and bad files, and SIGTERM in the middle of a review.

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/internal/svntest"
	"github.com/aicr-dev/aicr/triggers"
)

func (e *env) healthz() (int, daemon.Health) {
	e.t.Helper()
	resp, err := http.Get("http://" + e.addr + "/healthz")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var h daemon.Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		e.t.Fatalf("/healthz is not JSON: %v", err)
	}
	return resp.StatusCode, h
}

func (e *env) scrape() map[string]*dto.MetricFamily {
	e.t.Helper()
	resp, err := http.Get("http://" + e.addr + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("/metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		e.t.Fatalf("/metrics does not parse: %v", err)
	}
	return families
}

// metricValue sums the samples of name whose labels include want
// (a histogram's sample count); -1 when the family is absent.
func metricValue(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f, ok := families[name]
	if !ok {
		return -1
	}
	sum := 0.0
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// postEvent sends a signed event for repo as a hook would and returns
// the HTTP status.
func (e *env) postEvent(repo, rev string) int {
	e.t.Helper()
	req, err := triggers.NewSignedRequest(context.Background(), "http://"+e.addr, []byte("e2e-secret"),
		triggers.Event{V: 1, VCS: "svn", Repo: repo, Revision: rev}, time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// aicrFails runs aicr and returns its output and exit code.
func (e *env) aicrExit(args ...string) (string, int) {
	e.t.Helper()
	cmd := exec.Command(aicrBin, args...)
	cmd.Dir = e.dir
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return string(out), 0
}

func (e *env) daemonLogText() string {
	b, _ := os.ReadFile(e.daemonLog)
	return string(b)
}

// waitLog polls the daemon's log for s (signals are handled
// asynchronously); the bound only ends a hung test.
func (e *env) waitLog(s string) { e.t.Helper(); e.waitLogCount(s, 1) }

// signalAndWait sends sig and waits for one more line with s.
func (e *env) signalAndWait(sig os.Signal, s string) {
	e.t.Helper()
	n := strings.Count(e.daemonLogText(), s)
	if err := e.daemon.Process.Signal(sig); err != nil {
		e.t.Fatal(err)
	}
	e.waitLogCount(s, n+1)
}

func (e *env) waitLogCount(s string, n int) {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(e.daemonLogText(), s) < n {
		if time.Now().After(deadline) {
			e.t.Fatalf("the daemon never logged %q:\n%s", s, e.daemonLogText())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// After a commit is reviewed and delivered, /healthz and /metrics tell
// the story: the event, the run, each stage's duration, the delivery,
// the queue; both are parsed as a monitor would.
func TestHealthzAndMetricsOfARunningDaemon(t *testing.T) {
	e := newEnv(t, 1)
	e.startDaemon()
	for _, want := range []string{"config_digest", `"version"`, "audit database migrated"} {
		if !strings.Contains(e.daemonLogText(), want) {
			t.Errorf("the daemon's start log lacks %s:\n%s", want, e.daemonLogText())
		}
	}
	e.commit("add a file", map[string]string{"a.go": "package a\n\nfunc A() int { return 1 }\n"})
	e.waitFinished(e.store(), 1, 60*time.Second)
	e.waitReports(60*time.Second, atLeast(1))
	// An unsigned request is counted, not queued.
	resp, err := http.Post("http://"+e.addr+"/v1/events", "application/json", strings.NewReader(`{"v":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	status, h := e.healthz()
	digest := fileSHA256(t, e.config)
	if status != http.StatusOK || h.Status != "ok" || h.Version == "" || h.ConfigDigest != digest ||
		h.QueueDepth != 0 || h.OldestQueuedAgeS != 0 || h.FailedRuns != 0 || h.DeadDispatches != 0 {
		t.Errorf("/healthz: %d %+v (config digest %s)", status, h, digest)
	}

	// The delivery is counted once FinishAttempt returns, just after the
	// file channel wrote its line.
	var m map[string]*dto.MetricFamily
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		m = e.scrape()
		if metricValue(m, "aicr_dispatch_attempts_total", map[string]string{"channel": "reports", "outcome": "sent"}) == 1 || time.Now().After(deadline) {
			break
		}
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"aicr_events_total", map[string]string{"source": "trigger", "outcome": "queued"}, 1},
		{"aicr_events_total", map[string]string{"outcome": "unauthenticated"}, 1},
		{"aicr_runs_finished_total", nil, 1},
		{"aicr_stage_duration_seconds", map[string]string{"stage": "fetch"}, 1},
		{"aicr_stage_duration_seconds", map[string]string{"stage": "review"}, 1},
		{"aicr_stage_duration_seconds", map[string]string{"stage": "total"}, 1},
		{"aicr_stage_duration_seconds", map[string]string{"stage": "dispatch"}, 1},
		{"aicr_dispatch_attempts_total", map[string]string{"channel": "reports", "outcome": "sent"}, 1},
		{"aicr_queue_depth", nil, 0},
		{"aicr_runs_held", nil, 0},
		{"aicr_queue_oldest_age_seconds", nil, 0},
		{"aicr_store_up", nil, 1},
		{"aicr_build_info", map[string]string{"version": h.Version}, 1},
		{"aicr_config_info", map[string]string{"digest": digest}, 1},
	}
	for _, c := range checks {
		if got := metricValue(m, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// The runtime and process collectors join at the first scrape.
	if metricValue(m, "go_goroutines", nil) <= 0 || metricValue(m, "process_start_time_seconds", nil) <= 0 {
		t.Error("no go_goroutines or process_start_time_seconds in the scrape")
	}
	// Buckets reach 30 minutes.
	top := 0.0
	for _, b := range m["aicr_stage_duration_seconds"].GetMetric()[0].GetHistogram().GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			top = max(top, b.GetUpperBound())
		}
	}
	if top != 1800 {
		t.Errorf("largest duration bucket %vs, want 1800", top)
	}
}

// aicr reload and SIGHUP re-read the config: a good file is applied
// live (a new repo's events are accepted), a bad one is refused with the
// reason and the daemon keeps serving the previous config.
func TestReloadGoodAndBadConfigs(t *testing.T) {
	e := newEnv(t, 1)
	other := filepath.Join(e.dir, "repos", "other")
	svntest.Run(t, e.dir, "svnadmin", "create", other)
	e.startDaemon()
	if code := e.postEvent("other", "1"); code != http.StatusUnprocessableEntity {
		t.Fatalf("event for a repo not yet configured: HTTP %d, want 422", code)
	}
	orig, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	good := string(orig) + "\n[[repo]]\nname = \"other\"\nkind = \"svn\"\nurl = \"file://" + other + "\"\nlocal_path = \"" + other + "\"\nchannels = [\"reports\"]\n"
	writeConfig(t, e.config, good)

	out, code := e.aicrExit("reload", "--config", e.config)
	if code != 0 || !strings.Contains(out, "reloaded") {
		t.Fatalf("aicr reload of a good file: exit %d\n%s", code, out)
	}
	goodDigest := fileSHA256(t, e.config)
	if _, h := e.healthz(); h.ConfigDigest != goodDigest || h.LastReloadError != "" {
		t.Fatalf("after the reload /healthz says %+v, want digest %s", h, goodDigest)
	}
	if code := e.postEvent("other", "1"); code != http.StatusAccepted {
		t.Fatalf("event for the repo the reload added: HTTP %d, want 202", code)
	}

	// A bad file through SIGHUP: logged, the daemon runs on.
	writeConfig(t, e.config, good+"\n[daemon\nworkers = 2\n")
	e.signalAndWait(syscall.SIGHUP, "config reload refused")
	if status, h := e.healthz(); status != http.StatusOK || h.ConfigDigest != goodDigest || h.LastReloadError == "" {
		t.Fatalf("after a refused SIGHUP reload: %d %+v", status, h)
	}
	// The same file through aicr reload: the reason printed, exit 1.
	out, code = e.aicrExit("reload", "--config", e.config, "--url", "http://"+e.addr)
	if code != 1 || !strings.Contains(out, "reload refused") || !strings.Contains(out, "aicr.toml:") {
		t.Fatalf("aicr reload of a bad file: exit %d, want 1 with the reason\n%s", code, out)
	}
	if code := e.postEvent("other", "2"); code != http.StatusAccepted {
		t.Fatalf("the refused reload changed the running config: HTTP %d for repo other", code)
	}
	// A file that parses but the daemon cannot run (a bad schedule) is
	// refused by the daemon, which says why.
	writeConfig(t, e.config, strings.Replace(good, `spool_drain_every = "@every 1s"`, `spool_drain_every = "every tuesday"`, 1))
	out, code = e.aicrExit("reload", "--config", e.config, "--url", "http://"+e.addr, "--format", "json")
	var res daemon.ReloadResult
	if code != 1 || json.Unmarshal([]byte(out), &res) != nil || res.Status != "refused" || !strings.Contains(res.Error, "spool_drain_every") ||
		res.ConfigDigest != goodDigest {
		t.Fatalf("reload with a bad schedule: exit %d\n%s", code, out)
	}

	// A good file through SIGHUP: applied; the listen change is named
	// as needing a restart and the old address keeps serving.
	next := strings.Replace(good, "workers = 1", "workers = 2", 1)
	next = strings.Replace(next, "listen = \""+e.addr+"\"", "listen = \"127.0.0.1:1\"", 1)
	writeConfig(t, e.config, next)
	e.signalAndWait(syscall.SIGHUP, "config reloaded")
	if status, h := e.healthz(); status != http.StatusOK || h.ConfigDigest != fileSHA256(t, e.config) || h.LastReloadError != "" {
		t.Fatalf("after a good SIGHUP reload: %d %+v", status, h)
	}
	if !strings.Contains(e.daemonLogText(), `"workers":2`) {
		t.Errorf("the reload did not apply workers = 2:\n%s", e.daemonLogText())
	}
	if !strings.Contains(e.daemonLogText(), "[daemon] listen") {
		t.Errorf("the listen change is not logged as needing a restart:\n%s", e.daemonLogText())
	}
	m := e.scrape()
	if ok, bad := metricValue(m, "aicr_config_reloads_total", map[string]string{"result": "ok"}), metricValue(m, "aicr_config_reloads_total", map[string]string{"result": "error"}); ok != 2 || bad != 2 {
		// The file that did not parse never reached the daemon.
		t.Errorf("reload counters: ok %v error %v, want 2 and 2", ok, bad)
	}
	// Still reviewing after all that.
	e.commit("after reloads", map[string]string{"b.go": "package b\n"})
	e.waitReports(60*time.Second, func(ls []reportLine) bool {
		for _, l := range ls {
			if l.Repo == "main" && l.Revision == "1" {
				return true
			}
		}
		return false
	})
}

func writeConfig(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// gatedReview is reviewScript whose first model answer waits for
// release: the review is in flight until the test lets it go.
func gatedReview(t *testing.T, path string, line int) (steps []modelsim.Step, started <-chan struct{}, release func()) {
	steps = reviewScript(path, line)
	s, r := make(chan struct{}, 1), make(chan struct{})
	check := steps[0].Check
	steps[0].Check = func(req modelsim.Request) error {
		s <- struct{}{}
		<-r
		return check(req)
	}
	var released bool
	release = func() {
		if !released {
			released = true
			close(r)
		}
	}
	t.Cleanup(release)
	return steps, s, release
}

func (e *env) waitExit() int {
	e.t.Helper()
	select {
	case <-e.daemonDone:
	case <-time.After(2 * time.Minute):
		e.t.Fatalf("the daemon did not stop:\n%s", e.daemonLogText())
	}
	code := e.daemon.ProcessState.ExitCode()
	e.daemon = nil
	return code
}

// SIGTERM while a review waits on the model: the daemon says it is
// draining, takes no new work, lets the review finish, delivers its
// report and exits 0.
func TestSIGTERMLetsTheReviewInFlightFinish(t *testing.T) {
	e := newEnv(t, 1)
	steps, started, release := gatedReview(t, "src/config.go", 7)
	sim := modelsim.Start(t, steps...)
	useLLM(t, e, modelsim.APIOpenAIChat, sim)
	e.startDaemon()
	e.commit("wire the production account", map[string]string{"src/config.go": plantedFile})
	<-started
	if err := e.daemon.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	e.waitLog("daemon stopping")
	if status, h := e.healthz(); status != http.StatusServiceUnavailable || h.Status != "draining" {
		t.Errorf("/healthz while draining: %d %+v", status, h)
	}
	release()
	if code := e.waitExit(); code != 0 {
		t.Fatalf("exit status %d after SIGTERM:\n%s", code, e.daemonLogText())
	}
	runs, err := e.store().ListRuns(context.Background(), audit.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Status != audit.RunSucceeded {
		t.Fatalf("runs after the drain: %+v\n%s", runs, e.daemonLogText())
	}
	if lines := e.reportLines(); len(lines) != 1 {
		t.Fatalf("%d report lines after the drain, want the review's report delivered before exit", len(lines))
	}
}

// SIGTERM while a review hangs past [daemon] shutdown_grace: the review
// is cut short and re-queued (never lost, never failed), the daemon exits
// 0, and the next start reviews it once.
func TestSIGTERMRequeuesAReviewPastTheGrace(t *testing.T) {
	e := newEnv(t, 1)
	cfg, _ := os.ReadFile(e.config)
	writeConfig(t, e.config, strings.Replace(string(cfg), "[daemon]\n", "[daemon]\nshutdown_grace = \"1s\"\n", 1))
	started := make(chan struct{}, 1)
	steps := append([]modelsim.Step{{Hang: true, Check: func(modelsim.Request) error { started <- struct{}{}; return nil }}},
		reviewScript("src/config.go", 7)...)
	sim := modelsim.Start(t, steps...)
	useLLM(t, e, modelsim.APIOpenAIChat, sim)
	e.startDaemon()
	e.commit("wire the production account", map[string]string{"src/config.go": plantedFile})
	<-started
	if err := e.daemon.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := e.waitExit(); code != 0 {
		t.Fatalf("exit status %d after SIGTERM:\n%s", code, e.daemonLogText())
	}
	s := e.store()
	runs, err := s.ListRuns(context.Background(), audit.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Status != audit.RunQueued {
		t.Fatalf("the cut review must be queued again: %+v\n%s", runs, e.daemonLogText())
	}
	if lines := e.reportLines(); len(lines) != 0 {
		t.Fatalf("a report was delivered for a review cut short: %+v", lines)
	}

	e.startDaemon()
	runs = e.waitFinished(s, 1, 120*time.Second)
	if len(runs) != 1 || runs[0].Status != audit.RunSucceeded {
		t.Fatalf("after the restart: %+v\n%s", runs, e.daemonLogText())
	}
	if lines := e.waitReports(60*time.Second, atLeast(1)); len(lines) != 1 {
		t.Fatalf("%d report lines, want exactly one", len(lines))
	}
	// The model's tokens and cost are counted by model.
	m := e.scrape()
	if v := metricValue(m, "aicr_agent_tokens_total", map[string]string{"model": "scripted-coder", "kind": "input"}); v != 3900 {
		t.Errorf("input tokens %v, want 3900", v)
	}
	if v := metricValue(m, "aicr_agent_cost_usd_total", map[string]string{"model": "scripted-coder"}); v < 0.00569 || v > 0.00571 {
		t.Errorf("cost %v, want 0.0057", v)
	}
	if v := metricValue(m, "aicr_agent_passes_total", map[string]string{"agent": "llm"}); v != 1 {
		t.Errorf("passes %v, want 1", v)
	}
}

// A second SIGTERM during the drain cuts the review short at once: it is
// re-queued, not lost, and the daemon still exits 0.
func TestSecondSIGTERMCutsTheDrainShort(t *testing.T) {
	e := newEnv(t, 1)
	started := make(chan struct{}, 1)
	sim := modelsim.Start(t, modelsim.Step{Hang: true, Check: func(modelsim.Request) error { started <- struct{}{}; return nil }})
	useLLM(t, e, modelsim.APIOpenAIChat, sim)
	e.startDaemon()
	e.commit("wire the production account", map[string]string{"src/config.go": plantedFile})
	<-started
	if err := e.daemon.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	e.waitLog("daemon stopping")
	if err := e.daemon.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := e.waitExit(); code != 0 {
		t.Fatalf("exit status %d:\n%s", code, e.daemonLogText())
	}
	if !strings.Contains(e.daemonLogText(), "second stop signal") {
		t.Errorf("the drain did not end on the second signal (the 60s grace would have):\n%s", e.daemonLogText())
	}
	runs, err := e.store().ListRuns(context.Background(), audit.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Status != audit.RunQueued {
		t.Fatalf("the cut review must be queued again: %+v", runs)
	}
}

// After a downgrade the old binary refuses the database a newer aicr
// migrated: the daemon does not start and the CLI does not read it, both
// saying what to do.
func TestDaemonRefusesANewerSchema(t *testing.T) {
	e := newEnv(t, 1)
	e.startDaemon()
	e.stopDaemon()
	db := filepath.Join(e.dir, "data", "aicr.db")
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES ((SELECT MAX(version) + 1 FROM schema_migrations), '2030-01-01T00:00:00.000000000Z')`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"daemon", "--config", e.config}, {"audit", "list", "--config", e.config}} {
		out, code := e.aicrExit(args...)
		if code != 1 || !strings.Contains(out, "newer than this aicr") || !strings.Contains(out, "restore the backup") {
			t.Errorf("aicr %s on a newer schema: exit %d\n%s", args[0], code, out)
		}
	}
	after, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("the refused database was written to")
	}
}
