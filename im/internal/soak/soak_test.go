package soak

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/internal/p4emu"
	"github.com/aicr-dev/aicr/internal/testimage"
)

// Knobs, from the environment (make soak passes them through).
//
//	SOAK_MINUTES  length of the run; 3 (the short form, in make test) by
//	              default. Commits: 15 per minute; committing takes 60% of
//	              the time, the rest drains.
//	SOAK_SANDBOX  1: reviews run in Podman with the image make image
//	              builds (testimage.Agent: this build's tag, else :latest).
//	SOAK_BIN_DIR  where make build put aicr and aicr-notify; without it
//	              the test builds them the same way.
//	SOAK_KEEP     1: keep the work directory even when the soak passes.
const (
	committers     = 4
	stallLimit     = 45 * time.Second
	shutdownGrace  = 10 * time.Second
	commitsPerMin  = 15
	defaultMinutes = 3
)

// The channels (writeConfig has their policies). Every one publishes a
// critical finding, which the pre-pass invariant relies on.
var channelNames = []string{"slack-bot", "slack-hook", "feishu", "dingtalk", "wecom", "webhook", "file"}

type commit struct {
	repo, rev, who, kind, model string
	id                          string // soak-id in the message
	at                          time.Time
	credFile                    string // the path the report names, for kind cred
	cred                        string
}

// soak is one run: the installation under root, the stand-ins, what the
// committers made, and the daemon process.
type soak struct {
	t       *testing.T
	ctx     context.Context // cancelled when the watchdog fires
	cancel  context.CancelFunc
	root    string
	bin     string
	cfg     string
	data    string
	logPath string
	listen  string
	minutes int
	sandbox bool

	hostA, hostB    *faultHost
	slack           *slackAPI
	slackHook, hook *hookSink
	feishu          *imtest.Feishu
	ding            *imtest.DingTalk
	wecom           *imtest.WeCom
	model           *modelsim.Server
	svnURL          map[string]string
	depotPath       string
	p4Trigger       string // the command of the line aicr install p4-trigger printed
	store           *audit.Store

	p4mu sync.Mutex // one submit to the depot file at a time

	modelMu   sync.Mutex
	modelSeen map[string]int // model requests per commit

	commitsMu  sync.Mutex // guards commits, commitErrs and secrets
	commits    []*commit
	commitErrs []string
	secrets    map[string]string // value → what it is

	dmu            sync.Mutex // guards the daemon fields, events and daemonProblems
	daemon         *exec.Cmd
	daemonDone     chan struct{}
	expectExit     bool
	starts         int
	events         []string    // faults, in order, for the table
	kills          []time.Time // when each SIGKILL was sent
	daemonProblems []string    // unexpected exits, slow shutdowns

	watchMu       sync.Mutex
	watchPaused   int
	watchdogFired string

	lastRSS                               string
	startedAt, committingDone, finishedAt time.Time
}

func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak runs the whole product for minutes; skipped with -short")
	}
	for _, tool := range []string{"svn", "svnadmin"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (make deps installs it): %v", tool, err)
		}
	}
	s := newSoak(t)
	s.run()
}

func newSoak(t *testing.T) *soak {
	minutes := defaultMinutes
	if v := os.Getenv("SOAK_MINUTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SOAK_MINUTES=%q: want a whole number of minutes, at least 1", v)
		}
		minutes = n
	}
	// Not t.TempDir: the logs, the database and the goroutine dump stay
	// behind when the soak fails, at a path the failure names.
	root, err := os.MkdirTemp("", "aicr-soak-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &soak{t: t, ctx: ctx, cancel: cancel, root: root, minutes: minutes, sandbox: os.Getenv("SOAK_SANDBOX") == "1",
		secrets: map[string]string{}, svnURL: map[string]string{}, modelSeen: map[string]int{},
		cfg: filepath.Join(root, "etc", "aicr.toml"), data: filepath.Join(root, "data"), logPath: filepath.Join(root, "daemon.log")}
	t.Cleanup(func() {
		cancel()
		s.stopDaemon(syscall.SIGKILL)
		if s.store != nil {
			s.store.Close()
		}
		if t.Failed() || os.Getenv("SOAK_KEEP") == "1" {
			t.Logf("soak work directory kept: %s (daemon.log, data/aicr.db, standin-*.txt, goroutines-*.txt)", root)
			return
		}
		os.RemoveAll(root)
	})
	return s
}

