package config

import (
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/im"
)

const languageBase = `
[daemon]
secret_env = "X"
%s
[[repo]]
name = "main"
kind = "svn"
url = "file:///x"
channels = ["feishu", "dingtalk", "slack"]
[[repo]]
name = "tools"
kind = "svn"
url = "file:///y"
channels = ["slack", "feishu"]
[[channel]]
name = "feishu"
kind = "console"
language = "zh_CN"
[[channel]]
name = "dingtalk"
kind = "console"
language = "zh"
[[channel]]
name = "slack"
kind = "console"
%s
`

func loadLanguages(t *testing.T, report, slack string) (*Config, error) {
	t.Helper()
	return Load(writeTemp(t, strings.Replace(strings.Replace(languageBase, "%s", report, 1), "%s", slack, 1)))
}

// Each channel's reports are in its language, defaulting to [report]'s,
// which defaults to English; the spellings people type for Chinese all
// mean zh-CN.
func TestChannelLanguages(t *testing.T) {
	cfg, err := loadLanguages(t, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]im.Language{"feishu": im.LangChinese, "dingtalk": im.LangChinese, "slack": im.LangEnglish} {
		if got := cfg.ChannelLanguage(name); got != want {
			t.Errorf("ChannelLanguage(%s) = %q, want %q", name, got, want)
		}
	}
	cfg, err = loadLanguages(t, "[report]\nlanguage = \"zh-cn\"", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ChannelLanguage("slack"); got != im.LangChinese {
		t.Errorf("slack without a language = %q, want [report]'s zh-CN", got)
	}
	cfg, err = loadLanguages(t, "[report]\nlanguage = \"zh-CN\"", `language = "en"`)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ChannelLanguage("slack"); got != im.LangEnglish {
		t.Errorf("slack with language = en: %q", got)
	}
}

// The model writes in the language most of the repo's channels read
// (ties go to English), unless [agent] output_language says otherwise.
func TestOutputLanguage(t *testing.T) {
	cfg, err := loadLanguages(t, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.OutputLanguage("main"); got != im.LangChinese {
		t.Errorf("main (2 zh, 1 en) = %q, want zh-CN", got)
	}
	if got := cfg.OutputLanguage("tools"); got != im.LangEnglish {
		t.Errorf("tools (1 zh, 1 en) = %q, want the tie's en", got)
	}
	cfg, err = loadLanguages(t, "[agent]\nkind = \"builtin\"\noutput_language = \"en\"", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.OutputLanguage("main"); got != im.LangEnglish {
		t.Errorf("output_language = en: %q", got)
	}
}

// A language aicr does not write is an error naming the key, where it
// is and the values it takes.
func TestBadLanguages(t *testing.T) {
	_, err := loadLanguages(t, "[report]\nlanguage = \"fr\"\n[agent]\nkind = \"builtin\"\noutput_language = \"de\"", `language = "zh-TW"`)
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{
		`:5: report.language: unknown language "fr": use "en" or "zh-CN"`,
		`:8: agent.output_language: unknown language "de": use "en" or "zh-CN"`,
		`channel[2].language: invalid value "zh-TW" (want "en" or "zh-CN")`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// The web page is in [web] language, else [report]'s; a bad one is an
// error naming web.language.
func TestWebLanguage(t *testing.T) {
	for _, c := range []struct {
		tables string
		want   im.Language
	}{
		{"", im.LangEnglish},
		{"[report]\nlanguage = \"zh-CN\"", im.LangChinese},
		{"[report]\nlanguage = \"zh-CN\"\n[web]\nlanguage = \"en\"", im.LangEnglish},
		{"[web]\nlanguage = \"zh_cn\"", im.LangChinese},
	} {
		cfg, err := loadLanguages(t, c.tables, "")
		if err != nil {
			t.Fatalf("%q: %v", c.tables, err)
		}
		if cfg.Web.Language != c.want {
			t.Errorf("%q: web language %q, want %q", c.tables, cfg.Web.Language, c.want)
		}
	}
	_, err := loadLanguages(t, "[web]\nlanguage = \"fr\"", "")
	if err == nil || !strings.Contains(err.Error(), `web.language: unknown language "fr": use "en" or "zh-CN"`) {
		t.Errorf("bad [web] language: %v", err)
	}
}
