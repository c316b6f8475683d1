package config

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
)

const routingConfig = `[daemon]
data_dir = "data"
secret_env = "AICR_TEST_SECRET"

[policy]
no_problems = "publish_if_summary"
min_severity = "low"

[[user]]
vcs_user = "alice"
email = "alice@example.com"
slack_id = "U0ALICE"

[[repo]]
name = "main"
kind = "svn"
url = "file:///srv/svn/main"
channels = ["team", "audit"]
min_severity = "medium"

  [repo.channel_policy.team]
  no_problems = "suppress"

  [[repo.route]]
  paths = ["docs/**"]
  channels = ["docs-team"]

[[repo]]
name = "other"
kind = "svn"
url = "file:///srv/svn/other"
channels = ["team"]

[[channel]]
name = "team"
kind = "console"
min_severity = "high"

[[channel]]
name = "audit"
kind = "console"

[[channel]]
name = "docs-team"
kind = "console"
no_problems = "publish"
on_error = "notify"
`

func TestPolicyPrecedence(t *testing.T) {
	cfg, err := Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(routingConfig))
	if err != nil {
		t.Fatal(err)
	}
	main, _ := cfg.Repo("main")
	other, _ := cfg.Repo("other")
	cases := []struct {
		repo    *Repo
		channel string
		want    im.Policy
		why     string
	}{
		{main, "team", im.Policy{NoProblems: "suppress", MinSeverity: "high"}, "channel in repo > channel > repo"},
		{main, "audit", im.Policy{NoProblems: "publish_if_summary", MinSeverity: "medium"}, "repo > global"},
		{main, "docs-team", im.Policy{NoProblems: "publish", MinSeverity: "medium"}, "channel > repo per key"},
		{other, "team", im.Policy{NoProblems: "publish_if_summary", MinSeverity: "high"}, "channel > global"},
		{nil, "nowhere", im.Policy{NoProblems: "publish_if_summary", MinSeverity: review.SeverityLow}, "global"},
	}
	for _, c := range cases {
		if got := cfg.PolicyFor(c.repo, c.channel); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.why, got, c.want)
		}
	}
	if got := cfg.ChannelsFor(main, []string{"src/a.go"}); fmt.Sprint(got) != "[team audit]" {
		t.Errorf("no route: %v", got)
	}
	if got := cfg.ChannelsFor(main, []string{"src/a.go", "docs/guide/intro.md"}); fmt.Sprint(got) != "[team audit docs-team]" {
		t.Errorf("docs route: %v", got)
	}
	if u := cfg.User("alice"); u == nil || u.SlackID != "U0ALICE" || cfg.User("bob") != nil {
		t.Errorf("users: %+v", u)
	}
	if ch, _ := cfg.Channel("docs-team"); ch.OnError != im.OnErrorNotify {
		t.Errorf("on_error: %q", ch.OnError)
	}
	if cfg.Dispatch.GiveUpAfter != 24*time.Hour || cfg.Dispatch.MaxAttempts != 0 || cfg.Dispatch.Timeout != 30*time.Second || cfg.Dispatch.RetryEvery == "" {
		t.Errorf("dispatch defaults: %+v", cfg.Dispatch)
	}
}

func TestRoutingErrorsNameTheLine(t *testing.T) {
	bad := strings.NewReplacer(
		`channels = ["docs-team"]`, `channels = ["nobody"]`,
		`[repo.channel_policy.team]`, `[repo.channel_policy.ghost]`,
		`on_error = "notify"`, `on_error = "shout"`,
		`min_severity = "low"`, `min_severity = "severe"`,
	).Replace(routingConfig)
	_, err := Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(bad))
	if err == nil {
		t.Fatal("bad routing accepted")
	}
	lineOf := func(s string) int {
		for i, l := range strings.Split(bad, "\n") {
			if strings.Contains(l, s) {
				return i + 1
			}
		}
		return 0
	}
	for _, want := range []string{
		fmt.Sprintf(`aicr.toml:%d: repo[0].route[0].channels: names channel "nobody", which no [[channel]] defines`, lineOf(`["nobody"]`)),
		fmt.Sprintf(`aicr.toml:%d: repo[0].channel_policy.ghost: names channel "ghost", which no [[channel]] defines`, lineOf(`channel_policy.ghost`)),
		fmt.Sprintf(`aicr.toml:%d: policy.min_severity: must be info, low, medium, high or critical, got "severe"`, lineOf(`"severe"`)),
		fmt.Sprintf(`aicr.toml:%d: channel[2].on_error: invalid value "shout" (want notify or suppress)`, lineOf(`"shout"`)),
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}