func (s *soak) run() {
	t := s.t
	s.install()
	s.startStandins()
	s.writeConfig()
	s.installHooks()
	if err := s.startDaemon(); err != nil {
		t.Fatal(err)
	}
	var err error
	if s.store, err = audit.OpenReadOnly(s.ctx, filepath.Join(s.data, "aicr.db")); err != nil {
		t.Fatalf("open the daemon's database read-only: %v", err)
	}
	go s.watchdog()

	s.startedAt = time.Now()
	phase := time.Duration(s.minutes) * time.Minute * 6 / 10
	total := commitsPerMin * s.minutes
	t.Logf("soak: %d min, %d commits over %s by %d committers, sandbox=%v, work dir %s", s.minutes, total, phase, committers, s.sandbox, s.root)
	var wg sync.WaitGroup
	for i, who := range []string{"alice", "bob", "carol", "dave"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.commitLoop(i, who, total/committers+boolInt(i < total%committers), phase)
		}()
	}
	faultsDone := make(chan struct{})
	go func() { defer close(faultsDone); s.faults(phase) }()
	wg.Wait()
	s.committingDone = time.Now()
	<-faultsDone
	s.drain(phase)
	s.finishedAt = time.Now()
	s.lastRSS = s.daemonRSS()
	s.stopDaemon(syscall.SIGTERM)
	s.check()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// install puts what ships into a prefix: aicr and aicr-notify side by
