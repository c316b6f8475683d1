package e2e

// Findings across commits (issue 24), end to end: on a real svnadmin
// repository with the installed hook and on the p4 emulator, a real
// `aicr daemon` reviewing with the builtin agent and posting to every
// channel kind on stand-ins that speak each platform's protocol (Slack's
// Web API and Socket Mode, Slack and generic webhooks, Feishu, DingTalk,
// WeCom, the file channel). Four changes walk one finding through its
// life: r1 reports three findings in full everywhere; r2 touches the same
// lines without fixing them, and no channel gets them in full again; r3
// fixes one, and the Slack message that announced it is edited with a
// reply in its thread while every other channel gets the resolution once;
// a false positive dismissed with a Slack button and another from the
// signed web link are not reported in r4, and the CLI lists them with
// their actors; a reopen works; the digest arrives with its figures. The
// daemon is SIGKILLed between the steps, once with a resolution still
// pending, and every invariant holds after the restart.

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/internal/p4emu"
	"github.com/aicr-dev/aicr/internal/svntest"
)

// The stand-ins' credentials; none may appear in anything aicr writes.
const (
	fxSlackBotToken = "xoxb-e2e-findings-0001-bot"
	fxSlackAppToken = "xapp-1-A0E2E-findings-app-token"
	fxSlackChannel  = "C0E2EFIND1"
	fxFeishuToken   = "feishu-e2e-findings-hook"
	fxFeishuSecret  = "feishu-e2e-findings-secret"
	fxDingToken     = "dingtalk-e2e-findings-token"
	fxDingSecret    = "SECdingtalk-e2e-findings-secret"
	fxWeComKey      = "wecom-e2e-findings-key"
	fxWebhookSecret = "webhook-e2e-findings-secret"
	fxWebToken      = "web-e2e-findings-token-51f0c2a9"
	fxSlackHookPath = "/services/T0E2E/B0E2E/e2efindingshook"
	fxWebhookPath   = "/hooks/e2e-findings"
)

// The scenario's files, relative to the driver's root, and their
// contents at each step. The builtin agent flags a credential on an
// added line, so a step that touches a line (even only its trailing
// blanks) has it reviewed again.
const (
	fxConfig  = "config.go"          // finding A: fixed in r3
	fxFixture = "testdata/login.txt" // finding B: a false positive, dismissed with a Slack button
	fxSeed    = "tools/seed.go"      // finding C: won't fix, dismissed from the web link, then reopened
	fxDeploy  = "tools/deploy.go"    // finding D: new in r4

	// r1's lines carry trailing blanks (a sloppy editor); the later
	// clean-ups strip them without fixing anything.
	fxConfigR1 = "package config\n\nconst Region = \"eu-west-1\"\nconst AccessKey = \"AKIAQWERTYUIOPASDFGH\"  \n\nfunc Name() string { return \"svc\" }\n"
	// r2 strips the trailing blanks and adds a function: the key is
	// still there, two lines above the new code.
	fxConfigR2 = "package config\n\nconst Region = \"eu-west-1\"\nconst AccessKey = \"AKIAQWERTYUIOPASDFGH\"\n\nfunc Name() string { return \"svc\" }\n\nfunc Zone() string { return Region + \"a\" }\n"
	// r3 reads the key from the environment.
	fxConfigR3 = "package config\n\nimport \"os\"\n\nconst Region = \"eu-west-1\"\n\n// AccessKey comes from the environment, never from the source.\nvar AccessKey = os.Getenv(\"AWS_ACCESS_KEY_ID\")\n\nfunc Name() string { return \"svc\" }\n\nfunc Zone() string { return Region + \"a\" }\n"

	fxFixtureR1 = "# Fixture of the login tests: a throwaway account on the test server.\nuser = \"qa\"\npassword = \"hunter22-real\" \n"
	fxFixtureR4 = "# Fixture of the login tests: a throwaway account on the test server.\nuser = \"qa\"\npassword = \"hunter22-real\"\n"
	fxSeedR1    = "package tools\n\n// Seed data of the local demo database.\nvar password = \"s3cr3t-Prod-Value\"\t\n"
	fxSeedR4    = "package tools\n\n// Seed data of the local demo database.\nvar password = \"s3cr3t-Prod-Value\"\n"
	fxDeployR4  = "package tools\n\n// DeployKey signs the release uploads.\nconst DeployKey = \"AKIAZXCVBNMASDFGHJKL\"\n"

	// fxSuggestion is the builtin rule's suggestion: a problem shown in
	// full carries it, a repeat line does not.
	fxSuggestion = "rotate it"
)

