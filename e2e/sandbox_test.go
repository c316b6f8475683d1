package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/internal/testimage"
	"github.com/aicr-dev/aicr/sandbox"
)

// sandboxContainersConf is the repo's containers.conf (runc, no default
// ulimits), the one `make test` exports.
func sandboxContainersConf(t *testing.T) string { return testimage.ContainersConf(t) }

// requireAgentImage is the image `make image` ships; aicrBin was built
// with its tag as buildinfo.Version, so it is also the daemon's default.
func requireAgentImage(t *testing.T) string {
	t.Helper()
	return testimage.Agent(t)
}

// useSandbox appends [sandbox] with kind podman to e's config, with no
// image key: the daemon runs its default image, the one `make image`
// ships, as an installation does.
func useSandbox(t *testing.T, e *env, network, podmanBinary string) {
	t.Helper()
	requireAgentImage(t)
	f, err := os.OpenFile(e.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, `
[sandbox]
kind = "podman"
network = %q

[sandbox.podman]
binary = %q
runtime = "runc"
containers_conf = %q
`, network, podmanBinary, sandboxContainersConf(t))
}

// runContainers lists the run containers podman still has that e's
// daemons made; other packages' tests may have theirs running at the same
// time.
func runContainers(t *testing.T, e *env) string {
	t.Helper()
	if len(e.daemonPIDs) == 0 {
		t.Fatal("runContainers: no daemon was started")
	}
	// Run ids start at 1 in every test's database, so names collide
	// across the packages' parallel tests: the owner label (the pid of the
	// daemon that made the container) tells this test's apart.
	cmd := exec.Command("podman", "ps", "-a", "--filter", "name=aicr-run-",
		"--format", `{{.Names}} {{index .Labels "`+sandbox.OwnerLabel+`"}}`)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+sandboxContainersConf(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("podman ps: %v: %s", err, out)
	}
	var left []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, label, _ := strings.Cut(line, " ")
		for _, pid := range e.daemonPIDs {
			if strings.HasPrefix(label, fmt.Sprintf("%d:", pid)) {
				left = append(left, name)
			}
		}
	}
	return strings.Join(left, " ")
}