// side, as make build makes them, plus the p4 emulator standing in for p4.
func (s *soak) install() {
	t := s.t
	s.bin = filepath.Join(s.root, "prefix", "bin")
	for _, d := range []string{s.bin, filepath.Join(s.root, "etc"), filepath.Join(s.root, "home"), filepath.Join(s.root, "svn")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if dir := os.Getenv("SOAK_BIN_DIR"); dir != "" {
		for _, name := range []string{"aicr", "aicr-notify"} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatalf("SOAK_BIN_DIR: %v (run make build first)", err)
			}
			if err := os.WriteFile(filepath.Join(s.bin, name), b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		s.goBuild(filepath.Join(s.bin, "aicr"), "github.com/aicr-dev/aicr/cmd/aicr")
		s.goBuild(filepath.Join(s.bin, "aicr-notify"), "github.com/aicr-dev/aicr/cmd/aicr-notify")
	}
	s.goBuild(filepath.Join(s.root, "emu", "p4"), "github.com/aicr-dev/aicr/internal/p4emu/p4")
}

// goBuild builds pkg the way make build does (static, trimmed paths).
func (s *soak) goBuild(out, pkg string) {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		s.t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

func (s *soak) startStandins() {
	t := s.t
	s.slack = &slackAPI{token: "xoxb-soak-" + randToken(24)}
	hookPath := "/services/T0SOAK/B0SOAK/" + randToken(24)
	s.slackHook = &hookSink{path: hookPath}
	whPath := "/hooks/aicr/" + randToken(20)
	s.hook = &hookSink{path: whPath}
	muxA := http.NewServeMux()
	muxA.Handle("/api/", s.slack)
	muxA.Handle("/services/", s.slackHook)
	muxA.Handle("/hooks/", s.hook)
	s.hostA = startHost(t, "standin-a (slack, slack webhook, webhook)", muxA)

	s.feishu = imtest.NewFeishu(t, randToken(32), randToken(16))
	s.ding = imtest.NewDingTalk(t, randToken(32), "SEC"+randToken(32))
	s.wecom = imtest.NewWeCom(t, randToken(32))
	muxB := http.NewServeMux()
	muxB.Handle("/open-apis/", proxyTo(s.feishu.Server.URL))
	muxB.Handle("/robot/", proxyTo(s.ding.Server.URL))
	muxB.Handle("/cgi-bin/", proxyTo(s.wecom.Server.URL))
	s.hostB = startHost(t, "standin-b (feishu, dingtalk, wecom)", muxB)

	s.model = modelsim.StartFunc(t, s.modelAnswer)
	modelKey := "sk-soak-" + randToken(32)
	s.model.RequireKey(modelKey)

	s.listen = freeAddr(t)
	base := strings.Replace(s.hostB.URL(), "http://", "", 1)
	sec := map[string]string{
		"trigger-secret":  randToken(40),
		"slack-token":     s.slack.token,
		"slack-hook-url":  s.hostA.URL() + hookPath,
		"feishu-url":      "http://" + base + "/open-apis/bot/v2/hook/" + s.feishu.Token,
		"feishu-secret":   s.feishu.Secret,
		"dingtalk-url":    "http://" + base + "/robot/send?access_token=" + s.ding.Token,
		"dingtalk-secret": s.ding.Secret,
		"wecom-url":       "http://" + base + "/cgi-bin/webhook/send?key=" + s.wecom.Key,
		"webhook-url":     s.hostA.URL() + whPath,
		"webhook-secret":  randToken(32),
		"model-key":       modelKey,
	}
	for name, v := range sec {
		if err := os.WriteFile(filepath.Join(s.root, "etc", name), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The values to grep for: each secret, and the tokens inside URLs.
	for _, v := range []string{sec["trigger-secret"], s.slack.token, hookPath, s.feishu.Token, s.feishu.Secret, s.ding.Token,
		s.ding.Secret, s.wecom.Key, whPath, sec["webhook-secret"], modelKey} {
		s.secrets[strings.TrimPrefix(v, "/")] = "a configured secret"
	}
}

func (s *soak) writeConfig() {
	t := s.t
	p4 := filepath.Join(s.root, "p4bin")
	d := p4emu.Fixture()
	s.depotPath = filepath.Join(s.root, "depot.json")
	if err := d.Save(s.depotPath); err != nil {
		t.Fatal(err)
	}
	wrapper, err := p4emu.WriteWrapper(p4, filepath.Join(s.root, "emu", "p4"), s.depotPath, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"alpha", "beta"} {
		path := filepath.Join(s.root, "svn", name)
		run(t, "", nil, "svnadmin", "create", path)
		s.svnURL[name] = "file://" + path
		var dirs []string
		for _, who := range []string{"alice", "bob", "carol", "dave"} {
			dirs = append(dirs, s.svnURL[name]+"/u/"+who)
		}
		// Before the hook is installed: the layout is not reviewed.
		run(t, "", nil, "svn", append([]string{"mkdir", "--parents", "-m", "layout", "--username", "admin"}, dirs...)...)
	}
	channelPolicies := `
[[channel]]
name = "slack-bot"
kind = "slack"
token_file = "slack-token"
channel = "C0SOAK0001"
api_url = "%[1]s/api/"
min_severity = "low"
no_problems = "suppress"
on_error = "notify"

[[channel]]
name = "slack-hook"
kind = "slack"
webhook_url_file = "slack-hook-url"
min_severity = "high"
no_problems = "suppress"

[[channel]]
name = "feishu"
kind = "feishu"
webhook_url_file = "feishu-url"
secret_file = "feishu-secret"
min_severity = "medium"
no_problems = "suppress"

[[channel]]
name = "dingtalk"
kind = "dingtalk"
webhook_url_file = "dingtalk-url"
secret_file = "dingtalk-secret"
min_severity = "high"
no_problems = "suppress"

[[channel]]
name = "wecom"
kind = "wecom"
webhook_url_file = "wecom-url"
min_severity = "high"
no_problems = "suppress"

[[channel]]
name = "webhook"
kind = "webhook"
url_file = "webhook-url"
secret_file = "webhook-secret"
min_severity = "info"
no_problems = "publish"

[[channel]]
name = "file"
kind = "file"
path = "%[2]s"
min_severity = "info"
no_problems = "publish"
`
	chans := `channels = ["slack-bot", "slack-hook", "feishu", "dingtalk", "wecom", "webhook", "file"]`
	cfg := fmt.Sprintf(`# The soak's installation (im/internal/soak).
[daemon]
listen = %q
data_dir = %q
workers = 2
secret_file = "trigger-secret"
spool_drain_every = "@every 2s"
shutdown_grace = %q

[notify]
spool_dir = %q
timeout = "2s"

[agent]
kind = "llm"
timeout = "3m"

[agent.llm]
api = "openai-chat"
base_url = %q
model = "soak-coder"
api_key_file = "model-key"
max_turns = 6

[dispatch]
backoff = "1s"
max_backoff = "8s"
retry_every = "@every 2s"
timeout = "20s"
%s
[[repo]]
name = "alpha"
kind = "svn"
url = %q
local_path = %q
%s

[[repo]]
name = "beta"
kind = "svn"
url = %q
local_path = %q
%s

[[repo]]
name = "depot"
kind = "p4"
port = "ssl:p4.example.com:1666"
user = "aicr"
p4_path = %q
depot_paths = ["//depot/main/..."]
%s
`, s.listen, s.data, shutdownGrace.String(), filepath.Join(s.root, "spool"), s.model.URL, s.sandboxConfig(),
		s.svnURL["alpha"], filepath.Join(s.root, "svn", "alpha"), chans,
		s.svnURL["beta"], filepath.Join(s.root, "svn", "beta"), chans,
		wrapper, chans) + fmt.Sprintf(channelPolicies, s.hostA.URL(), filepath.Join(s.root, "reports.jsonl"))
	if err := os.WriteFile(s.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := s.aicr("config", "check", s.cfg); err != nil {
		t.Fatalf("aicr config check: %v\n%s", err, out)
	}
}

// sandboxConfig is the [sandbox] table with SOAK_SANDBOX=1: Podman, the
// image make image builds, egress to the model server only.
func (s *soak) sandboxConfig() string {
	if !s.sandbox {
		return ""
	}
	testimage.RequirePodman(s.t)
	conf := os.Getenv("CONTAINERS_CONF")
	if conf == "" {
		conf = testimage.ContainersConf(s.t)
	}
	return fmt.Sprintf(`
[sandbox]
kind = "podman"
network = "llm-only"

[sandbox.podman]
image = %q
runtime = "runc"
containers_conf = %q
`, testimage.Agent(s.t), conf)
}

func (s *soak) aicr(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(s.bin, "aicr"), args...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + filepath.Join(s.root, "home")}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// installHooks writes the svn hooks with aicr install svn-hook and takes
// the p4 trigger line aicr install p4-trigger prints.
func (s *soak) installHooks() {
	t := s.t
	for _, name := range []string{"alpha", "beta"} {
		if out, err := s.aicr("install", "svn-hook", "--repo", filepath.Join(s.root, "svn", name), "--config", s.cfg); err != nil {
			t.Fatalf("aicr install svn-hook %s: %v\n%s", name, err, out)
		}
	}
	cmd := exec.Command(filepath.Join(s.bin, "aicr"), "install", "p4-trigger", "--repo", "depot", "--config", s.cfg)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("aicr install p4-trigger: %v\n%s", err, stderr.String())
	}
	line := strings.SplitN(strings.TrimSpace(stdout.String()), "\n", 2)[0]
	i, j := strings.Index(line, `"`), strings.LastIndex(line, `"`)
	if i < 0 || j <= i || !strings.Contains(line, "change-commit") {
		t.Fatalf("aicr install p4-trigger printed no trigger line: %q", stdout.String())
	}
	s.p4Trigger = line[i+1 : j]
	t.Logf("p4 trigger: %s", s.p4Trigger)
}

// fireTrigger runs the trigger's command line as p4d would, with its
// %variables% expanded: bare environment, working directory /.
func (s *soak) fireTrigger(c *commit) {
	r := strings.NewReplacer("%quote%", `"`, "%change%", c.rev, "%user%", c.who, "%client%", c.who+"-ws",
		"%serverport%", "ssl:p4.example.com:1666")
	cmd := exec.Command("/bin/sh", "-c", r.Replace(s.p4Trigger))
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.commitErr(fmt.Sprintf("depot change %s: the trigger exited %v (a trigger must never fail a submit): %s", c.rev, err, out))
	}
}

func (s *soak) commitErr(msg string) {
	s.commitsMu.Lock()
	defer s.commitsMu.Unlock()
	s.commitErrs = append(s.commitErrs, msg)
}

// commitLoop is one committer: n commits spread over phase, to the three
// repos in turn, of every kind.
func (s *soak) commitLoop(idx int, who string, n int, phase time.Duration) {
	rng := rand.New(rand.NewPCG(uint64(idx+1), 22))
	wcs := map[string]string{}
	for _, repo := range []string{"alpha", "beta"} {
		wc := filepath.Join(s.root, "wc", who, repo)
		run(s.t, "", nil, "svn", "checkout", "-q", s.svnURL[repo]+"/u/"+who, wc)
		wcs[repo] = wc
	}
	gap := phase / time.Duration(n+1)
	for i := range n {
		if s.ctx.Err() != nil {
			return
		}
		repo := []string{"alpha", "beta", "depot"}[(i+idx)%3]
		c := &commit{repo: repo, who: who, id: fmt.Sprintf("%s-%s-%d", repo, who, i)}
		c.kind, c.model = pick(rng)
		files := s.content(c, i)
		msg := fmt.Sprintf("%s change %d by %s\n\nsoak-id=%s model=%s", c.kind, i, who, c.id, c.model)
		if c.kind == "cred" && i%3 == 0 {
			// A committer pasting the key into the message too.
			msg += "\nrotated the key " + c.cred
		}
		var err error
		if repo == "depot" {
			err = s.submitP4(c, msg, files)
		} else {
			err = s.commitSVN(c, wcs[repo], msg, files)
		}
		if err != nil {
			s.commitErr(fmt.Sprintf("%s by %s: %v", c.id, who, err))
		} else {
			s.commitsMu.Lock()
			s.commits = append(s.commits, c)
			s.commitsMu.Unlock()
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(gap):
		}
	}
}

// pick chooses a commit's kind and what the model does with it.
func pick(rng *rand.Rand) (kind, model string) {
	switch r := rng.IntN(100); {
	case r < 35:
		kind = "clean"
	case r < 60:
		kind = "problems"
	case r < 78:
		kind = "cred"
	case r < 90:
		kind = "big"
	default:
		kind = "wide"
	}
	switch r := rng.IntN(100); {
	case r < 64:
		model = "ok"
	case r < 76:
		model = "flaky" // a 503 first
	case r < 87:
		model = "empty" // an empty answer first
	default:
		model = "auth" // 401: the model pass fails for good
	}
	return kind, model
}

// content is the commit's files, relative to the committer's directory.
func (s *soak) content(c *commit, i int) map[string]string {
	files := map[string]string{}
	base := fmt.Sprintf("f%03d.go", i)
	switch c.kind {
	case "clean", "problems":
		files[base] = fmt.Sprintf("package soak\n\n// F%d is change %d.\nfunc F%d() int { return %d }\n", i, i, i, i)
	case "cred":
		c.cred = "AKIA" + strings.ToUpper(randToken(16))
		name := fmt.Sprintf("cred%03d.go", i)
		files[name] = fmt.Sprintf("package soak\n\nconst awsAccessKeyID = %q\n", c.cred)
		c.credFile = name
		s.commitsMu.Lock()
		s.secrets[c.cred] = "the credential committed in " + c.id
		s.commitsMu.Unlock()
	case "big":
		var b strings.Builder
		b.WriteString("package soak\n\n")
		for k := range 24 {
			fmt.Fprintf(&b, "<<<<<<< HEAD\nvar a%d = %d\n=======\nvar a%d = %d\n>>>>>>> branch-%d\n", k, k, k, k+1, k)
		}
		files[base] = b.String()
	case "wide":
		for k := range 200 {
			files[fmt.Sprintf("wide%03d/g%03d.go", i, k)] = fmt.Sprintf("package wide%03d\n\nconst G%d = %d\n", i, k, k)
		}
	}
	return files
}

func (s *soak) commitSVN(c *commit, wc, msg string, files map[string]string) error {
	for name, body := range files {
		p := filepath.Join(wc, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	if out, err := exec.Command("svn", "add", "-q", "--force", wc).CombinedOutput(); err != nil {
		return fmt.Errorf("svn add: %w: %s", err, out)
	}
	out, err := exec.Command("svn", "commit", "--non-interactive", "--username", c.who, "-m", msg, wc).CombinedOutput()
	if err != nil {
		return fmt.Errorf("svn commit: %w: %s", err, out)
	}
	m := regexp.MustCompile(`Committed revision (\d+)\.`).FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("svn commit printed no revision: %s", out)
	}
	c.rev, c.at = string(m[1]), time.Now()
	if strings.Contains(string(out), "Warning: post-commit hook failed") {
		s.commitErr(fmt.Sprintf("%s r%s: the post-commit hook failed: %s", c.repo, c.rev, out))
	}
	if c.credFile != "" {
		c.credFile = "u/" + c.who + "/" + c.credFile
	}
	return nil
}

// submitP4 submits to the emulator's depot (written whole, then renamed,
// so the daemon's p4 never reads half a file) and fires the trigger.
func (s *soak) submitP4(c *commit, msg string, files map[string]string) error {
	s.p4mu.Lock()
	d, err := p4emu.Load(s.depotPath)
	if err != nil {
		s.p4mu.Unlock()
		return err
	}
	ch := &p4emu.Change{User: c.who, Client: c.who + "-ws", Desc: msg + "\n"}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		ch.Files = append(ch.Files, &p4emu.File{Path: "//depot/main/u/" + c.who + "/" + name, Action: "add", Type: "text", Content: []byte(files[name])})
	}
	d.Submit(ch)
	tmp := s.depotPath + ".tmp"
	if err := d.Save(tmp); err == nil {
		err = os.Rename(tmp, s.depotPath)
	}
	s.p4mu.Unlock()
	if err != nil {
		return err
	}
	c.rev, c.at = strconv.Itoa(ch.Num), time.Now()
	if c.credFile != "" {
		c.credFile = "depot/main/u/" + c.who + "/" + c.credFile
	}
	s.fireTrigger(c)
	return nil
}

var (
	soakIDRE = regexp.MustCompile(`soak-id=(\S+) model=(\w+)`)
)

// modelAnswer is the model server's side: what it does depends on the
// commit (its message names a model behaviour), and failures come first.
func (s *soak) modelAnswer(r modelsim.Request) modelsim.Step {
	var text string
	for _, m := range r.Messages {
		if m.Role == "user" {
			text += m.Text
		}
	}
	m := soakIDRE.FindStringSubmatch(text)
	if m == nil {
		return modelsim.Step{Text: "Nothing to add."}
	}
	id, mode := m[1], m[2]
	s.modelMu.Lock()
	s.modelSeen[id]++
	n := s.modelSeen[id]
	s.modelMu.Unlock()
	switch {
	case mode == "auth":
		return modelsim.Step{Status: http.StatusUnauthorized, ErrorType: "invalid_api_key"}
	case mode == "flaky" && n == 1:
		return modelsim.Step{Status: http.StatusServiceUnavailable}
	case mode == "empty" && n == 1:
		return modelsim.Step{}
	}
	if r.ToolResults() > 0 {
		return modelsim.Step{Text: "Review complete."}
	}
	big := strings.Contains(text, "big change")
	if !strings.Contains(text, "problems change") && !big {
		return modelsim.Step{Text: "No problems found in this change."}
	}
	report := r.Offered("report_problem")
	summary := r.Offered("publish_summary")
	var file string
	if fm := regexp.MustCompile(`(\S*u/\w+/f\d{3}\.go)`).FindStringSubmatch(text); fm != nil {
		file = strings.TrimPrefix(fm[1], "//")
	}
	var calls []modelsim.ToolCall
	switch {
	case report == "" || file == "":
	case big:
		// Long findings in Chinese on top of the conflict markers, so the
		// report splits on every platform that gets it.
		for k := range 20 {
			msg := fmt.Sprintf("第 %d 个问题：合并冲突的两边给同一个变量赋了不同的值 ✅ %s", k, strings.Repeat("请确认保留哪一边，并删除另一边。", 12))
			calls = append(calls, modelsim.ToolCall{Name: report, Arguments: fmt.Sprintf(
				`{"file":%q,"line":%d,"severity":"medium","category":"merge","message":%q}`, file, 4+5*k, msg)})
		}
	default:
		calls = append(calls,
			modelsim.ToolCall{Name: report, Arguments: fmt.Sprintf(`{"file":%q,"line":3,"severity":"medium","category":"naming","message":"F returns a constant; name it for what it means."}`, file)},
			modelsim.ToolCall{Name: report, Arguments: fmt.Sprintf(`{"file":%q,"line":4,"severity":"low","category":"style","message":"Add a test for F."}`, file)})
	}
	if summary != "" {
		calls = append(calls, modelsim.ToolCall{Name: summary, Arguments: `{"title":"Two small things","markdown":"The change is small; see the two notes."}`})
	}
	return modelsim.Step{ToolCalls: calls, Usage: modelsim.Usage{Input: 1500, Output: 90}}
}

// startDaemon starts aicr daemon from the prefix, its output appended
// to daemon.log, and waits for /healthz. It runs on the faults goroutine
// too, so it returns its failure instead of ending the test.
func (s *soak) startDaemon() error {
	s.dmu.Lock()
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		s.dmu.Unlock()
		return err
	}
	s.starts++
	fmt.Fprintf(logf, "=== soak: daemon start %d at %s\n", s.starts, time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(filepath.Join(s.bin, "aicr"), "daemon", "--config", s.cfg)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + filepath.Join(s.root, "home")}
	if v := os.Getenv("CONTAINERS_CONF"); v != "" {
		cmd.Env = append(cmd.Env, "CONTAINERS_CONF="+v)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		s.dmu.Unlock()
		return fmt.Errorf("start the daemon: %w", err)
	}
	done := make(chan struct{})
	s.daemon, s.daemonDone, s.expectExit = cmd, done, false
	n := s.starts
	go func() {
		err := cmd.Wait()
		logf.Close()
		s.dmu.Lock()
		if !s.expectExit && s.daemon == cmd {
			s.daemonProblems = append(s.daemonProblems, fmt.Sprintf("daemon start %d exited on its own: %v (daemon.log)", n, err))
		}
		s.dmu.Unlock()
		close(done)
	}()
	s.dmu.Unlock()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(90 * time.Second)
	last := ""
	for {
		resp, err := client.Get("http://" + s.listen + "/healthz")
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
		} else {
			last = err.Error()
		}
		select {
		case <-done:
			return fmt.Errorf("daemon start %d: exited before /healthz answered 200 (last: %s); see %s", n, last, s.logPath)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("daemon start %d: /healthz did not answer 200 within 90s (last: %s); see %s", n, last, s.logPath)
		}
	}
}

// stopDaemon signals the daemon and waits for it; after SIGTERM it must
// exit within shutdown_grace (plus slack for a loaded machine).
func (s *soak) stopDaemon(sig syscall.Signal) {
	s.dmu.Lock()
	cmd, done := s.daemon, s.daemonDone
	if cmd == nil {
		s.dmu.Unlock()
		return
	}
	s.expectExit = true
	s.dmu.Unlock()
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(sig)
	limit := 30 * time.Second
	if sig == syscall.SIGTERM {
		limit = shutdownGrace + 20*time.Second
	}
	start := time.Now()
	select {
	case <-done:
		if sig == syscall.SIGTERM {
			s.event(fmt.Sprintf("SIGTERM: exited in %.1fs", time.Since(start).Seconds()))
		}
	case <-time.After(limit):
		s.dmu.Lock()
		s.daemonProblems = append(s.daemonProblems, fmt.Sprintf("daemon still running %s after %v (shutdown_grace %s); killed", limit, sig, shutdownGrace))
		s.dmu.Unlock()
		_ = cmd.Process.Kill()
		<-done
	}
}

func (s *soak) event(e string) {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	s.events = append(s.events, fmt.Sprintf("%5.0fs %s", time.Since(s.startedAt).Seconds(), e))
}

// sleep waits d, or less when the soak is ending.
func (s *soak) sleep(d time.Duration) {
	select {
	case <-s.ctx.Done():
	case <-time.After(d):
	}
}

func (s *soak) pauseWatch(d int) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	s.watchPaused += d
}

