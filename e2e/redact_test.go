package e2e

// Credentials an agent quotes, and one a committer pasted into the commit
// message, as they travel through the shipped daemon: the llm agent on the
// scripted model reports a problem and publishes a summary that quote an
// AWS key and a GitHub token; none of them may reach the state file, the
// audit database, change.json, the daemon's log or any channel (issue 22
// C10).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/internal/modelsim"
)

const (
	agentQuotedAWS    = "AKIAZ3MHQ4XW7PLR2N5K"
	agentQuotedGitHub = "ghp_8f3kQz1LmN0pRsTuVwXyZa2B4c6D8e0F1g3H"
	committerAWS      = "AKIAR7XK2M4P6Q3W5N2J"
)

func TestAgentQuotedCredentialsAreRedactedEverywhere(t *testing.T) {
	e := newEnv(t, 1)
	var mu sync.Mutex
	var bodies []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, r.URL.Path+" "+string(b))
		mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	defer hook.Close()
	t.Setenv("AICR_E2E_HOOK_URL", hook.URL+"/hook")
	t.Setenv("AICR_E2E_SLACK_HOOK", hook.URL+"/slack")
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = bytes.Replace(cfg, []byte(`channels = ["reports"]`), []byte(`channels = ["reports", "hook", "slackhook"]`), 1)
	cfg = append(cfg, []byte(`
[[channel]]
name = "hook"
kind = "webhook"
url_env = "AICR_E2E_HOOK_URL"

[[channel]]
name = "slackhook"
kind = "slack"
webhook_url_env = "AICR_E2E_SLACK_HOOK"
`)...)
	if err := os.WriteFile(e.config, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	sim := modelsim.Start(t,
		modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "aicr_report_problem", Arguments: fmt.Sprintf(
			`{"file":"src/name.go","line":3,"severity":"high","category":"hard-coded-credential","message":"The deploy key %s is still valid.","suggestion":"Revoke %s and read the token from the environment."}`,
			agentQuotedAWS, agentQuotedGitHub)}}},
		modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "aicr_publish_summary", Arguments: fmt.Sprintf(
			`{"title":"Leaked %s","markdown":"Rotate `+"`%s`"+` and %s today."}`, agentQuotedGitHub, agentQuotedGitHub, agentQuotedAWS)}}},
	)
	sim.RequireKey(e2eModelKey)
	useLLM(t, e, modelsim.APIOpenAIChat, sim)
	e.startDaemon()
	e.commit("rotate later: aws_access_key_id = "+committerAWS, map[string]string{
		"src/name.go": "package config\n\nfunc Name() string { return \"svc\" }\n"})
	s := e.store()
	runs := e.waitFinished(s, 1, 120*time.Second)
	lines := e.waitReports(60*time.Second, atLeast(1))
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := len(bodies)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.stopDaemon()
	if len(lines) != 1 || len(lines[0].Problems) == 0 {
		log, _ := os.ReadFile(e.daemonLog)
		t.Fatalf("run %+v, report lines %+v\n%s", runs, lines, log)
	}
	if !strings.Contains(lines[0].Text, "<redacted>") {
		t.Errorf("the report must still say a credential was quoted:\n%s", lines[0].Text)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 {
		t.Errorf("%d webhook bodies, want the webhook's and the Slack webhook's", len(bodies))
	}
	keys := []string{agentQuotedAWS, agentQuotedGitHub, committerAWS}
	for _, b := range bodies {
		for _, k := range keys {
			if strings.Contains(b, k) {
				t.Errorf("a channel received %s…: %s", k[:8], b)
			}
		}
	}
	// Everything aicr wrote; the repository and working copy hold the
	// commit message as committed, which is not aicr's to change.
	checked := 0
	filepath.WalkDir(e.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil //nolint:nilerr // an entry gone mid-walk holds no key; checked guards against walking nothing
		}
		if d.IsDir() {
			if p == e.repos || p == e.wc {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil //nolint:nilerr // unreadable to the test is unreadable to anyone it could leak to; checked counts what was read
		}
		checked++
		for _, k := range keys {
			if bytes.Contains(b, []byte(k)) {
				t.Errorf("%s holds %s…", p, k[:8])
			}
		}
		return nil
	})
	if checked < 6 {
		t.Errorf("only %d files checked", checked)
	}
	detail, err := s.GetRun(t.Context(), runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(detail)
	for _, k := range keys {
		if strings.Contains(string(b), k) {
			t.Errorf("audit run detail holds %s…", k[:8])
		}
	}
}
