package e2e

// End-to-end tests on real parts: a real svnadmin repository, the hook
// written by `aicr install svn-hook`, a real `aicr daemon` process, real
// `svn commit`s, the real SQLite audit database and the file channel.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/internal/pgtest"
	"github.com/aicr-dev/aicr/internal/svntest"
	"github.com/aicr-dev/aicr/internal/testimage"
	"github.com/aicr-dev/aicr/review"
)

// The packages of the shipped binaries, as `make build` names them.
const (
	aicrPkg   = "github.com/aicr-dev/aicr/cmd/aicr"
	notifyPkg = "github.com/aicr-dev/aicr/cmd/aicr-notify"
)

// aicrBin is the aicr binary TestMain built, the one every test runs.
var aicrBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "aicr-e2e-bin-")
	if err != nil {
		panic(err)
	}
	aicrBin = filepath.Join(dir, "aicr")
	if err := buildAicr(aicrBin); err != nil {
		fmt.Fprintln(os.Stderr, "build aicr:", err)
		os.Exit(1)
	}
	code := m.Run()
	pgtest.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one installation: a repository with the hook, a config, a data dir.
type env struct {
	t       *testing.T
	dir     string
	repos   string
	wc      string
	config  string
	reports string
	spool   string
	addr    string
	daemon  *exec.Cmd
	// daemonDone is closed once daemon's Wait returned; reading
	// daemon.ProcessState from the test goroutine instead would race
	// with Wait writing it.
	daemonDone chan struct{}
	daemonLog  string
	// daemonPIDs are every daemon this env started, stopped ones too:
	// the owners of the containers a test checks are gone.
	daemonPIDs []int
}

func newEnv(t *testing.T, workers int) *env {
	t.Helper()
	return newEnvWith(t, workers, "")
}

