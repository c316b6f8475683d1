package review_test

// Regression tests for defects found by trying aicr as admins would: file
// names with glob characters, the error envelope as structured content,
// invalid UTF-8 in arguments, the rejected cap, and symlinks out of src/.
// All go through a real MCP client talking to a server process.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// callRaw sends arguments exactly as given (json.RawMessage is not
// re-encoded by the client) and returns the whole result.
func callRaw(t *testing.T, c *client.Client, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(testContext(t), req)
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return res
}

// closeServer ends the server process the way an agent does (stdin
// closed) and waits for it, so everything it holds is on disk.
func closeServer(t *testing.T, c *client.Client) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Fatalf("close server: %v", err)
	}
}

// Findings in files whose names hold *, ? or [ were refused as wildcards
// although the name was exactly a file of the change (legal in SVN, and in
// Perforce escaped as %2A and so on).
func TestWildcardCharactersInChangedFileNames(t *testing.T) {
	f := newFixture(t)
	names := []string{"src/a*b.c", "lib/what?.go", "web/[id].tsx", "p4/x...y.txt"}
	for _, n := range names {
		f.change.Files = append(f.change.Files, vcs.FileChange{
			Path: n, Action: vcs.ActionAdd, NodeKind: vcs.NodeFile,
			Added: []vcs.LineRange{{Start: 1, End: 2}}, Hunks: []vcs.LineRange{{Start: 1, End: 2}},
		})
		writeFile(t, filepath.Join(f.srcDir, filepath.FromSlash(n)), "first line of "+n+"\nsecond\n")
	}
	f.writeChange(t)
	c := startServer(t, f, 0)

	for _, n := range names {
		callOK(t, c, review.ToolReportProblem, map[string]any{
			"file": "./" + n, "line": 1, "severity": "high", "category": "bug", "message": "m in " + n})
		callOK(t, c, review.ToolFetchMoreContext, map[string]any{"path": n, "reason": "whole file"})
	}
	// Globs that name no file of the change stay refused, and so do
	// escapes whatever characters they hold.
	for _, bad := range []struct{ path, code string }{
		{"src/*.c", review.CodeInvalidInput},
		{"lib/what?.py", review.CodeInvalidInput},
		{"web/[a-z].tsx", review.CodeInvalidInput},
		{"//depot/...", review.CodePathOutOfScope},
		{"../src/a*b.c", review.CodePathOutOfScope},
		{"/src/a*b.c", review.CodePathOutOfScope},
	} {
		env := callErr(t, c, review.ToolReportProblem, map[string]any{
			"file": bad.path, "line": 1, "severity": "high", "category": "bug", "message": "m"})
		if env.Code != bad.code {
			t.Errorf("report in %q: %+v, want %s", bad.path, env, bad.code)
		}
		env = callErr(t, c, review.ToolFetchMoreContext, map[string]any{"path": bad.path, "reason": "r"})
		if env.Code != bad.code {
			t.Errorf("context for %q: %+v, want %s", bad.path, env, bad.code)
		}
	}

	st := loadState(t, f.statePath)
	if len(st.Problems) != len(names) {
		t.Fatalf("problems %+v, want one per file %v", st.Problems, names)
	}
	for i, n := range names {
		if st.Problems[i].File != n || st.ContextRequests[i].Path != n {
			t.Errorf("recorded %q / %q, want %q", st.Problems[i].File, st.ContextRequests[i].Path, n)
		}
	}
	if st.RejectedTotal != 12 || len(st.Rejected) != 12 {
		t.Errorf("rejected %d kept, %d total; want 12", len(st.Rejected), st.RejectedTotal)
	}
}

// The error envelope must be structuredContent too, not only JSON text.
func TestErrorEnvelopeIsStructuredContent(t *testing.T) {
	f := newFixture(t)
	c := startServer(t, f, 0)
	res := callRaw(t, c, review.ToolReportProblem, map[string]any{
		"file": "app/main.go", "line": 15, "severity": "low", "category": "x", "message": "off the diff"})
	if !res.IsError {
		t.Fatalf("call accepted: %+v", res)
	}
	sc, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("structuredContent %#v, want the envelope object", res.StructuredContent)
	}
	if len(sc) != 3 || sc["code"] != review.CodeLineNotInDiff || sc["message"] == "" || sc["remedy"] == "" {
		t.Errorf("structuredContent %v, want exactly {code, message, remedy}", sc)
	}
	text, ok := mcp.AsTextContent(res.Content[0])
	if !ok {
		t.Fatalf("content %#v", res.Content)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(text.Text), &fromText); err != nil {
		t.Fatalf("text %q: %v", text.Text, err)
	}
	if fromText["code"] != sc["code"] || fromText["message"] != sc["message"] || fromText["remedy"] != sc["remedy"] {
		t.Errorf("text envelope %v and structuredContent %v differ", fromText, sc)
	}
	// Success stays plain text.
	ok2 := callRaw(t, c, review.ToolSkip, map[string]any{"reason": "lgtm"})
	if ok2.IsError || ok2.StructuredContent != nil {
		t.Errorf("success result %+v", ok2)
	}
}

