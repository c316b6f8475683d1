package e2e

// Review sessions end to end: the official MCP TypeScript SDK drives
// `aicr mcp review` (a real process, killed and restarted mid-round) on a
// real svn working copy with a planted bug, reviewed by the llm agent
// against the scripted model server; and the CLI verbs on a worker that
// dies mid-round.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/internal/svntest"
	"github.com/aicr-dev/aicr/mcperr"
	"github.com/aicr-dev/aicr/session"
)

const (
	sumCommitted = "package mathx\n\n// Sum adds up xs.\nfunc Sum(xs []int) int {\n\ttotal := 0\n\tfor i := 0; i < len(xs); i++ {\n\t\ttotal += xs[i]\n\t}\n\treturn total\n}\n"
	// sumPlanted skips the first element: line 6.
	sumPlanted  = "package mathx\n\n// Sum adds up xs.\nfunc Sum(xs []int) int {\n\ttotal := 0\n\tfor i := 1; i < len(xs); i++ {\n\t\ttotal += xs[i]\n\t}\n\treturn total\n}\n"
	sumFixed    = "package mathx\n\n// Sum adds up xs.\nfunc Sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn total\n}\n"
	sumBugLine  = 6
	sumCategory = "off-by-one"
	sumMessage  = "The loop starts at 1, so Sum never adds xs[0]."
	sumReply    = "Fixed: the loop ranges over every element."
)

// gate holds the model's first answer of round 1 until the test opens it.
type gate struct {
	once sync.Once
	ch   chan struct{}
}

func newGate(t *testing.T) (*gate, string) {
	g := &gate{ch: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.open()
		fmt.Fprintln(w, "open")
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(g.open)
	return g, srv.URL + "/release"
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// sessionReviewer is the model's side of the session: round 1 reports
// the off-by-one (after the gate opens) and publishes a summary; round 2
// must see the reply, the round 1 finding and the fixed file, and finds
// nothing.
func sessionReviewer(t *testing.T, g *gate) func(modelsim.Request) modelsim.Step {
	return func(r modelsim.Request) modelsim.Step {
		first := ""
		if len(r.Messages) > 0 {
			first = r.Messages[0].Text
		}
		round2 := strings.Contains(first, "Developer's reply to round 1")
		switch {
		case !round2 && r.ToolResults() == 0:
			select {
			case <-g.ch:
			case <-time.After(5 * time.Minute):
				t.Errorf("the gate was never opened")
			}
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: r.Offered("report_problem"), Arguments: fmt.Sprintf(
				`{"file":"mathx/sum.go","line":%d,"severity":"high","category":%q,"message":%q}`, sumBugLine, sumCategory, sumMessage)}},
				Usage: modelsim.Usage{Input: 900, Output: 80}}
		case !round2:
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: r.Offered("publish_summary"), Arguments: `{"markdown":"Sum drops the first element."}`}}}
		default:
			return modelsim.Step{
				Check: func(r modelsim.Request) error {
					for _, want := range []string{sumReply, sumMessage, "mathx/sum.go:6", "for _, x := range xs", "Findings of round 1"} {
						if !strings.Contains(r.Messages[0].Text, want) {
							return fmt.Errorf("round 2's prompt lacks %q:\n%s", want, r.Messages[0].Text)
						}
					}
					return nil
				},
				ToolCalls: []modelsim.ToolCall{{Name: r.Offered("skip"), Arguments: `{"reason":"lgtm"}`}}}
		}
	}
}

type sessionReport struct {
	SDK   string `json:"sdk"`
	Tools []struct {
		Name                 string   `json:"name"`
		Required             []string `json:"required"`
		AdditionalProperties any      `json:"additionalProperties"`
	} `json:"tools"`
	Results []struct {
		Name              string         `json:"name"`
		IsError           bool           `json:"isError"`
		Text              string         `json:"text"`
		StructuredContent map[string]any `json:"structuredContent"`
		Calls             int            `json:"calls"`
	} `json:"results"`
	Servers int `json:"servers"`
}