// faults runs the schedule while the committers commit: SIGKILL several
// times (one more every 3 minutes of a long soak), one SIGTERM and
// restart, and a 60-second outage of stand-in B.
func (s *soak) faults(phase time.Duration) {
	type fault struct {
		at   time.Duration
		kind string
	}
	plan := []fault{{phase * 15 / 100, "kill"}, {phase * 25 / 100, "outage"}, {phase * 40 / 100, "kill"},
		{phase * 55 / 100, "term"}, {phase * 75 / 100, "kill"}}
	for at := 3 * time.Minute; at < phase; at += 3 * time.Minute {
		plan = append(plan, fault{at + 20*time.Second, "kill"})
	}
	slices.SortFunc(plan, func(a, b fault) int { return int(a.at - b.at) })
	var outage sync.WaitGroup
	for _, f := range plan {
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(time.Until(s.startedAt.Add(f.at))):
		}
		switch f.kind {
		case "kill", "term":
			s.pauseWatch(1)
			sig := syscall.SIGKILL
			if f.kind == "term" {
				sig = syscall.SIGTERM
			}
			s.dmu.Lock()
			if sig == syscall.SIGKILL {
				s.kills = append(s.kills, time.Now())
			}
			s.dmu.Unlock()
			s.event(fmt.Sprintf("%s to the daemon", map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM"}[sig]))
			s.stopDaemon(sig)
			s.sleep(3 * time.Second) // hooks spool meanwhile
			// The watchdog watches the new daemon from its first moment: one
			// that hangs while starting is a stall like any other.
			s.pauseWatch(-1)
			if s.ctx.Err() == nil {
				s.event("daemon restarted")
				if err := s.startDaemon(); err != nil {
					s.event(err.Error())
					s.dmu.Lock()
					s.daemonProblems = append(s.daemonProblems, err.Error())
					s.dmu.Unlock()
				}
			}
		case "outage":
			outage.Add(1)
			go func() {
				defer outage.Done()
				s.event("stand-in B down: connection refused for 30s")
				s.hostB.setMode(s.t, "refuse")
				s.sleep(30 * time.Second)
				s.event("stand-in B answers 500 for 30s")
				s.hostB.setMode(s.t, "500")
				s.sleep(30 * time.Second)
				s.hostB.setMode(s.t, "")
				s.event("stand-in B back")
			}()
		}
	}
	outage.Wait()
}

// progress is what the watchdog watches: a signature that changes when
// anything moves, and a description of the work that is due now.
func (s *soak) progress() (sig string, pending string, err error) {
	ctx, cancel := context.WithTimeout(s.ctx, 20*time.Second)
	defer cancel()
	runs, err := s.store.ListRuns(ctx, audit.ListOptions{Limit: 1 << 20})
	if err != nil {
		return "", "", err
	}
	disps, err := s.store.ListDispatches(ctx, audit.DispatchFilter{Limit: 1 << 20})
	if err != nil {
		return "", "", err
	}
	now := time.Now()
	counts := map[string]int{}
	attempts := 0
	var due []string
	for _, r := range runs {
		counts["run "+string(r.Status)]++
		attempts += r.Attempts
		if r.Status == audit.RunRunning || (r.Status == audit.RunQueued && !r.NotBefore.After(now)) {
			due = append(due, fmt.Sprintf("run %d (%s r%s, %s)", r.ID, r.Repo, r.Revision, r.Status))
		}
	}
	for _, d := range disps {
		counts["dispatch "+string(d.Status)]++
		attempts += d.Attempts
		if d.Status == "pending" && !d.NextAttemptAt.After(now) {
			due = append(due, fmt.Sprintf("dispatch %d (run %d → %s)", d.ID, d.RunID, d.Channel))
		}
	}
	s.commitsMu.Lock()
	made := len(s.commits)
	s.commitsMu.Unlock()
	if len(runs) < made {
		due = append(due, fmt.Sprintf("%d commits without a run", made-len(runs)))
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&b, "%s=%d ", k, counts[k])
	}
	fmt.Fprintf(&b, "attempts=%d received=%d", attempts, s.receivedCount())
	if len(due) > 8 {
		due = append(due[:8], fmt.Sprintf("and %d more", len(due)-8))
	}
	return b.String(), strings.Join(due, ", "), nil
}

