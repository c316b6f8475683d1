package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/im"
)

// repeat = "mention" | "omit" | "full": [repo.channel_policy.NAME] over
// the [[channel]] over [policy] over the default, each checked with its
// line.
func TestRepeatPrecedence(t *testing.T) {
	src := strings.NewReplacer(
		"[policy]\n", "[policy]\nrepeat = \"omit\"\n",
		"  [repo.channel_policy.team]\n", "  [repo.channel_policy.team]\n  repeat = \"full\"\n",
		"name = \"audit\"\nkind = \"console\"\n", "name = \"audit\"\nkind = \"console\"\nrepeat = \"mention\"\n",
	).Replace(routingConfig)
	cfg, err := Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	main, _ := cfg.Repo("main")
	other, _ := cfg.Repo("other")
	for _, c := range []struct {
		repo    *Repo
		channel string
		want    im.RepeatPolicy
	}{
		{main, "team", im.RepeatFull},      // channel_policy
		{main, "audit", im.RepeatMention},  // [[channel]]
		{other, "team", im.RepeatOmit},     // [policy]
		{main, "docs-team", im.RepeatOmit}, // [policy]
	} {
		if got := cfg.RepeatFor(c.repo, c.channel); got != c.want {
			t.Errorf("%s/%s: %q, want %q", c.repo.Name, c.channel, got, c.want)
		}
	}
	if got := (&Config{}).RepeatFor(nil, "x"); got != im.RepeatMention {
		t.Errorf("default %q", got)
	}

	bad := strings.NewReplacer("repeat = \"full\"", "repeat = \"twice\"", "repeat = \"omit\"", "repeat = \"never\"",
		"repeat = \"mention\"", "repeat = \"Mention\"").Replace(src)
	_, err = Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(bad))
	lineOf := func(s string) int {
		for i, l := range strings.Split(bad, "\n") {
			if strings.Contains(l, s) {
				return i + 1
			}
		}
		return 0
	}
	for _, want := range []string{
		fmt.Sprintf(`aicr.toml:%d: policy.repeat: must be mention, omit or full, got "never"`, lineOf(`"never"`)),
		fmt.Sprintf(`aicr.toml:%d: repo[0].channel_policy.team.repeat: must be mention, omit or full, got "twice"`, lineOf(`"twice"`)),
		fmt.Sprintf(`aicr.toml:%d: channel[1].repeat: invalid value "Mention" (want mention, omit or full)`, lineOf(`"Mention"`)),
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}
