package sandboxed_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/agent/sandboxed"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/sandbox"
	"github.com/aicr-dev/aicr/vcs"
)

// recordingRunner stands in for the container: it keeps the Spec, checks
// the pass file the host wrote, and ends the way the test says.
type recordingRunner struct {
	spec   sandbox.Spec
	pf     []byte
	res    sandbox.Result
	err    error
	stderr string
	stats  string
}

func (r *recordingRunner) Run(_ context.Context, s sandbox.Spec) (sandbox.Result, error) {
	r.spec = s
	r.pf, _ = os.ReadFile(filepath.Join(s.AgentDir, rundir.PassFileName))
	if r.stderr != "" {
		os.WriteFile(s.StderrPath, []byte(r.stderr), 0o600)
	}
	if r.stats != "" {
		os.WriteFile(filepath.Join(s.AgentDir, rundir.PassStatsFileName), []byte(r.stats), 0o644)
	}
	return r.res, r.err
}

const testKey = "sk-sandboxed-unit-key-41c2"

func newRun(t *testing.T, id string) rundir.Layout {
	t.Helper()
	run := rundir.New(filepath.Join(t.TempDir(), "runs", id))
	if err := run.Create(); err != nil {
		t.Fatal(err)
	}
	if err := run.WriteChange(&vcs.Change{Revision: "7", Files: []vcs.FileChange{{Path: "a/b.go", Action: vcs.ActionAdd}}}); err != nil {
		t.Fatal(err)
	}
	p, _ := run.SrcPath("a/b.go")
	os.MkdirAll(filepath.Dir(p), 0o700)
	if err := os.WriteFile(p, []byte("package a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return run
}

func llmConfig(t *testing.T) agent.Config {
	t.Setenv("SANDBOXED_UNIT_KEY", testKey)
	return agent.Config{Kind: agent.KindLLM, LLM: llm.Config{API: "openai-chat", BaseURL: "http://127.0.0.1:9/v1",
		Model: "m", APIKeyEnv: "SANDBOXED_UNIT_KEY"}}
}

func TestReviewBuildsTheSpecAndKeepsTheKeyOutOfFiles(t *testing.T) {
	run := newRun(t, "42")
	r := &recordingRunner{stats: `{"agent":"llm","model":"m","turns":2,"input_tokens":10,"output_tokens":3,"text":"done"}`}
	a, err := sandboxed.New(sandboxed.Options{Config: llmConfig(t), Runner: r, Network: "none", Binary: "/usr/local/bin/aicr", Env: []string{"TZ=UTC"}})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := a.Review(context.Background(), run, pass.Pass{Number: 2, Kind: pass.Repair, Missing: "a summary"})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Turns != 2 || stats.InputTokens != 10 || stats.Text != "done" || stats.Model != "m" {
		t.Errorf("stats from pass-stats.json: %+v", stats)
	}
	s := r.spec
	if s.RunID != 42 || s.Pass != 2 || s.Binary != "/usr/local/bin/aicr" || s.AgentDir != run.AgentDir() || s.SrcDir != run.SrcDir() {
		t.Errorf("spec: %+v", s)
	}
	if strings.Join(s.Args, " ") != "/opt/aicr/aicr agent pass --root /workspace" {
		t.Errorf("args: %q", s.Args)
	}
	if len(s.SecretEnv) != 1 || s.SecretEnv[0] != sandboxed.APIKeyEnv+"="+testKey {
		t.Errorf("secret env: %q", s.SecretEnv)
	}
	for _, kv := range append(append([]string(nil), s.Env...), s.Args...) {
		if strings.Contains(kv, testKey) {
			t.Errorf("the key is in the plain env or args: %s", kv)
		}
	}
	if strings.Contains(string(r.pf), testKey) || !strings.Contains(string(r.pf), `"Missing": "a summary"`) {
		t.Errorf("pass.json:\n%s", r.pf)
	}
	mounted := map[string]string{}
	for _, m := range s.Mounts {
		if !m.ReadOnly {
			t.Errorf("writable extra mount: %+v", m)
		}
		mounted[m.Container] = m.Host
	}
	if mounted["/workspace/change.json"] != run.ChangePath() {
		t.Errorf("change.json is not mounted read-only at /workspace: %+v", s.Mounts)
	}
	p, _ := run.SrcPath("a/b.go")
	if info, err := os.Stat(p); err != nil || info.Mode().Perm()&0o004 == 0 {
		t.Errorf("src file not readable by the container user: %v %v", info.Mode(), err)
	}
}

func TestReviewMapsHowThePassEnded(t *testing.T) {
	cases := []struct {
		name  string
		r     *recordingRunner
		check func(error) bool
	}{
		{"timeout", &recordingRunner{res: sandbox.Result{TimedOut: true, ExitCode: 137}},
			func(err error) bool { return errors.Is(err, agent.ErrTimeout) }},
		{"oom", &recordingRunner{res: sandbox.Result{OOMKilled: true, ExitCode: 137}},
			func(err error) bool { return strings.Contains(err.Error(), "memory") }},
		{"exit", &recordingRunner{res: sandbox.Result{ExitCode: 1}, stderr: "llm agent: model refused\n"},
			func(err error) bool {
				return strings.Contains(err.Error(), "exited 1") && strings.Contains(err.Error(), "model refused")
			}},
		{"unavailable", &recordingRunner{err: fmt.Errorf("%w: podman not found; install Podman", sandbox.ErrUnavailable)},
			func(err error) bool {
				return errors.Is(err, sandbox.ErrUnavailable) && strings.Contains(err.Error(), "install Podman")
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := newRun(t, "3")
			a, err := sandboxed.New(sandboxed.Options{Config: agent.Config{Kind: agent.KindBuiltin}, Runner: c.r, Binary: "/bin/aicr"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.Review(context.Background(), run, pass.Pass{Number: 1, Kind: pass.Review})
			if err == nil || !c.check(err) {
				t.Errorf("error: %v", err)
			}
		})
	}
}

// headers_file is read on the host at each pass and reaches the container
// as one secret env var: never in pass.json, the bundle or argv.
func TestHeadersFileTravelsAsOneSecretEnv(t *testing.T) {
	const token = "gw-token-unit-9d1e77aa"
	cfg := llmConfig(t)
	cfg.LLM.HeadersFile = filepath.Join(t.TempDir(), "headers")
	if err := os.WriteFile(cfg.LLM.HeadersFile, []byte("X-Gateway-Token: "+token+"\nX-Tenant: acme\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &recordingRunner{}
	a, err := sandboxed.New(sandboxed.Options{Config: cfg, Runner: r, Binary: "/bin/aicr"})
	if err != nil {
		t.Fatal(err)
	}
	run := newRun(t, "5")
	if _, err := a.Review(context.Background(), run, pass.Pass{Number: 1, Kind: pass.Review}); err != nil {
		t.Fatal(err)
	}
	var headers string
	for _, kv := range r.spec.SecretEnv {
		if v, ok := strings.CutPrefix(kv, sandboxed.HeadersEnv+"="); ok {
			headers = v
		}
	}
	if headers != `{"X-Gateway-Token":"`+token+`","X-Tenant":"acme"}` {
		t.Errorf("%s = %q", sandboxed.HeadersEnv, headers)
	}
	if strings.Contains(string(r.pf), token) || strings.Contains(string(r.pf), cfg.LLM.HeadersFile) {
		t.Errorf("pass.json names the headers or their file:\n%s", r.pf)
	}
	for _, kv := range append(append([]string(nil), r.spec.Env...), r.spec.Args...) {
		if strings.Contains(kv, token) {
			t.Errorf("a header value is in the plain env or args: %s", kv)
		}
	}
	filepath.WalkDir(run.Dir(), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), token) {
				t.Errorf("%s holds a header value", p)
			}
		}
		return nil
	})
	// A header file that breaks fails the pass, naming the key.
	os.WriteFile(cfg.LLM.HeadersFile, []byte("no colon here\n"), 0o600)
	if _, err := a.Review(context.Background(), run, pass.Pass{Number: 2, Kind: pass.Review}); err == nil || !strings.Contains(err.Error(), "headers_file") {
		t.Errorf("bad headers file: %v", err)
	}
}