// newEnvWith adds repoExtra (TOML lines) to the [[repo]] table.
func newEnvWith(t *testing.T, workers int, repoExtra string) *env {
	t.Helper()
	svntest.Require(t)
	dir := t.TempDir()
	e := &env{t: t, dir: dir, repos: filepath.Join(dir, "repos", "main"), wc: filepath.Join(dir, "wc"),
		config: filepath.Join(dir, "aicr.toml"), reports: filepath.Join(dir, "reports.jsonl"), spool: filepath.Join(dir, "spool")}
	e.addr = freeAddr(t)
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("e2e-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`
[daemon]
listen = %q
data_dir = "data"
workers = %d
secret_file = "secret"
spool_drain_every = "@every 1s"

[notify]
spool_dir = "spool"
timeout = "1s"

[[repo]]
name = "main"
kind = "svn"
url = "file://%s"
local_path = %q
channels = ["reports"]
%s

[[channel]]
name = "reports"
kind = "file"
path = "reports.jsonl"
`, e.addr, workers, e.repos, e.repos, repoExtra)
	if err := os.WriteFile(e.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(e.repos), 0o755)
	svntest.Run(t, dir, "svnadmin", "create", e.repos)
	out := e.aicr("install", "svn-hook", "--repo", e.repos, "--config", e.config)
	if !strings.Contains(out, "installed") {
		t.Fatalf("install svn-hook: %s", out)
	}
	svntest.Run(t, dir, "svn", "checkout", "-q", "file://"+e.repos, e.wc)
	t.Cleanup(e.stopDaemon)
	return e
}

func (e *env) aicr(args ...string) string {
	e.t.Helper()
	cmd := exec.Command(aicrBin, args...)
	cmd.Dir = e.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("aicr %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// buildAicr builds aicr into out static, as `make build` makes it: the
// sandbox tests mount this binary into the image `make image` ships, and
// its default image (buildinfo.Version) is that image's tag. extraX are more
// -X settings, such as another buildinfo.Version.
func buildAicr(out string, extraX ...string) error {
	var x []string
	if flags := testimage.BuildFlags(); len(flags) == 2 && flags[0] == "-ldflags" {
		x = append(x, flags[1])
	}
	x = append(x, extraX...)
	args := []string{"build"}
	if len(x) > 0 {
		args = append(args, "-ldflags", strings.Join(x, " "))
	}
	build := exec.Command("go", append(args, "-o", out, aicrPkg)...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	return build.Run()
}

// runAicr runs aicr in dir and returns its stdout, its stderr and its
// exit code, for a test that checks them apart (JSON on stdout, reasons
// on stderr) or expects a failure.
func runAicr(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(aicrBin, args...)
	cmd.Dir = dir
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("aicr %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

func (e *env) startDaemon() {
	e.t.Helper()
	e.daemonLog = filepath.Join(e.dir, fmt.Sprintf("daemon-%d.log", time.Now().UnixNano()))
	logf, err := os.Create(e.daemonLog)
	if err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command(aicrBin, "daemon", "--config", e.config)
	cmd.Dir = e.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.daemon = cmd
	e.daemonPIDs = append(e.daemonPIDs, cmd.Process.Pid)
	done := make(chan struct{})
	e.daemonDone = done
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + e.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	log, _ := os.ReadFile(e.daemonLog)
	e.t.Fatalf("daemon did not come up on %s:\n%s", e.addr, log)
}

func (e *env) stopDaemon() {
	if e.daemon != nil && e.daemon.Process != nil {
		e.daemon.Process.Signal(syscall.SIGTERM)
		select {
		case <-e.daemonDone:
		case <-time.After(10 * time.Second):
			e.daemon.Process.Kill()
			<-e.daemonDone
		}
		e.daemon = nil
	}
}

func (e *env) killDaemon() {
	e.t.Helper()
	if err := e.daemon.Process.Signal(syscall.SIGKILL); err != nil {
		e.t.Fatal(err)
	}
	<-e.daemonDone
	e.daemon = nil
}

func (e *env) commit(msg string, files map[string]string) {
	e.t.Helper()
	for name, content := range files {
		p := filepath.Join(e.wc, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
	svntest.Run(e.t, e.wc, "svn", "add", "-q", "--force", ".")
	svntest.Run(e.t, e.wc, "svn", "commit", "-q", "-m", msg, "--username", "alice")
}

func (e *env) store() *audit.Store {
	e.t.Helper()
	s, err := audit.Open(context.Background(), filepath.Join(e.dir, "data", "aicr.db"))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { s.Close() })
	return s
}

// waitFinished waits until n runs have a final status.
func (e *env) waitFinished(s *audit.Store, n int, limit time.Duration) []audit.RunSummary {
	e.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		runs, err := s.ListRuns(context.Background(), audit.ListOptions{Limit: 1000})
		if err != nil {
			e.t.Fatal(err)
		}
		finished := 0
		for _, r := range runs {
			if r.Status.Final() {
				finished++
			}
		}
		if finished >= n {
			return runs
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(e.daemonLog)
			e.t.Fatalf("only %d of %d runs finished (%d runs total); daemon log:\n%s", finished, n, len(runs), log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type reportLine struct {
	Channel  string           `json:"channel"`
	RunID    int64            `json:"run_id"`
	Repo     string           `json:"repo"`
	Revision string           `json:"revision"`
	Text     string           `json:"text"`
	Problems []review.Problem `json:"problems"`
}

// waitReports polls the file channel until done accepts its lines:
// deliveries run after a run finishes, never inside the review worker.
func (e *env) waitReports(limit time.Duration, done func([]reportLine) bool) []reportLine {
	e.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		lines := e.reportLines()
		if done(lines) || time.Now().After(deadline) {
			return lines
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// atLeast is a waitReports condition: n lines or more.
func atLeast(n int) func([]reportLine) bool {
	return func(lines []reportLine) bool { return len(lines) >= n }
}

func (e *env) reportLines() []reportLine {
	e.t.Helper()
	f, err := os.Open(e.reports)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	var out []reportLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l reportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			e.t.Fatalf("report line is not JSON: %v: %s", err, sc.Text())
		}
		out = append(out, l)
	}
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

const cleanFile = "package config\n\nconst Region = \"eu-west-1\"\n\nfunc Name() string { return \"svc\" }\n"

// plantedFile has an AWS key id on line 4 and a password literal on line 5;
// lines 1-3 are unchanged from cleanFile's first lines.
const plantedFile = "package config\n\nconst Region = \"eu-west-1\"\nconst AccessKey = \"AKIAQWERTYUIOPASDFGH\"\nvar password = \"s3cr3t-Prod-Value\"\n\nfunc Name() string { return \"svc\" }\n"

const conflictFile = "line one\n<<<<<<< .mine\nmine\n=======\ntheirs\n>>>>>>> .r3\n"

func problemsAt(ps []review.Problem) map[string]string {
	out := map[string]string{}
	for _, p := range ps {
		out[fmt.Sprintf("%s:%d", p.File, p.Line)] = p.Category
	}
	return out
}

func TestSVNCommitReviewedEndToEnd(t *testing.T) {
	e := newEnv(t, 2)
	e.startDaemon()
	e.commit("add config", map[string]string{"src/config.go": cleanFile})
	e.commit("wire the production account", map[string]string{"src/config.go": plantedFile, "docs/merge notes.txt": conflictFile})
	s := e.store()
	runs := e.waitFinished(s, 2, 60*time.Second)

	var r2 audit.RunSummary
	for _, r := range runs {
		if r.Revision == "2" {
			r2 = r
		}
		if r.Source != "trigger" {
			t.Errorf("run %d source %q, want trigger", r.ID, r.Source)
		}
	}
	if r2.ID == 0 || r2.Status != audit.RunSucceeded || r2.ProblemCount < 3 {
		t.Fatalf("r2 run: %+v", r2)
	}

	want := map[string]string{
		"src/config.go:4":        "hard-coded-credential",
		"src/config.go:5":        "hard-coded-credential",
		"docs/merge notes.txt:2": "merge-conflict-marker",
	}
	var line *reportLine
	lines := e.waitReports(60*time.Second, func(lines []reportLine) bool {
		for _, l := range lines {
			if l.Revision == "2" {
				return true
			}
		}
		return false
	})
	for i := range lines {
		if lines[i].Revision == "2" {
			line = &lines[i]
		}
	}
	if line == nil {
		t.Fatalf("no report for r2 in the file channel: %+v", lines)
	}
	got := problemsAt(line.Problems)
	for loc, cat := range want {
		if got[loc] != cat {
			t.Errorf("file channel: want %s at %s, got %v", cat, loc, got)
		}
	}
	for _, p := range line.Problems {
		if p.File == "src/config.go" && p.Line < 4 {
			t.Errorf("problem on an unchanged line: %+v", p)
		}
	}
	raw, _ := os.ReadFile(e.reports)
	for _, secret := range []string{"AKIAQWERTYUIOPASDFGH", "s3cr3t-Prod-Value"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the report leaks the secret value %q", secret)
		}
	}

	// The same findings through the CLI's audit view.
	var detail audit.RunDetail
	if err := json.Unmarshal([]byte(e.aicr("audit", "show", fmt.Sprint(r2.ID), "--config", e.config, "--format", "json")), &detail); err != nil {
		t.Fatal(err)
	}
	got = problemsAt(detail.Problems)
	for loc, cat := range want {
		if got[loc] != cat {
			t.Errorf("audit show: want %s at %s, got %v", cat, loc, got)
		}
	}
	if len(detail.Dispatches) != 1 || detail.Dispatches[0].Status != delivery.StatusSent {
		t.Errorf("dispatches: %+v", detail.Dispatches)
	}
	// What the agent cost is part of the audit trail (issue 11 item 6).
	if a := detail.Agent; a == nil || a.Agent != "builtin" || a.Passes != 1 || a.CostUSD != nil {
		t.Errorf("agent stats: %+v", a)
	}
	text := e.aicr("audit", "show", fmt.Sprint(r2.ID), "--config", e.config)
	if !strings.Contains(text, "src/config.go:4") || !strings.Contains(text, "reports: sent") || !strings.Contains(text, "agent: builtin, passes 1") {
		t.Errorf("audit show text:\n%s", text)
	}
	list := e.aicr("audit", "list", "--config", e.config)
	if !strings.Contains(list, "succeeded") || !strings.Contains(list, "RUN") {
		t.Errorf("audit list:\n%s", list)
	}
}

func TestCommitsWhileDaemonDownAreSpooledThenReviewed(t *testing.T) {
	e := newEnv(t, 1)
	e.commit("one", map[string]string{"a.txt": "hello\n"})
	e.commit("two", map[string]string{"b.txt": "password = \"hunter22-real\"\n"})
	// The hook detaches; wait for both spool files to appear.
	deadline := time.Now().Add(20 * time.Second)
	var spooled []os.DirEntry
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir(e.spool)
		spooled = spooled[:0]
		for _, en := range entries {
			if strings.HasSuffix(en.Name(), ".json") {
				spooled = append(spooled, en)
			}
		}
		if len(spooled) == 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(spooled) != 2 {
		log, _ := os.ReadFile(filepath.Join(e.spool, "notify.log"))
		t.Fatalf("want 2 spooled events, got %d; notify.log:\n%s", len(spooled), log)
	}
	e.startDaemon()
	s := e.store()
	runs := e.waitFinished(s, 2, 60*time.Second)
	for _, r := range runs {
		if r.Source != "spool" {
			t.Errorf("run %d (r%s) source %q, want spool", r.ID, r.Revision, r.Source)
		}
	}
	var r2 *audit.RunSummary
	for i := range runs {
		if runs[i].Revision == "2" {
			r2 = &runs[i]
		}
	}
	if r2 == nil || r2.ProblemCount != 1 {
		t.Fatalf("r2 should have the password finding: %+v", runs)
	}
	left, _ := os.ReadDir(e.spool)
	for _, en := range left {
		if strings.HasSuffix(en.Name(), ".json") {
			t.Errorf("spool file left after drain: %s", en.Name())
		}
	}
}

func TestSIGKILLWithQueuedCommitsReviewsEachOnce(t *testing.T) {
	e := newEnv(t, 1)
	const commits = 20
	for i := 1; i <= commits; i++ {
		e.commit(fmt.Sprintf("commit %d", i), map[string]string{fmt.Sprintf("f%02d.txt", i): fmt.Sprintf("token = \"tok-%d-abcdefgh\"\n", i)})
	}
	waitSpooled(t, e.spool, commits)
	e.startDaemon()
	s := e.store()
	// Kill as soon as the first review is done, so most are still queued
	// and one is likely mid-review.
	e.waitFinished(s, 1, 60*time.Second)
	e.killDaemon()
	runs, _ := s.ListRuns(context.Background(), audit.ListOptions{Limit: 1000})
	finished := 0
	for _, r := range runs {
		if r.Status.Final() {
			finished++
		}
	}
	t.Logf("killed with %d of %d reviews finished", finished, commits)
	if finished == commits {
		t.Log("all reviews finished before the kill; the restart path is still checked for duplicates")
	}
	e.startDaemon()
	runs = e.waitFinished(s, commits, 120*time.Second)
	if len(runs) != commits {
		t.Fatalf("want %d runs, got %d", commits, len(runs))
	}
	seen := map[string]int{}
	for _, r := range runs {
		seen[r.Revision]++
		if r.Status != audit.RunSucceeded || r.ProblemCount != 1 {
			t.Errorf("run %d r%s: %s problems=%d %s", r.ID, r.Revision, r.Status, r.ProblemCount, r.Error)
		}
	}
	for i := 1; i <= commits; i++ {
		if seen[fmt.Sprint(i)] != 1 {
			t.Errorf("revision %d reviewed %d times", i, seen[fmt.Sprint(i)])
		}
	}
	for _, r := range runs {
		d, err := s.GetRun(context.Background(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Problems) != 1 {
			t.Errorf("run %d has %d problems stored, want 1 (a resumed run must replace, not add)", r.ID, len(d.Problems))
		}
	}
}

func waitSpooled(t *testing.T, dir string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		entries, _ := os.ReadDir(dir)
		count := 0
		for _, en := range entries {
			// A dot file is one still being written (.tmp-*.json), not yet
			// spooled.
			if strings.HasSuffix(en.Name(), ".json") && !strings.HasPrefix(en.Name(), ".") {
				count++
			}
		}
		if count >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %d spooled events, got %d", n, count)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestReviewDryRunJSONForPastRevision(t *testing.T) {
	e := newEnv(t, 1)
	e.commit("add config", map[string]string{"src/config.go": cleanFile})
	e.commit("plant", map[string]string{"src/config.go": plantedFile})
	e.commit("later", map[string]string{"README": "docs\n"})
	out := e.aicr("review", "svn", "--repo", "main", "--rev", "2", "--config", e.config, "--dry-run", "--format", "json")
	var res struct {
		RunID    int64            `json:"run_id"`
		Status   string           `json:"status"`
		DryRun   bool             `json:"dry_run"`
		Problems []review.Problem `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not the JSON result: %v\n%s", err, out)
	}
	got := problemsAt(res.Problems)
	if got["src/config.go:4"] != "hard-coded-credential" || got["src/config.go:5"] != "hard-coded-credential" || len(got) != 2 {
		t.Fatalf("problems: %v", got)
	}
	if !res.DryRun || res.Status != "succeeded" {
		t.Fatalf("result: %+v", res)
	}
	if _, err := os.Stat(e.reports); err == nil {
		t.Fatal("--dry-run must not publish to the file channel")
	}
	var detail audit.RunDetail
	json.Unmarshal([]byte(e.aicr("audit", "show", fmt.Sprint(res.RunID), "--config", e.config, "--format", "json")), &detail)
	if detail.Source != "manual" || len(detail.Dispatches) != 0 {
		t.Fatalf("manual dry run audit: source=%s dispatches=%v", detail.Source, detail.Dispatches)
	}
}