func (s *soak) receivedCount() int {
	return len(s.slack.Posts()) + len(s.slackHook.Received()) + len(s.hook.Received()) +
		len(s.feishu.Received()) + len(s.ding.Received()) + len(s.wecom.Received())
}

// watchdog: if nothing moves for 45s while work is due, the daemon gets
// SIGQUIT (Go prints every goroutine's stack), the dump is kept, and the
// soak fails.
func (s *soak) watchdog() {
	last, lastPending, lastMove := "", "", time.Now()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		s.watchMu.Lock()
		paused := s.watchPaused > 0
		s.watchMu.Unlock()
		sig, pending, err := s.progress()
		if err != nil {
			// A store that cannot be read is no progress; the work due is
			// what was due at the last reading.
			sig, pending = last, lastPending+" (store unreadable: "+err.Error()+")"
		}
		switch {
		case paused || pending == "":
			lastMove = time.Now()
		case sig != last:
			lastMove = time.Now()
		}
		last, lastPending = sig, pending
		if time.Since(lastMove) < stallLimit {
			continue
		}
		dump := s.quitDaemon()
		s.watchMu.Lock()
		s.watchdogFired = fmt.Sprintf("nothing moved for %s while work was due: %s (state: %s); goroutine dump: %s", stallLimit, pending, last, dump)
		s.watchMu.Unlock()
		s.cancel()
		return
	}
}