func runSessionClient(t *testing.T, node string, steps []map[string]any, serveArgs ...string) sessionReport {
	t.Helper()
	data, err := json.Marshal(map[string]any{"steps": steps})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "steps.json")
	mustWrite(t, path, string(data))
	args := append([]string{filepath.Join(tsClientDir, "session.mjs"), path, aicrBin}, serveArgs...)
	cmd := exec.Command(node, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node session.mjs: %v\nstderr: %s", err, stderr.String())
	}
	var rep sessionReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("client report %q: %v\nstderr: %s", stdout.String(), err, stderr.String())
	}
	return rep
}

// A full session through the official client: begin, a reply refused
// while the round runs, the server SIGKILLed and restarted mid-round
// with the wait continuing on the new one, the finding at the planted
// line, the fix, a reply, a clean round 2, and the end published to the
// repo's channel.
func TestReviewSessionOverMCPWithTSClient(t *testing.T) {
	node := requireTSClient(t)
	e := newEnv(t, 1)
	e.commit("add Sum", map[string]string{"mathx/sum.go": sumCommitted})
	svntest.Run(t, e.wc, "svn", "update", "-q")
	mustWrite(t, filepath.Join(e.wc, "mathx", "sum.go"), sumPlanted)
	// Unversioned: reviewed as a new file without `svn add`.
	mustWrite(t, filepath.Join(e.wc, "mathx", "doc.go"), "// Package mathx sums.\npackage mathx\n")
	g, release := newGate(t)
	sim := modelsim.StartFunc(t, sessionReviewer(t, g))
	sim.RequireKey(e2eModelKey)
	useLLM(t, e, modelsim.APIOpenAIChat, sim)
	sid := map[string]any{"session_id": "$SID"}
	waitArgs := map[string]any{"session_id": "$SID", "max_wait_seconds": 5}
	steps := []map[string]any{
		{"call": "review_begin", "arguments": map[string]any{"target": "svn-wc:" + e.wc, "repo": "main", "input": "Sum over a slice"}},
		{"call": "review_reply", "arguments": map[string]any{"session_id": "$SID", "input": "too early"}},
		{"call": "review_wait", "arguments": map[string]any{"session_id": "$SID", "max_wait_seconds": 0}},
		{"kill": true},
		{"get": release},
		{"waitUntilDone": waitArgs, "limit": 120},
		{"write": map[string]any{"path": filepath.Join(e.wc, "mathx", "sum.go"), "content": sumFixed}},
		{"call": "review_reply", "arguments": map[string]any{"session_id": "$SID", "input": sumReply}},
		{"waitUntilDone": waitArgs, "limit": 120},
		{"call": "review_end", "arguments": map[string]any{"session_id": "$SID", "publish": true}},
		{"call": "review_wait", "arguments": map[string]any{"session_id": "rs-999"}},
		{"call": "review_begin", "arguments": map[string]any{"target": "cvs:1"}},
	}
	_ = sid
	rep := runSessionClient(t, node, steps, "mcp", "review", "--config", e.config)
	if rep.Servers != 2 {
		t.Errorf("%d servers started, want 2 (one killed)", rep.Servers)
	}
	var names []string
	for _, tool := range rep.Tools {
		names = append(names, tool.Name)
		if tool.AdditionalProperties != false {
			t.Errorf("%s: additionalProperties %v", tool.Name, tool.AdditionalProperties)
		}
	}
	if got := strings.Join(names, ","); got != "review_begin,review_end,review_reply,review_wait" {
		t.Errorf("tools %s", got)
	}
	res := rep.Results
	if len(res) != len(steps) {
		t.Fatalf("%d results for %d steps: %+v", len(res), len(steps), res)
	}
	sc := func(i int) map[string]any { return res[i].StructuredContent }
	if res[0].IsError || sc(0)["status"] != "running" || sc(0)["round"] != float64(1) || !strings.HasPrefix(fmt.Sprint(sc(0)["session_id"]), "rs-") {
		t.Fatalf("begin: %+v", res[0])
	}
	if !res[1].IsError || sc(1)["code"] != mcperr.RoundStillRunning || sc(1)["remedy"] == "" || !strings.Contains(res[1].Text, mcperr.RoundStillRunning) {
		t.Errorf("reply while running: %+v", res[1])
	}
	if sc(2)["status"] != "running" || sc(2)["next"] != "running" || sc(2)["next_reason"] != "reviewer_running" {
		t.Errorf("wait 0s: %+v", res[2])
	}
	r1 := sc(5)
	if r1["status"] != "completed" || r1["next"] != "respond" || r1["next_reason"] != "open_problems" || r1["round"] != float64(1) {
		log, _ := os.ReadFile(filepath.Join(e.dir, "data", "sessions", "1", "round-1.log"))
		t.Fatalf("round 1 after the restart: %+v\nworker log:\n%s", res[5], log)
	}
	found := false
	for _, p := range r1["problems"].([]any) {
		p := p.(map[string]any)
		if p["category"] == sumCategory {
			found = p["file"] == "mathx/sum.go" && p["line"] == float64(sumBugLine)
		}
	}
	if !found {
		t.Errorf("the planted bug is not reported at mathx/sum.go:%d: %v", sumBugLine, r1["problems"])
	}
	if sc(7)["round"] != float64(2) || sc(7)["status"] != "running" {
		t.Errorf("reply: %+v", res[7])
	}
	r2 := sc(8)
	if r2["status"] != "completed" || r2["next"] != "done" || r2["next_reason"] != "no_problems" || r2["round"] != float64(2) {
		log, _ := os.ReadFile(filepath.Join(e.dir, "data", "sessions", "1", "round-2.log"))
		t.Fatalf("round 2: %+v\nworker log:\n%s", res[8], log)
	}
	end := sc(9)
	if res[9].IsError || end["status"] != "ended" || end["finalized"] != true || end["verdict"] != "approved" || end["published"] != true {
		t.Errorf("end: %+v", res[9])
	}
	if !res[10].IsError || sc(10)["code"] != mcperr.SessionInvalid {
		t.Errorf("wait on an unknown session: %+v", res[10])
	}
	if !res[11].IsError || sc(11)["code"] != mcperr.InvalidInput {
		t.Errorf("begin with a bad target: %+v", res[11])
	}
	if err := sim.Err(); err != nil {
		t.Error(err)
	}
	// Round 1's change held both files: the modified one and the new,
	// unversioned one.
	data, err := os.ReadFile(filepath.Join(e.dir, "data", "sessions", "1", "round-1", "change.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"path": "mathx/sum.go"`, `"path": "mathx/doc.go"`} {
		if !bytes.Contains(data, []byte(want)) && !bytes.Contains(data, []byte(strings.ReplaceAll(want, " ", ""))) {
			t.Errorf("round 1 change.json lacks %s:\n%s", want, data)
		}
	}
	lines := e.waitReports(60*time.Second, atLeast(1))
	if len(lines) != 1 || lines[0].Repo != "main" {
		t.Fatalf("published reports: %+v", lines)
	}
}

// A round whose worker process dies is reported failed with next
// stopped / reviewer_process_exit, not waited on for ever, and a reply
// starts a fresh round that completes.
func TestReviewSessionWorkerDeathIsReported(t *testing.T) {
	e := newEnv(t, 1)
	mustWrite(t, filepath.Join(e.wc, "mathx", "sum.go"), sumPlanted)
	g, _ := newGate(t)
	sim := modelsim.StartFunc(t, func(r modelsim.Request) modelsim.Step {
		// Round 1 hangs until its worker is killed; later rounds skip.
		if !strings.Contains(r.Messages[0].Text, "Developer's reply to round 1") {
			<-g.ch
			return modelsim.Step{Hang: true}
		}
		return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: r.Offered("skip"), Arguments: `{"reason":"lgtm"}`}}}
	})
	useLLM(t, e, modelsim.APIOpenAIChat, sim)
	out := aicrStdout(t, e, "session", "begin", "svn-wc:"+e.wc, "--config", e.config, "--format", "json")
	var began session.Started
	if err := json.Unmarshal([]byte(out), &began); err != nil || began.SessionID == "" {
		t.Fatalf("begin: %v: %s", err, out)
	}
	s := e.store()
	id, _ := session.ParseID(began.SessionID)
	// Begun without repo: the working copy's URL names it.
	if sess, err := s.Session(context.Background(), id); err != nil || sess.Repo != "main" {
		t.Errorf("session repo from the working copy: %+v %v", sess, err)
	}
	var pid int
	for deadline := time.Now().Add(2 * time.Minute); pid == 0; {
		r, err := s.SessionRound(context.Background(), id, 1)
		if err != nil {
			t.Fatal(err)
		}
		pid = r.LeasePID
		if time.Now().After(deadline) {
			t.Fatalf("the worker never claimed round 1: %+v", r)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	g.open()
	// Detected at once when the dead pid is visible on this host, else
	// when its lease runs out: wait until the round is no longer running.
	var w session.Waited
	for w.Status == "" || w.Status == audit.RoundRunning {
		out = aicrStdout(t, e, "session", "wait", began.SessionID, "--max-wait-seconds", "5", "--config", e.config, "--format", "json")
		if err := json.Unmarshal([]byte(out), &w); err != nil {
			t.Fatalf("wait: %v: %s", err, out)
		}
	}
	if w.Status != audit.RoundFailed || w.Next != session.NextStopped || w.NextReason != session.ReasonProcessExit || !strings.Contains(w.Error, "stopped before finishing") {
		t.Fatalf("wait after the worker died: %+v", w)
	}
	e.aicr("session", "reply", began.SessionID, "--input", "try again", "--config", e.config)
	out = aicrStdout(t, e, "session", "wait", began.SessionID, "--max-wait-seconds", "120", "--config", e.config, "--format", "json")
	w = session.Waited{}
	if err := json.Unmarshal([]byte(out), &w); err != nil {
		t.Fatalf("wait: %v: %s", err, out)
	}
	if w.Round != 2 || w.Status != audit.RoundCompleted {
		t.Fatalf("round 2: %+v", w)
	}
}

// aicrStdout runs aicr in e's directory and returns its stdout only (the
// JSON result; status and log lines go to stderr).
func aicrStdout(t *testing.T, e *env, args ...string) string {
	t.Helper()
	cmd := exec.Command(aicrBin, args...)
	cmd.Dir = e.dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("aicr %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// The other targets through the CLI with the builtin agent, and parity:
// a verb's --format json is the tool's structured content.
func TestReviewSessionTargetsAndCLIParity(t *testing.T) {
	e := newEnv(t, 1)
	e.commit("wire the production account", map[string]string{"src/config.go": plantedFile})
	waitJSON := func(sid string) (session.Waited, string) {
		t.Helper()
		out := aicrStdout(t, e, "session", "wait", sid, "--max-wait-seconds", "120", "--config", e.config, "--format", "json")
		var w session.Waited
		if err := json.Unmarshal([]byte(out), &w); err != nil {
			t.Fatalf("wait: %v: %s", err, out)
		}
		return w, out
	}
	begin := func(target string, extra ...string) string {
		t.Helper()
		out := aicrStdout(t, e, append([]string{"session", "begin", target, "--config", e.config, "--format", "json"}, extra...)...)
		var s session.Started
		if err := json.Unmarshal([]byte(out), &s); err != nil || s.Round != 1 {
			t.Fatalf("begin %s: %v: %s", target, err, out)
		}
		return s.SessionID
	}

	rev := begin("svn-rev:1")
	w, revJSON := waitJSON(rev)
	if w.Status != audit.RoundCompleted || w.Next != session.NextRespond {
		t.Fatalf("svn-rev:1: %+v", w)
	}
	if _, ok := problemsAt(w.Problems)["src/config.go:5"]; !ok {
		t.Errorf("svn-rev:1 problems: %v", problemsAt(w.Problems))
	}

	patch := filepath.Join(e.dir, "token.patch")
	mustWrite(t, patch, "--- lib/auth.go\n+++ lib/auth.go\n@@ -1,2 +1,3 @@\n package lib\n+var password = \"s3cr3t-Prod-Value\"\n func f() {}\n")
	pid := begin("patch:" + patch)
	w, _ = waitJSON(pid)
	if w.Status != audit.RoundCompleted {
		t.Fatalf("patch: %+v", w)
	}
	if _, ok := problemsAt(w.Problems)["lib/auth.go:2"]; !ok {
		t.Errorf("patch problems: %v", problemsAt(w.Problems))
	}
	// No repo: the session ends, the publication asked for does not
	// happen, and the verb exits 1 as the tool sets isError.
	cmd := exec.Command(aicrBin, "session", "end", pid, "--publish", "--config", e.config, "--format", "json")
	out, err := cmd.Output()
	var ended session.Ended
	if jerr := json.Unmarshal(out, &ended); jerr != nil || err == nil || ended.Status != "ended" || !ended.Finalized || ended.PublishError == "" {
		t.Errorf("end --publish without a repo: %v %v %s", err, jerr, out)
	}

	node := requireTSClient(t)
	rep := runSessionClient(t, node, []map[string]any{
		{"call": "review_wait", "arguments": map[string]any{"session_id": rev}},
		{"call": "review_end", "arguments": map[string]any{"session_id": pid, "publish": true}},
	}, "mcp", "review", "--config", e.config)
	var cli map[string]any
	if err := json.Unmarshal([]byte(revJSON), &cli); err != nil {
		t.Fatal(err)
	}
	if got, want := mustJSON(t, rep.Results[0].StructuredContent), mustJSON(t, cli); got != want {
		t.Errorf("review_wait and session wait differ:\ntool %s\nverb %s", got, want)
	}
	if !rep.Results[1].IsError || rep.Results[1].StructuredContent["publish_error"] == "" || rep.Results[1].StructuredContent["status"] != "ended" {
		t.Errorf("review_end of an ended session, publish asked: %+v", rep.Results[1])
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A round that runs past timeout_seconds ends as timeout with next
// stopped / timeout; the model's hung request is abandoned with it.
func TestReviewSessionRoundTimeout(t *testing.T) {
	e := newEnv(t, 1)
	mustWrite(t, filepath.Join(e.wc, "mathx", "sum.go"), sumPlanted)
	sim := modelsim.StartFunc(t, func(modelsim.Request) modelsim.Step { return modelsim.Step{Hang: true} })
	useLLM(t, e, modelsim.APIOpenAIChat, sim)
	out := aicrStdout(t, e, "session", "begin", "svn-wc:"+e.wc, "--timeout-seconds", "2", "--config", e.config, "--format", "json")
	var began session.Started
	if err := json.Unmarshal([]byte(out), &began); err != nil {
		t.Fatalf("begin: %v: %s", err, out)
	}
	var w session.Waited
	for w.Status == "" || w.Status == audit.RoundRunning {
		out = aicrStdout(t, e, "session", "wait", began.SessionID, "--max-wait-seconds", "10", "--config", e.config, "--format", "json")
		if err := json.Unmarshal([]byte(out), &w); err != nil {
			t.Fatalf("wait: %v: %s", err, out)
		}
	}
	if w.Status != audit.RoundTimeout || w.Next != session.NextStopped || w.NextReason != session.ReasonTimeout {
		t.Fatalf("round past timeout_seconds: %+v", w)
	}
}