func TestReviewBadInputFailsClearly(t *testing.T) {
	e := newEnv(t, 1)
	e.commit("one", map[string]string{"a.txt": "a\n"})
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"non-existent revision", []string{"review", "svn", "--repo", "main", "--rev", "99", "--config", e.config, "--dry-run"}, 1, "no such revision"},
		{"unknown repo", []string{"review", "svn", "--repo", "nope", "--rev", "1", "--config", e.config}, 2, `--repo "nope"`},
		{"missing config", []string{"review", "svn", "--repo", "main", "--rev", "1", "--config", filepath.Join(e.dir, "missing.toml")}, 2, "config file not found"},
		{"bad format", []string{"audit", "list", "--config", e.config, "--format", "yaml"}, 2, "--format must be text or json"},
		{"unknown run", []string{"audit", "show", "12345", "--config", e.config}, 1, "no run 12345"},
		{"config check", []string{"config", "check", filepath.Join("..", "config", "testdata", "unknown_key.toml")}, 2, "unknown_key.toml:4: daemon.wrokers: unknown key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(aicrBin, tc.args...)
			if tc.name == "config check" {
				cmd.Dir, _ = os.Getwd()
			}
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Fatalf("want exit %d, got %v\n%s", tc.code, err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("output does not say %q:\n%s", tc.want, out)
			}
		})
	}
	// svn failing: the repository is gone. The run is recorded as failed
	// with svn's reason, not lost.
	os.RemoveAll(e.repos)
	cmd := exec.Command(aicrBin, "review", "svn", "--repo", "main", "--rev", "1", "--config", e.config, "--dry-run", "--format", "json")
	out, _ := cmd.Output()
	var res struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Status != "failed" || !strings.Contains(res.Error, "fetch main r1") {
		t.Fatalf("want a failed run naming the fetch, got %+v", res)
	}
}

func TestNotifyNeverFails(t *testing.T) {
	dir := t.TempDir()
	cases := [][]string{
		{"notify", "svn", "--config", filepath.Join(dir, "missing.toml"), "/srv/svn/x", "5"},
		{"notify", "svn", "--bogus-flag"},
		{"notify", "svn", "/only/one/arg"},
		{"notify", "svn", "--config", filepath.Join(dir, "missing.toml"), "/srv/svn/x", "abc"},
	}
	for _, args := range cases {
		cmd := exec.Command(aicrBin, args...)
		var stdout strings.Builder
		cmd.Stdout = &stdout
		errOut, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		msg := new(strings.Builder)
		sc := bufio.NewScanner(errOut)
		for sc.Scan() {
			msg.WriteString(sc.Text())
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("aicr %v must exit 0, got %v", args, err)
		}
		if stdout.Len() != 0 {
			t.Errorf("aicr %v wrote to stdout: %q", args, stdout.String())
		}
		if !strings.Contains(msg.String(), "aicr notify") {
			t.Errorf("aicr %v gave no reason on stderr: %q", args, msg.String())
		}
	}
}