// quitDaemon sends SIGQUIT and saves the goroutine dump the Go runtime
// writes to stderr (the tail of daemon.log since the last start).
func (s *soak) quitDaemon() string {
	s.dmu.Lock()
	cmd, done, n := s.daemon, s.daemonDone, s.starts
	s.expectExit = true
	s.dmu.Unlock()
	if cmd == nil {
		return "(no daemon)"
	}
	_ = cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	b, _ := os.ReadFile(s.logPath)
	marker := fmt.Sprintf("=== soak: daemon start %d ", n)
	if i := bytes.LastIndex(b, []byte(marker)); i >= 0 {
		b = b[i:]
	}
	if i := bytes.Index(b, []byte("SIGQUIT")); i >= 0 {
		b = b[i:]
	}
	path := filepath.Join(s.root, fmt.Sprintf("goroutines-%d.txt", n))
	_ = os.WriteFile(path, b, 0o600)
	return path
}

// drain waits, after the last commit, until every commit has a finished
// run and no dispatch is pending, or the watchdog fires, or a generous
// deadline passes (the invariants then say what is left).
// It also ends when only retries far off are left and nothing changed for
// 3 minutes (reviews that fail again and again, such as every sandboxed
// one when the image cannot run a pass), so a broken build fails in
// minutes, not at the deadline.
func (s *soak) drain(phase time.Duration) {
	deadline := time.Now().Add(max(10*time.Minute, phase))
	last, since := "", time.Now()
	for time.Now().Before(deadline) && s.ctx.Err() == nil {
		if s.settled() {
			return
		}
		if sig, _, err := s.progress(); err == nil && sig != last {
			last, since = sig, time.Now()
		}
		if time.Since(since) > 3*time.Minute {
			s.event("drain: nothing changed for 3 minutes with work left")
			return
		}
		select {
		case <-s.ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	if s.ctx.Err() == nil {
		s.event("drain deadline passed with work left")
	}
}

func (s *soak) settled() bool {
	ctx, cancel := context.WithTimeout(s.ctx, 20*time.Second)
	defer cancel()
	runs, err := s.store.ListRuns(ctx, audit.ListOptions{Limit: 1 << 20})
	if err != nil {
		return false
	}
	s.commitsMu.Lock()
	made := len(s.commits)
	s.commitsMu.Unlock()
	final := 0
	for _, r := range runs {
		if r.Status != audit.RunQueued && r.Status != audit.RunRunning {
			final++
		}
	}
	if final < made || final < len(runs) {
		return false
	}
	disps, err := s.store.ListDispatches(ctx, audit.DispatchFilter{Limit: 1 << 20})
	if err != nil {
		return false
	}
	for _, d := range disps {
		if d.Status == "pending" || d.Status == "unknown" {
			return false
		}
	}
	return true
}

func (s *soak) daemonRSS() string {
	s.dmu.Lock()
	cmd := s.daemon
	s.dmu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return "n/a"
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		return "n/a (daemon not running)"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "n/a"
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func randToken(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

func freeAddr(t *testing.T) string {
	h := startHost(t, "port probe", http.NotFoundHandler())
	addr := h.addr
	h.setMode(t, "refuse")
	return addr
}