// fxSecrets are the planted credentials: they must never reach a channel.
var fxSecrets = []string{"AKIAQWERTYUIOPASDFGH", "hunter22-real", "s3cr3t-Prod-Value", "AKIAZXCVBNMASDFGHJKL"}

// vcsDriver commits the scenario's files to one VCS.
type vcsDriver struct {
	name string
	// root is the path findings name a scenario file under.
	root string
	// commit records files as author's change and returns its revision.
	commit func(author, msg string, files map[string]string) string
	// label is how reports name a revision ("r3", "change 9").
	label func(rev string) string
}

// fixture is one installation for the scenario: the daemon, its config,
// and the stand-ins of every channel kind.
type fixture struct {
	*env
	vcs        vcsDriver
	repo       string
	slack      *slackAPI
	socket     *slackSocket
	slackHook  *hookSink
	feishu     *imtest.Feishu
	ding       *imtest.DingTalk
	wecom      *imtest.WeCom
	webhook    *hookSink
	webAddr    string
	digestPath string
	db         *sql.DB
	// toldNoDigest: the missing structured digest was reported once.
	toldNoDigest bool
}

func TestFindingsAcrossCommitsSVN(t *testing.T) {
	e := newEnv(t, 1)
	drv := vcsDriver{name: "svn", root: "src/", label: func(rev string) string { return "r" + rev }}
	drv.commit = func(author, msg string, files map[string]string) string {
		return svnCommitAs(t, e, author, msg, files)
	}
	f := newFixture(t, e, "main", drv)
	f.run(t)
}

func TestFindingsAcrossCommitsP4(t *testing.T) {
	e := newP4Env(t)
	depot := os.Getenv(p4emu.EnvDepot)
	drv := vcsDriver{name: "p4", root: "depot/main/app/", label: func(rev string) string { return "change " + rev }}
	added := map[string]bool{}
	drv.commit = func(author, msg string, files map[string]string) string {
		return p4SubmitAs(t, e, depot, added, author, msg, files)
	}
	f := newFixture(t, e, "depot", drv)
	f.run(t)
}

