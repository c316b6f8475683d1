package e2e

// The official MCP TypeScript SDK (review/testdata/tsclient, installed by
// scripts/install-tsclient.sh) against the real aicr binary, over stdio and
// over Streamable HTTP: an independent check that the tools are what the
// contract says to a client that shares no code with aicr.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

const tsClientSDKVersion = "1.32.2"

// tsClientDir is the node project, relative to this package.
var tsClientDir = filepath.Join("..", "review", "testdata", "tsclient")

// requireTSClient fails on CI (CI set; make test installs the client) and
// skips elsewhere when node or the SDK is missing.
func requireTSClient(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed"
	default:
		if _, err := os.Stat(filepath.Join(tsClientDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
			missing = "the MCP TypeScript SDK is not installed in " + tsClientDir
		}
	}
	if missing == "" {
		return node
	}
	msg := missing + "; run scripts/install-tsclient.sh"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

type tsReport struct {
	SDK    string `json:"sdk"`
	Server struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"server"`
	Tools []struct {
		Name                 string            `json:"name"`
		Description          string            `json:"description"`
		Required             []string          `json:"required"`
		Properties           map[string]string `json:"properties"`
		AdditionalProperties any               `json:"additionalProperties"`
	} `json:"tools"`
	Calls []struct {
		Name              string         `json:"name"`
		IsError           bool           `json:"isError"`
		Text              string         `json:"text"`
		StructuredContent map[string]any `json:"structuredContent"`
	} `json:"calls"`
	TimingsMs map[string]float64 `json:"timingsMs"`
}

// mcpTSRun is a run directory with one changed file (added lines 2-4 of
// app/main.go, hunk 1-6).
func mcpTSRun(t *testing.T) (changePath, statePath string) {
	t.Helper()
	dir := t.TempDir()
	change := vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "7", Files: []vcs.FileChange{{
		Path: "app/main.go", Action: vcs.ActionModify, NodeKind: vcs.NodeFile,
		Added: []vcs.LineRange{{Start: 2, End: 4}}, Hunks: []vcs.LineRange{{Start: 1, End: 6}},
	}}}
	data, err := json.Marshal(change)
	if err != nil {
		t.Fatal(err)
	}
	changePath = filepath.Join(dir, "change.json")
	mustWrite(t, changePath, string(data))
	mustWrite(t, filepath.Join(dir, "src", "app", "main.go"), "package main\n\nvar password = \"hunter2\"\n\nfunc main() {}\n")
	if err := os.MkdirAll(filepath.Join(dir, "agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	return changePath, filepath.Join(dir, "agent", review.StateFileName)
}

func mustWrite(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tsPlan calls each of the five tools, plus one call that must be refused.
func tsPlan(t *testing.T, names func(string) string) string {
	t.Helper()
	calls := []map[string]any{
		{"name": names(review.ToolReportProblem), "arguments": map[string]any{"file": "app/main.go", "line": 3, "severity": "high",
			"category": "Hard Coded Credential", "message": "password literal", "suggestion": "read it from the environment"}},
		{"name": names(review.ToolReportProblem), "arguments": map[string]any{"file": "app/main.go", "line": 40, "severity": "low",
			"category": "x", "message": "off the diff"}},
		{"name": names(review.ToolPublishSummary), "arguments": map[string]any{"title": "Review", "markdown": "One credential."}},
		{"name": names(review.ToolSkip), "arguments": map[string]any{"reason": "lgtm"}},
		{"name": names(review.ToolFetchMoreContext), "arguments": map[string]any{"path": "lib/db.go",
			"range": map[string]any{"start_line": 1, "end_line": 9}, "reason": "callers"}},
		{"name": names(review.ToolTryBlame), "arguments": map[string]any{"path": "app/main.go", "reason": "who added it"}},
	}
	data, err := json.Marshal(map[string]any{"calls": calls})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plan.json")
	mustWrite(t, path, string(data))
	return path
}

func runTSClient(t *testing.T, node string, args ...string) tsReport {
	t.Helper()
	cmd := exec.Command(node, append([]string{filepath.Join(tsClientDir, "client.mjs")}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client.mjs %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr.String())
	}
	var rep tsReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("client report %q: %v\nstderr: %s", stdout.String(), err, stderr.String())
	}
	return rep
}

func checkTSReport(t *testing.T, rep tsReport, names func(string) string) {
	t.Helper()
	if rep.SDK != tsClientSDKVersion {
		t.Errorf("SDK %s, want %s", rep.SDK, tsClientSDKVersion)
	}
	if rep.Server.Name != "aicr" {
		t.Errorf("server info %+v", rep.Server)
	}
	wantRequired := map[string]string{
		review.ToolReportProblem:    "category,file,line,message,severity",
		review.ToolPublishSummary:   "markdown",
		review.ToolSkip:             "reason",
		review.ToolFetchMoreContext: "path,reason",
		review.ToolTryBlame:         "path,reason",
	}
	var got []string
	for _, tool := range rep.Tools {
		got = append(got, tool.Name)
	}
	sort.Strings(got)
	var want []string
	for canonical := range wantRequired {
		want = append(want, names(canonical))
	}
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	for _, tool := range rep.Tools {
		canonical, _ := review.CanonicalToolName(tool.Name)
		if r := strings.Join(tool.Required, ","); r != wantRequired[canonical] {
			t.Errorf("%s required %s, want %s", tool.Name, r, wantRequired[canonical])
		}
		if tool.Description == "" || tool.AdditionalProperties != false {
			t.Errorf("%s: description %q, additionalProperties %v", tool.Name, tool.Description, tool.AdditionalProperties)
		}
	}
	if p := rep.Tools[0].Properties; len(p) == 0 {
		t.Errorf("no properties seen by the client")
	}

	wantErr := []bool{false, true, false, false, false, false}
	if len(rep.Calls) != len(wantErr) {
		t.Fatalf("%d call results", len(rep.Calls))
	}
	for i, c := range rep.Calls {
		if c.IsError != wantErr[i] || c.Text == "" {
			t.Errorf("call %d %s: isError %v text %q", i, c.Name, c.IsError, c.Text)
		}
	}
	var env review.ToolError
	dec := json.NewDecoder(strings.NewReader(rep.Calls[1].Text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil || env.Code != review.CodeLineNotInDiff || env.Remedy == "" {
		t.Errorf("error envelope %q: %+v %v", rep.Calls[1].Text, env, err)
	}
	// The contract asks for the envelope as structured content as well.
	if sc := rep.Calls[1].StructuredContent; len(sc) != 3 || sc["code"] != env.Code || sc["message"] != env.Message || sc["remedy"] != env.Remedy {
		t.Errorf("structuredContent %v, want the envelope %+v", sc, env)
	}
	for i, c := range rep.Calls {
		if !c.IsError && c.StructuredContent != nil {
			t.Errorf("call %d: success with structuredContent %v", i, c.StructuredContent)
		}
	}
}

func checkTSState(t *testing.T, path string) *review.State {
	t.Helper()
	st, err := review.LoadState(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Problems) != 1 || st.Problems[0].Line != 3 || st.Problems[0].Category != "hard-coded-credential" ||
		len(st.Summaries) != 1 || st.Skip == nil || st.Skip.Reason != "lgtm" ||
		len(st.ContextRequests) != 1 || st.ContextRequests[0].Range == nil || st.ContextRequests[0].Range.End != 9 ||
		len(st.AttributionRequests) != 1 || len(st.Rejected) != 1 || st.Rejected[0].Code != review.CodeLineNotInDiff ||
		st.Rejected[0].Tool != review.ToolReportProblem {
		t.Fatalf("state %+v", st)
	}
	return st
}

func TestMCPTypeScriptClient(t *testing.T) {
	node := requireTSClient(t)
	dotted := func(s string) string { return s }

	t.Run("stdio", func(t *testing.T) {
		change, state := mcpTSRun(t)
		rep := runTSClient(t, node, "stdio", tsPlan(t, dotted), aicrBin, "mcp", "serve", "--state", state, "--change", change)
		checkTSReport(t, rep, dotted)
		checkTSState(t, state)
		t.Logf("stdio timings (ms): %v", rep.TimingsMs)
	})

	t.Run("stdio underscore names", func(t *testing.T) {
		change, state := mcpTSRun(t)
		rep := runTSClient(t, node, "stdio", tsPlan(t, review.UnderscoreToolName), aicrBin, "mcp", "serve",
			"--state", state, "--change", change, "--tool-names=underscore")
		checkTSReport(t, rep, review.UnderscoreToolName)
		checkTSState(t, state)
	})

	t.Run("http", func(t *testing.T) {
		change, state := mcpTSRun(t)
		// --change is left out: the default is the run directory's change.json.
		_ = change
		srv := exec.Command(aicrBin, "mcp", "serve", "--state", state, "--http", "127.0.0.1:0")
		stderr, err := srv.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		exited := false
		defer func() {
			if !exited {
				srv.Process.Kill()
				srv.Wait()
			}
		}()
		sc := bufio.NewScanner(stderr)
		url := ""
		for url == "" && sc.Scan() {
			url = strings.TrimPrefix(sc.Text(), "aicr mcp: serving on ")
			if url == sc.Text() {
				url = ""
			}
		}
		if url == "" {
			t.Fatalf("server printed no URL: %v", sc.Err())
		}
		go func() {
			for sc.Scan() {
			}
		}()
		rep := runTSClient(t, node, "http", tsPlan(t, dotted), url)
		checkTSReport(t, rep, dotted)
		checkTSState(t, state)
		t.Logf("http timings (ms): %v", rep.TimingsMs)

		// SIGTERM ends the server cleanly.
		if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		err = srv.Wait()
		exited = true
		if err != nil {
			t.Errorf("server after SIGTERM: %v", err)
		}
	})
}