// An SVN commit reviewed by the builtin agent inside Podman: hook →
// daemon → `aicr agent pass` in a container → problems in the file
// channel, and no container is left behind.
func TestSVNCommitReviewedInPodmanEndToEnd(t *testing.T) {
	e := newEnv(t, 1)
	useSandbox(t, e, "none", "podman")
	e.startDaemon()
	e.commit("wire the production account", map[string]string{"src/config.go": plantedFile})
	s := e.store()
	runs := e.waitFinished(s, 1, 180*time.Second)
	if runs[0].Status != audit.RunSucceeded {
		log, _ := os.ReadFile(e.daemonLog)
		t.Fatalf("run: %+v\ndaemon log:\n%s", runs[0], log)
	}
	lines := e.waitReports(60*time.Second, atLeast(1))
	got := problemsAt(lines[0].Problems)
	for _, loc := range []string{"src/config.go:4", "src/config.go:5"} {
		if got[loc] != "hard-coded-credential" {
			t.Errorf("file channel: want hard-coded-credential at %s, got %v", loc, got)
		}
	}
	// The pass ran in the container: its stats file and the captured
	// output are in the run dir, and the manifest names the bundle.
	runDir := filepath.Join(e.dir, "data", "runs", fmt.Sprint(runs[0].ID))
	if _, err := os.Stat(filepath.Join(runDir, "agent", "manifest.json")); err != nil {
		t.Errorf("no bundle manifest in the run's agent dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(runDir, "agent", "pass-stats.json")); err != nil {
		t.Errorf("no pass-stats.json from the sandboxed pass: %v", err)
	}
	if left := runContainers(t, e); left != "" {
		t.Errorf("containers left behind: %s", left)
	}
}

// The llm agent inside Podman with network "llm-only": its only way out
// is the run's egress proxy, which lets it reach the (allowlisted) model
// server; the finding reaches the file channel and the proxy's decisions
// are in the audit trail.
func TestSVNCommitReviewedByLLMInPodmanThroughEgress(t *testing.T) {
	e := newEnv(t, 1)
	sim := modelsim.Start(t, reviewScript("src/config.go", 7)...)
	sim.RequireKey(e2eModelKey)
	useLLM(t, e, modelsim.APIOpenAIChat, sim)
	useSandbox(t, e, "llm-only", "podman")
	e.startDaemon()
	e.commit("wire the production account", map[string]string{"src/config.go": plantedFile})
	checkLLMReview(t, e, sim, "1", "src/config.go", 7)

	runs := e.waitFinished(e.store(), 1, time.Second)
	var detail audit.RunDetail
	if err := json.Unmarshal([]byte(e.aicr("audit", "show", fmt.Sprint(runs[0].ID), "--config", e.config, "--format", "json")), &detail); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(strings.TrimPrefix(sim.URL, "http://"), "https://")
	host = strings.SplitN(host, "/", 2)[0]
	allowed := 0
	for _, ev := range detail.Egress {
		if !ev.Allowed {
			t.Errorf("refused egress in a clean review: %+v", ev)
		}
		if fmt.Sprintf("%s:%d", ev.Host, ev.Port) == host {
			allowed++
		}
	}
	if allowed == 0 {
		t.Errorf("no allowed egress to the model server %s in the audit trail: %+v", host, detail.Egress)
	}
	if left := runContainers(t, e); left != "" {
		t.Errorf("containers left behind: %s", left)
	}
}

// Podman missing: the run fails saying what and the remedy, and the agent
// never runs natively in its place (no state file, no findings).
func TestPodmanMissingFailsTheRunWithTheRemedy(t *testing.T) {
	e := newEnv(t, 1)
	useSandbox(t, e, "none", "/nonexistent/podman")
	e.startDaemon()
	e.commit("wire the production account", map[string]string{"src/config.go": plantedFile})
	s := e.store()
	runs := e.waitFinished(s, 1, 120*time.Second)
	if runs[0].Status == audit.RunSucceeded {
		t.Fatalf("the run succeeded without podman: %+v", runs[0])
	}
	var detail audit.RunDetail
	if err := json.Unmarshal([]byte(e.aicr("audit", "show", fmt.Sprint(runs[0].ID), "--config", e.config, "--format", "json")), &detail); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(detail.Error, "/nonexistent/podman") || !strings.Contains(detail.Error, "install Podman") {
		t.Errorf("run error must name the missing podman and the remedy: %q", detail.Error)
	}
	if len(detail.Problems) != 0 {
		t.Errorf("problems recorded without a sandbox: %+v", detail.Problems)
	}
	state := filepath.Join(e.dir, "data", "runs", fmt.Sprint(runs[0].ID), "agent", ".aicr-output-state.json")
	if b, err := os.ReadFile(state); err == nil && strings.Contains(string(b), "hard-coded-credential") {
		t.Errorf("the agent ran natively: its findings are in %s", state)
	}
}

// A hostile pass: the binary the sandbox runs as aicr tries to write the
// source, dial the model server directly, tunnel to addresses the
// allowlist does not name, and find a daemon secret in its environment;
// in three more commits it fork-bombs, allocates past the memory limit
// and sleeps past the timeout. Every attempt fails or is killed, each run
// records why (the proxy's refusals audited), none has findings, and the
// daemon keeps serving. The limits are small so the test stays short.
func TestHostilePassInPodmanIsContained(t *testing.T) {
	e := newEnv(t, 1)
	hostile := filepath.Join(t.TempDir(), "hostile")
	build := exec.Command("go", "build", "-o", hostile, "./testdata/hostile")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build hostile: %v: %s", err, out)
	}
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	// retry_for: a killed pass is retried like any failure; one attempt
	// is what this test is about.
	cfg = []byte(strings.Replace(string(cfg), "[daemon]\n", fmt.Sprintf("[daemon]\naicr_binary = %q\nretry_for = \"1s\"\n", hostile), 1))
	if err := os.WriteFile(e.config, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	const daemonSecret = "daemon-only-secret-5b1e"
	t.Setenv("AICR_E2E_DAEMON_SECRET", daemonSecret)
	sim := modelsim.Start(t)
	const passTimeout = 15 * time.Second
	useLLM(t, e, modelsim.APIOpenAIChat, sim, fmt.Sprintf("timeout = %q", passTimeout.String()))
	useSandbox(t, e, "llm-only", "podman")
	const pidsLimit = 32
	appendConfig(t, e, fmt.Sprintf("memory = \"64m\"\npids_limit = %d\n", pidsLimit))
	e.startDaemon()
	e.commit("wire the production account", map[string]string{"src/config.go": plantedFile})
	e.commit("hostile:fork-bomb", map[string]string{"src/fork.go": "package src\n"})
	e.commit("hostile:allocate", map[string]string{"src/alloc.go": "package src\n"})
	e.commit("hostile:sleep", map[string]string{"src/sleep.go": "package src\n"})
	s := e.store()
	runs := e.waitFinished(s, 4, 300*time.Second)
	byRev := map[string]audit.RunSummary{}
	for _, r := range runs {
		byRev[r.Revision] = r
		// r1's file holds a planted credential: the builtin pre-pass on the
		// host finds its two lines, and a failed pass keeps them (a partial
		// review). Nothing else may be recorded: the hostile passes report
		// nothing.
		prePass := map[string]int{"1": 2}[r.Revision]
		if r.Status == audit.RunSucceeded || r.ProblemCount != prePass {
			t.Errorf("r%s: a hostile pass succeeded or recorded findings beyond the pre-pass's %d: %+v", r.Revision, prePass, r)
		}
	}
	escape := byRev["1"]
	runDir := filepath.Join(e.dir, "data", "runs", fmt.Sprint(escape.ID))
	b, err := os.ReadFile(filepath.Join(runDir, "agent", "hostile.json"))
	if err != nil {
		log, _ := os.ReadFile(e.daemonLog)
		t.Fatalf("the hostile pass did not run in the sandbox: %v\ndaemon log:\n%s", err, log)
	}
	var r struct {
		WriteSrc      string   `json:"write_src"`
		DialModel     string   `json:"dial_model"`
		ProxyExfil    string   `json:"proxy_exfil"`
		ProxyLoopback string   `json:"proxy_loopback"`
		Env           []string `json:"env"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	for what, res := range map[string]string{"write /workspace/src": r.WriteSrc, "dial the model directly": r.DialModel,
		"tunnel to exfil.example.net": r.ProxyExfil, "tunnel to 127.0.0.1:22": r.ProxyLoopback} {
		if res == "ok" {
			t.Errorf("%s succeeded from inside the sandbox", what)
		}
	}
	if _, err := os.Stat(filepath.Join(runDir, "src", "pwned")); err == nil {
		t.Error("the pass wrote into the run's src/")
	}
	for _, kv := range r.Env {
		if strings.Contains(kv, daemonSecret) || strings.HasPrefix(kv, "AICR_E2E_DAEMON_SECRET=") {
			t.Errorf("the daemon's secret reached the container: %s", kv)
		}
	}
	if len(r.Env) == 0 {
		t.Error("the hostile pass saw no environment at all (HOME should be set)")
	}
	if n := len(sim.Requests()); n != 0 {
		t.Errorf("the model server got %d requests from a pass that must not reach it directly", n)
	}
	var detail audit.RunDetail
	if err := json.Unmarshal([]byte(e.aicr("audit", "show", fmt.Sprint(escape.ID), "--config", e.config, "--format", "json")), &detail); err != nil {
		t.Fatal(err)
	}
	refused := map[string]bool{}
	for _, ev := range detail.Egress {
		if ev.Allowed {
			t.Errorf("allowed egress from a hostile pass: %+v", ev)
		} else {
			refused[fmt.Sprintf("%s:%d", ev.Host, ev.Port)] = true
		}
	}
	if !refused["exfil.example.net:443"] || !refused["127.0.0.1:22"] {
		t.Errorf("refusals missing from the audit trail: %+v", detail.Egress)
	}

	// The resource attacks: each run failed, saying which limit stopped it.
	for _, rev := range []string{"2", "3", "4"} {
		t.Logf("r%s: %s", rev, byRev[rev].Error)
	}
	fork := byRev["2"]
	if !strings.Contains(fork.Error, "fork refused after") || !strings.Contains(fork.Error, "exited 4") {
		t.Errorf("fork bomb run error: %q", fork.Error)
	}
	var forked struct{ Children int }
	if b, err := os.ReadFile(filepath.Join(e.dir, "data", "runs", fmt.Sprint(fork.ID), "agent", "hostile-fork.json")); err != nil {
		t.Errorf("the fork bomb left no count: %v", err)
	} else if json.Unmarshal(b, &forked) != nil || forked.Children >= pidsLimit {
		t.Errorf("the fork bomb started %s children past pids_limit %d", b, pidsLimit)
	}
	if alloc := byRev["3"]; !strings.Contains(alloc.Error, "memory limit") {
		t.Errorf("allocation run error: %q, want the memory limit named", alloc.Error)
	}
	if sleep := byRev["4"]; !strings.Contains(sleep.Error, "stopped after "+passTimeout.String()) || !strings.Contains(sleep.Error, "timeout") {
		t.Errorf("sleeping run error: %q, want the timeout named", sleep.Error)
	}

	resp, err := http.Get("http://" + e.addr + "/healthz")
	if err != nil {
		t.Fatalf("the daemon stopped serving: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("healthz after the hostile passes: %s", resp.Status)
	}
	if left := runContainers(t, e); left != "" {
		t.Errorf("containers left behind: %s", left)
	}
}

// appendConfig appends TOML lines to e's config (to the last table).
func appendConfig(t *testing.T, e *env, lines string) {
	t.Helper()
	f, err := os.OpenFile(e.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(lines); err != nil {
		t.Fatal(err)
	}
}

// The follow-up pass runs in a second container over the same agent dir:
// what pass 1 recorded survives the bundle's re-materialisation, and the
// context the agent asked for and the repository's rules reach the model.
func TestSVNLLMFollowUpPassInPodman(t *testing.T) {
	followUpReview(t, func(e *env) { useSandbox(t, e, "llm-only", "podman") })
}

// [agent.llm] headers_file under Podman: the daemon reads the headers at
// the pass and hands them to the container as one secret env var; every
// model request from inside carries them, and the token is nowhere in the
// run dir or the daemon's log.
func TestLLMHeadersFileReachesTheModelFromPodman(t *testing.T) {
	const token = "gw-token-e2e-41f0c9d7b2"
	e := newEnv(t, 1)
	sim := modelsim.Start(t, reviewScript("src/config.go", 7)...)
	sim.RequireKey(e2eModelKey)
	headers := filepath.Join(t.TempDir(), "headers")
	if err := os.WriteFile(headers, []byte("X-Gateway-Token: "+token+"\nX-Tenant: acme\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	useLLM(t, e, modelsim.APIOpenAIChat, sim, fmt.Sprintf("headers_file = %q", headers))
	useSandbox(t, e, "llm-only", "podman")
	e.startDaemon()
	e.commit("wire the production account", map[string]string{"src/config.go": plantedFile})
	checkLLMReview(t, e, sim, "1", "src/config.go", 7)
	reqs := sim.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model server got no request")
	}
	for i, r := range reqs {
		if r.Header.Get("X-Gateway-Token") != token || r.Header.Get("X-Tenant") != "acme" {
			t.Errorf("request %d: headers %v, want the headers_file's", i, r.Header)
		}
	}
	runs := e.waitFinished(e.store(), 1, time.Second)
	runDir := filepath.Join(e.dir, "data", "runs", fmt.Sprint(runs[0].ID))
	filepath.WalkDir(runDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), token) {
				t.Errorf("%s holds the header token", p)
			}
		}
		return nil
	})
	if b, _ := os.ReadFile(e.daemonLog); strings.Contains(string(b), token) {
		t.Error("the daemon log holds the header token")
	}
}