// svnCommitAs commits files to e's working copy as author and returns
// the new revision.
func svnCommitAs(t *testing.T, e *env, author, msg string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(e.wc, "src", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svntest.Run(t, e.wc, "svn", "add", "-q", "--force", ".")
	svntest.Run(t, e.wc, "svn", "commit", "-q", "-m", msg, "--username", author)
	out, err := exec.Command("svnlook", "youngest", e.repos).Output()
	if err != nil {
		t.Fatalf("svnlook youngest: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// p4SubmitAs submits files under //depot/main/app/ to the emulator's
// depot as author (an edit of the files in added, an add of the others),
// then runs the change-commit trigger as p4d would.
func p4SubmitAs(t *testing.T, e *env, depotPath string, added map[string]bool, author, msg string, files map[string]string) string {
	t.Helper()
	d, err := p4emu.Load(depotPath)
	if err != nil {
		t.Fatal(err)
	}
	c := &p4emu.Change{User: author, Client: author + "-ws", Desc: msg + "\n"}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		path := "//depot/main/app/" + name
		action := "add"
		if added[path] {
			action = "edit"
		}
		added[path] = true
		c.Files = append(c.Files, &p4emu.File{Path: path, Action: action, Type: "text", Content: []byte(files[name])})
	}
	c = d.Submit(c)
	if err := d.Save(depotPath); err != nil {
		t.Fatal(err)
	}
	change := fmt.Sprint(c.Num)
	cmd := exec.Command(aicrBin, "notify", "p4", "--config", e.config, "--repo", "depot",
		"--change", change, "--user", author, "--client", author+"-ws", "--serverport", "ssl:p4.example.com:1666")
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("aicr notify p4: %v, output %q (want exit 0 and silence)", err, out)
	}
	return change
}

// newFixture starts the stand-ins and rewrites e's config: every channel
// kind, each with its repeat policy, the web page, a digest every minute,
// quick delivery retries.
func newFixture(t *testing.T, e *env, repo string, drv vcsDriver) *fixture {
	t.Helper()
	f := &fixture{env: e, vcs: drv, repo: repo, webAddr: freeAddr(t), digestPath: filepath.Join(e.dir, "digests.jsonl")}
	slack, _ := newSlackAPI(t, fxSlackBotToken)
	slackHook, hookSrv := newHookSink(t, fxSlackHookPath)
	webhook, webhookSrv := newHookSink(t, fxWebhookPath)
	f.slack, f.slackHook, f.webhook = slack, slackHook, webhook
	f.socket = newSlackSocket(t, f.slack, fxSlackAppToken, fxSlackBotToken)
	hookURL, webhookURL := hookSrv.URL+fxSlackHookPath, webhookSrv.URL+fxWebhookPath
	f.feishu = imtest.NewFeishu(t, fxFeishuToken, fxFeishuSecret)
	f.ding = imtest.NewDingTalk(t, fxDingToken, fxDingSecret)
	f.wecom = imtest.NewWeCom(t, fxWeComKey)
	secrets := map[string]string{
		"slack-token": fxSlackBotToken, "slack-app-token": fxSlackAppToken, "slack-hook-url": hookURL,
		"feishu-url": f.feishu.URL(), "feishu-secret": fxFeishuSecret, "dingtalk-url": f.ding.URL(),
		"dingtalk-secret": fxDingSecret, "wecom-url": f.wecom.URL(), "webhook-url": webhookURL,
		"webhook-secret": fxWebhookSecret, "web-token": fxWebToken,
	}
	for name, v := range secrets {
		if err := os.WriteFile(filepath.Join(e.dir, name), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(raw), `channels = ["reports"]`,
		`channels = ["slack-bot", "slack-hook", "feishu", "dingtalk", "wecom", "webhook", "reports", "archive", "digest"]`, 1)
	cfg += fmt.Sprintf(fxChannels, f.socket.APIURL(), f.webAddr)
	if err := os.WriteFile(e.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(aicrBin, "config", "check", e.config).CombinedOutput(); err != nil {
		t.Fatalf("aicr config check: %v\n%s", err, out)
	}
	return f
}

// fxChannels are the channels of the scenario: repeat = "mention" (the
// default) on most, "omit" with no_problems = "suppress" on two (they get
// nothing for a review that only saw known findings), "full" on the
// archive, and a digest-only file channel.
const fxChannels = `
[dispatch]
backoff = "1s"
max_backoff = "2s"
retry_every = "@every 1s"

[web]
listen = %[2]q
base_url = "http://%[2]s"
auth = "token"
token_file = "web-token"

[[digest]]
name = "team"
channel = "digest"
every = "* * * * *"

[[channel]]
name = "slack-bot"
kind = "slack"
token_file = "slack-token"
app_token_file = "slack-app-token"
channel = "C0E2EFIND1"
api_url = %[1]q
no_problems = "publish"

[[channel]]
name = "slack-hook"
kind = "slack"
webhook_url_file = "slack-hook-url"
repeat = "omit"
no_problems = "suppress"

[[channel]]
name = "feishu"
kind = "feishu"
webhook_url_file = "feishu-url"
secret_file = "feishu-secret"
repeat = "mention"
no_problems = "publish"

[[channel]]
name = "dingtalk"
kind = "dingtalk"
webhook_url_file = "dingtalk-url"
secret_file = "dingtalk-secret"
repeat = "omit"
no_problems = "suppress"

[[channel]]
name = "wecom"
kind = "wecom"
webhook_url_file = "wecom-url"
no_problems = "publish"

[[channel]]
name = "webhook"
kind = "webhook"
url_file = "webhook-url"
secret_file = "webhook-secret"
repeat = "mention"
no_problems = "publish"

[[channel]]
name = "archive"
kind = "file"
path = "archive.jsonl"
repeat = "full"
no_problems = "publish"

[[channel]]
name = "digest"
kind = "file"
path = "digests.jsonl"
mode = "digest"
`
