package e2e

// A model that fails for good (a refused key, an unknown model, a dead
// base_url) must not take the builtin findings down with it: the run is
// recorded as failed with the pre-pass findings, each channel gets them as
// a partial review under its own policy (or the failure notice), and a
// retry once the cause is fixed delivers the real report everywhere.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/review"
)

// partialLine is one line of a file channel, with the failure field.
type partialLine struct {
	Channel  string           `json:"channel"`
	RunID    int64            `json:"run_id"`
	Text     string           `json:"text"`
	Problems []review.Problem `json:"problems"`
	Failure  string           `json:"failure"`
}

func readChannelFile(t *testing.T, path string) []partialLine {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []partialLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l partialLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: not JSON: %v: %s", path, err, sc.Text())
		}
		out = append(out, l)
	}
	return out
}

func waitChannelFile(t *testing.T, e *env, path string, n int) []partialLine {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		lines := readChannelFile(t, path)
		if len(lines) >= n {
			return lines
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(e.daemonLog)
			t.Fatalf("%s: %d lines, want %d: %+v\ndaemon log:\n%s", path, len(lines), n, lines, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// partialEnv is an installation with two file channels, "reports" (the
// defaults: on_error suppress) and "oncall" (on_error notify, critical
// only), and the llm agent at baseURL with its key in a file.
func partialEnv(t *testing.T, baseURL, model, key string, daemonExtra string) (e *env, keyFile, oncall string) {
	t.Helper()
	e = newEnv(t, 1)
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(cfg), `channels = ["reports"]`, `channels = ["reports", "oncall"]`, 1)
	text = strings.Replace(text, "[daemon]\n", "[daemon]\n"+daemonExtra, 1)
	keyFile = filepath.Join(e.dir, "model-key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	oncall = filepath.Join(e.dir, "oncall.jsonl")
	text += fmt.Sprintf(`
[[channel]]
name = "oncall"
kind = "file"
path = "oncall.jsonl"
on_error = "notify"
min_severity = "critical"

[agent]
kind = "llm"
timeout = "2m"

[agent.llm]
api = "openai-chat"
base_url = %q
model = %q
api_key_file = %q
max_turns = 6
`, baseURL, model, keyFile)
	if err := os.WriteFile(e.config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return e, keyFile, oncall
}

// checkFailureText holds for every failed run's message, partial or not.
func checkFailureText(t *testing.T, l partialLine, runID int64) {
	t.Helper()
	for _, want := range []string{fmt.Sprintf("aicr audit show %d", runID), fmt.Sprintf("aicr run retry %d", runID)} {
		if !strings.Contains(l.Text, want) {
			t.Errorf("%s: the message must name %q:\n%s", l.Channel, want, l.Text)
		}
	}
	for _, never := range []string{"No problems found", "Reviewed by"} {
		if strings.Contains(l.Text, never) {
			t.Errorf("%s: a failed run's message says %q:\n%s", l.Channel, never, l.Text)
		}
	}
	if l.Failure == "" {
		t.Errorf("%s: no failure field: %+v", l.Channel, l)
	}
	if strings.Contains(l.Text, "AKIAQWERTYUIOPASDFGH") || strings.Contains(l.Text, "s3cr3t-Prod-Value") {
		t.Errorf("%s: the committed credential is in the message:\n%s", l.Channel, l.Text)
	}
}

// deadURL is a loopback base_url nothing listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/v1"
}

func TestModelFailureDeliversTheBuiltinFindingsAsAPartialReview(t *testing.T) {
	cases := []struct {
		name string
		// setup returns the base_url, model and key of the failing config.
		setup func(t *testing.T) (string, string, string)
		// extra is [daemon] lines (a dead server is transient: retry_for
		// shorter than the first backoff fails it at once).
		extra string
		// reason is in the failure the message names.
		reason string
		// fixedKey, when set, is written to the key file before a retry
		// that must deliver the full report to both channels.
		fixedKey string
	}{
		{name: "refused key (401)", setup: func(t *testing.T) (string, string, string) {
			sim := modelsim.Start(t, reviewScript("src/config.go", 7)...)
			sim.RequireKey("sk-the-right-key-9d2c")
			return sim.URL, "scripted-coder", "sk-a-wrong-key-1b7e"
		}, reason: "check the key in the file", fixedKey: "sk-the-right-key-9d2c"},
		{name: "unknown model (404)", setup: func(t *testing.T) (string, string, string) {
			sim := modelsim.Start(t, modelsim.Step{Status: 404, ErrorType: "model_not_found"})
			return sim.URL, "no-such-model", "sk-any-key-4e1f"
		}, reason: "404"},
		{name: "dead base_url", setup: func(t *testing.T) (string, string, string) {
			return deadURL(t), "scripted-coder", "sk-any-key-4e1f"
		}, extra: "retry_for = \"1s\"\n", reason: "127.0.0.1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url, model, key := tc.setup(t)
			e, keyFile, oncall := partialEnv(t, url, model, key, tc.extra)
			e.startDaemon()
			e.commit("wire the production account", map[string]string{"src/config.go": plantedFile})
			runs := e.waitFinished(e.store(), 1, 120*time.Second)
			run := runs[0]
			if run.Status != audit.RunFailed || !strings.Contains(run.Error, tc.reason) {
				t.Fatalf("run: %+v", run)
			}
			// The AWS key id (critical) and the password (high).
			if got := problemsAt(waitProblems(t, e, run.ID)); got["src/config.go:4"] != "hard-coded-credential" || got["src/config.go:5"] != "hard-coded-credential" {
				t.Errorf("recorded problems of the failed run: %v", got)
			}

			reports := waitChannelFile(t, e, e.reports, 1)
			if got := problemsAt(reports[0].Problems); len(got) != 2 || got["src/config.go:4"] == "" || got["src/config.go:5"] == "" {
				t.Errorf("reports: the partial review must carry both builtin findings: %v", got)
			}
			if !strings.Contains(reports[0].Text, "Partial review") || !strings.Contains(reports[0].Text, "only the builtin rules ran") {
				t.Errorf("reports: not marked as a partial review:\n%s", reports[0].Text)
			}
			checkFailureText(t, reports[0], run.ID)
			// oncall publishes critical findings only: the AWS key.
			on := waitChannelFile(t, e, oncall, 1)
			if got := problemsAt(on[0].Problems); len(got) != 1 || got["src/config.go:4"] == "" {
				t.Errorf("oncall: the partial review under min_severity = critical: %v", got)
			}
			checkFailureText(t, on[0], run.ID)
			if tc.fixedKey == "" {
				e.stopDaemon()
				if n := len(readChannelFile(t, e.reports)) + len(readChannelFile(t, oncall)); n != 2 {
					t.Errorf("%d messages, want one per channel", n)
				}
				return
			}
			// The key fixed, a retry delivers the full report after the
			// partial one on both channels.
			if err := os.WriteFile(keyFile, []byte(tc.fixedKey+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			e.aicr("run", "retry", fmt.Sprint(run.ID), "--config", e.config)
			for _, l := range []partialLine{waitChannelFile(t, e, e.reports, 2)[1], waitChannelFile(t, e, oncall, 2)[1]} {
				if l.RunID != run.ID || l.Failure != "" || strings.Contains(l.Text, "Partial review") || !strings.Contains(l.Text, "Reviewed by llm (scripted-coder)") {
					t.Errorf("%s: after the retry, want the full report of run %d:\n%+v", l.Channel, run.ID, l)
				}
				if got := problemsAt(l.Problems); got["src/config.go:4"] == "" {
					t.Errorf("%s: the full report lost the builtin finding: %v", l.Channel, got)
				}
			}
			e.stopDaemon()
		})
	}
}

func waitProblems(t *testing.T, e *env, runID int64) []review.Problem {
	t.Helper()
	var detail audit.RunDetail
	if err := json.Unmarshal([]byte(e.aicr("audit", "show", fmt.Sprint(runID), "--config", e.config, "--format", "json")), &detail); err != nil {
		t.Fatal(err)
	}
	return detail.Problems
}

// A failed run whose builtin rules found nothing sends the failure notice
// to on_error = "notify" channels; a retry after the key is fixed delivers
// the full report to every channel, the one that got the notice too.
func TestRetryAfterModelFailureDeliversTheFullReportEverywhere(t *testing.T) {
	const goodKey = "sk-the-right-key-9d2c"
	sim := modelsim.Start(t, reviewScript("src/config.go", 7)...)
	sim.RequireKey(goodKey)
	e, keyFile, oncall := partialEnv(t, sim.URL, "scripted-coder", "sk-a-wrong-key-1b7e", "")
	e.startDaemon()

	// r1: nothing for the builtin rules: oncall gets the notice, reports nothing.
	e.commit("name the service", map[string]string{"src/config.go": cleanFile + "\n// Name is the service name.\nfunc Other() {}\n"})
	runs := e.waitFinished(e.store(), 1, 120*time.Second)
	first := runs[0]
	if first.Status != audit.RunFailed {
		t.Fatalf("run: %+v", first)
	}
	notice := waitChannelFile(t, e, oncall, 1)
	if len(notice[0].Problems) != 0 || !strings.Contains(notice[0].Text, "Review failed.") ||
		!strings.Contains(notice[0].Text, "The review could not be completed:") {
		t.Errorf("the failure notice:\n%s", notice[0].Text)
	}
	checkFailureText(t, notice[0], first.ID)
	if lines := readChannelFile(t, e.reports); len(lines) != 0 {
		t.Errorf("reports (on_error suppress) got the notice: %+v", lines)
	}

	// Fix the key and retry: the report reaches both channels.
	if err := os.WriteFile(keyFile, []byte(goodKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.aicr("run", "retry", fmt.Sprint(first.ID), "--config", e.config)
	full := waitChannelFile(t, e, e.reports, 1)
	on := waitChannelFile(t, e, oncall, 2)
	for _, l := range []partialLine{full[0], on[1]} {
		if l.RunID != first.ID || l.Failure != "" || strings.Contains(l.Text, "could not be completed") || !strings.Contains(l.Text, "Reviewed by llm (scripted-coder)") {
			t.Errorf("%s: after the retry, want the full report of run %d:\n%+v", l.Channel, first.ID, l)
		}
	}
	if got := problemsAt(full[0].Problems); got["src/config.go:7"] != modelCategory {
		t.Errorf("reports: the model's finding is missing from the full report: %v", got)
	}
	s := e.store()
	if r := e.waitFinished(s, 1, time.Second)[0]; r.Status != audit.RunSucceeded {
		t.Errorf("the retried run: %+v", r)
	}
	e.stopDaemon()
	if n := len(readChannelFile(t, oncall)); n != 2 {
		t.Errorf("oncall: %d messages, want the notice and the report", n)
	}
}

// In the sandbox the ladder stays on the host, so the builtin findings of
// a review whose sandboxed model pass is refused survive the same way.
func TestModelFailureInPodmanKeepsTheBuiltinFindings(t *testing.T) {
	sim := modelsim.Start(t)
	sim.RequireKey("sk-the-right-key-9d2c")
	e, _, oncall := partialEnv(t, sim.URL, "scripted-coder", "sk-a-wrong-key-1b7e", "")
	useSandbox(t, e, "llm-only", "podman")
	e.startDaemon()
	e.commit("wire the production account", map[string]string{"src/config.go": plantedFile})
	run := e.waitFinished(e.store(), 1, 180*time.Second)[0]
	if run.Status != audit.RunFailed || !strings.Contains(run.Error, "refused the credentials") {
		log, _ := os.ReadFile(e.daemonLog)
		t.Fatalf("run: %+v\n%s", run, log)
	}
	if len(sim.Requests()) == 0 {
		t.Fatalf("the sandboxed pass never reached the model")
	}
	reports := waitChannelFile(t, e, e.reports, 1)
	if got := problemsAt(reports[0].Problems); got["src/config.go:4"] != "hard-coded-credential" || !strings.Contains(reports[0].Text, "Partial review") {
		t.Errorf("reports: %v\n%s", got, reports[0].Text)
	}
	checkFailureText(t, reports[0], run.ID)
	checkFailureText(t, waitChannelFile(t, e, oncall, 1)[0], run.ID)
	if left := runContainers(t, e); left != "" {
		t.Errorf("containers left behind: %s", left)
	}
}