// checkStrictJSON parses the state file as strict readers do.
func checkStrictJSON(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(data) || !json.Valid(data) {
		t.Fatalf("state file is not valid UTF-8 JSON: %q", data)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Logf("python3 not installed; Go's checks only")
		return
	}
	out, err := exec.Command(py, "-c", "import json,sys; json.load(open(sys.argv[1], encoding='utf-8', errors='strict'))", path).CombinedOutput()
	if err != nil {
		t.Fatalf("python3 refuses the state file: %v\n%s", err, out)
	}
}

// Invalid UTF-8 inside the arguments reached the state file verbatim,
// which Python and Node then refused to read.
func TestInvalidUTF8ArgumentsAreRefused(t *testing.T) {
	f := newFixture(t)
	c := startServer(t, f, 0)
	bad := json.RawMessage("{\"file\":\"app/main.go\",\"line\":7,\"severity\":\"high\",\"category\":\"x\",\"message\":\"bad \xff\xfe bytes \xc3\"}")
	if utf8.Valid(bad) {
		t.Fatal("test arguments are valid UTF-8")
	}
	res := callRaw(t, c, review.ToolReportProblem, bad)
	if !res.IsError {
		t.Fatalf("invalid UTF-8 accepted: %+v", res)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if sc["code"] != review.CodeInvalidInput || !strings.Contains(sc["message"].(string), "UTF-8") {
		t.Errorf("envelope %v, want INVALID_INPUT naming UTF-8", sc)
	}
	// A summary and a long argument with bad bytes too (the truncated form).
	long := "{\"markdown\":\"" + strings.Repeat("\xe2\x82", 3000) + "\"}"
	callRaw(t, c, review.ToolPublishSummary, json.RawMessage(long))
	// A lone surrogate escape is valid JSON text but no character.
	callRaw(t, c, review.ToolSkip, json.RawMessage(`{"reason":"","note":"\ud800"}`))
	closeServer(t, c)
	if data, _ := os.ReadFile(f.statePath); strings.Contains(strings.ToLower(string(data)), `\ud800`) {
		t.Errorf("state file keeps a lone surrogate: %s", data)
	}

	checkStrictJSON(t, f.statePath)
	st := loadState(t, f.statePath)
	if len(st.Problems) != 0 || len(st.Summaries) != 0 || len(st.Rejected) != 3 || st.Rejected[0].Code != review.CodeInvalidInput {
		t.Fatalf("state %+v", st)
	}
}

// Rejected calls were appended without a cap and the whole file rewritten
// per call: a runaway agent grew the file and the time per call without
// bound. The first MaxRejected are kept, the rest counted, arguments are
// truncated, and the count reaches the file when the server stops.
func TestRejectedCallsAreCappedAndCounted(t *testing.T) {
	f := newFixture(t)
	c := startServer(t, f, 0, "AICR_TEST_MAX_REJECTED=20")
	big := strings.Repeat("x", 8<<10)
	const calls = 150
	for i := 0; i < calls; i++ {
		callErr(t, c, review.ToolReportProblem, map[string]any{
			"file": "app/main.go", "line": 15, "severity": "low", "category": "x", "message": big})
	}
	closeServer(t, c)

	checkStrictJSON(t, f.statePath)
	st := loadState(t, f.statePath)
	if len(st.Rejected) != 20 || st.RejectedTotal != calls || st.RejectedDropped() != calls-20 {
		t.Fatalf("kept %d, total %d, dropped %d; want 20, %d, %d", len(st.Rejected), st.RejectedTotal, st.RejectedDropped(), calls, calls-20)
	}
	for _, r := range st.Rejected {
		if len(r.Arguments) > 2<<10 {
			t.Fatalf("stored arguments are %d bytes", len(r.Arguments))
		}
	}
	fi, err := os.Stat(f.statePath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 100<<10 {
		t.Errorf("state file is %d bytes after %d rejected 8 KiB calls", fi.Size(), calls)
	}
}

// A server stopped by SIGTERM (an agent CLI that kills its MCP servers)
// still writes the count.
func TestRejectedCountFlushedOnSIGTERM(t *testing.T) {
	f := newFixture(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), serveEnv+"=1", "AICR_TEST_STATE="+f.statePath, "AICR_TEST_CHANGE="+f.changePath,
		"AICR_TEST_MAX_REJECTED=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	dec := json.NewDecoder(out)
	send := func(id int, method string, params any) {
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := in.Write(append(msg, '\n')); err != nil {
			t.Fatal(err)
		}
		var resp map[string]any
		if err := dec.Decode(&resp); err != nil {
			t.Fatal(err)
		}
	}
	send(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	for i := 0; i < 5; i++ {
		send(2+i, "tools/call", map[string]any{"name": review.ToolSkip, "arguments": map[string]any{"reason": ""}})
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("server after SIGTERM: %v", err)
		}
	case <-time.After(time.Minute): // only a guard against a hang
		t.Fatal("server did not stop on SIGTERM")
	}
	st := loadState(t, f.statePath)
	if len(st.Rejected) != 1 || st.RejectedTotal != 5 {
		t.Fatalf("kept %d, total %d; want 1, 5", len(st.Rejected), st.RejectedTotal)
	}
}

func derivedFingerprint(file, category, anchor string) string {
	sum := sha256.Sum256([]byte(file + "\x00" + category + "\x00" + anchor))
	return hex.EncodeToString(sum[:])[:16]
}

// A symlink in src/ (a committed svn symlink or a hostile change) let the
// validator read files outside the run's src/ directory.
func TestValidatorDoesNotFollowSymlinksOutOfSrc(t *testing.T) {
	f := newFixture(t)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	lines := appSource()
	lines[6] = "OUTSIDE SECRET LINE"
	writeFile(t, outside, strings.Join(lines, "\n")+"\n")
	target := filepath.Join(f.srcDir, "app", "main.go")
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, target); err != nil {
		t.Fatal(err)
	}
	// docs/guide.md links to a file inside src/: allowed.
	writeFile(t, filepath.Join(f.srcDir, "docs", "real.md"), "# Inside\n\nHello.\n")
	guide := filepath.Join(f.srcDir, "docs", "guide.md")
	if err := os.Remove(guide); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.md", guide); err != nil {
		t.Fatal(err)
	}

	c := startServer(t, f, 0)
	callOK(t, c, review.ToolReportProblem, map[string]any{"file": "app/main.go", "line": 7, "severity": "high", "category": "leak", "message": "m"})
	callOK(t, c, review.ToolReportProblem, map[string]any{"file": "docs/guide.md", "line": 1, "severity": "low", "category": "doc", "message": "m"})
	st := loadState(t, f.statePath)
	if got, leaked := st.Problems[0].Fingerprint, derivedFingerprint("app/main.go", "leak", "OUTSIDE SECRET LINE"); got == leaked {
		t.Errorf("fingerprint %s was derived from the file outside src/", got)
	}
	if got, want := st.Problems[0].Fingerprint, derivedFingerprint("app/main.go", "leak", "line:7"); got != want {
		t.Errorf("fingerprint %s, want the line-number fallback %s", got, want)
	}
	if got, want := st.Problems[1].Fingerprint, derivedFingerprint("docs/guide.md", "doc", "# Inside"); got != want {
		t.Errorf("fingerprint through an inside symlink %s, want %s", got, want)
	}

	if _, err := review.ReadSource(f.srcDir, "app/main.go"); err == nil {
		t.Error("ReadSource followed a symlink out of src/")
	}
	if _, err := review.ReadSource(f.srcDir, "../change.json"); err == nil {
		t.Error("ReadSource read ../change.json")
	}
	if data, err := review.ReadSource(f.srcDir, "docs/guide.md"); err != nil || !strings.HasPrefix(string(data), "# Inside") {
		t.Errorf("ReadSource through an inside symlink: %q %v", data, err)
	}
	fifo := filepath.Join(f.srcDir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // guard only
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := review.ReadSource(f.srcDir, "pipe"); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("ReadSource read a FIFO")
		}
	case <-ctx.Done():
		t.Fatal("ReadSource blocked on a FIFO")
	}
}

// Over Streamable HTTP the count of refusals past the cap reaches the file
// when the server stops.
func TestRejectedCountFlushedWhenHTTPServerStops(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- review.ServeHTTP(ctx, review.ServerOptions{StatePath: f.statePath, ChangePath: f.changePath, Limits: review.Limits{MaxRejected: 2}},
			review.HTTPOptions{Addr: "127.0.0.1:0", Ready: func(u string) { urls <- u }})
	}()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("ServeHTTP: %v", err)
	}
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "t", Version: "1"}
	if _, err := c.Initialize(testContext(t), init); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 7; i++ {
		callErr(t, c, review.ToolSkip, map[string]any{"reason": ""})
	}
	c.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ServeHTTP: %v", err)
	}
	st := loadState(t, f.statePath)
	if len(st.Rejected) != 2 || st.RejectedTotal != 7 {
		t.Fatalf("kept %d, total %d; want 2, 7", len(st.Rejected), st.RejectedTotal)
	}
}
