package e2e

// One repo read by a Chinese team on Feishu, DingTalk and WeCom and by an
// English one on Slack: the real daemon, the llm agent against the model
// stand-in, the platform stand-ins. The model is told (in its system
// prompt, as the stand-in received it) to write in Chinese, the three
// Chinese channels get every aicr word in Chinese, Slack keeps English.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/internal/modelsim"
)

const (
	zhMessage = "Name() 返回写死的服务名；调用方需要配置中的名字。"
	zhSummary = "Name() 忽略了配置。"
	// zhRule is what the protected rules say to a Chinese team's model.
	zhRule = "Language: the team reads Simplified Chinese (zh-CN). Write every message, suggestion, summary title and summary in Simplified Chinese (zh-CN)."
)

const languageChannels = `
[[channel]]
name = "feishu"
kind = "feishu"
webhook_url_file = "feishu-url"
secret_file = "feishu-secret"
language = "zh-CN"

[[channel]]
name = "dingtalk"
kind = "dingtalk"
webhook_url_file = "dingtalk-url"
secret_file = "dingtalk-secret"
language = "zh"

[[channel]]
name = "wecom"
kind = "wecom"
webhook_url_file = "wecom-url"
language = "zh_CN"

[[channel]]
name = "slack"
kind = "slack"
webhook_url_file = "slack-hook-url"
`

func TestChineseChannelsAndEnglishSlackOfOneRepo(t *testing.T) {
	e := newEnv(t, 1)
	feishu := imtest.NewFeishu(t, fxFeishuToken, fxFeishuSecret)
	ding := imtest.NewDingTalk(t, fxDingToken, fxDingSecret)
	wecom := imtest.NewWeCom(t, fxWeComKey)
	slackHook, hookSrv := newHookSink(t, fxSlackHookPath)
	for name, v := range map[string]string{"feishu-url": feishu.URL(), "feishu-secret": fxFeishuSecret, "dingtalk-url": ding.URL(),
		"dingtalk-secret": fxDingSecret, "wecom-url": wecom.URL(), "slack-hook-url": hookSrv.URL + fxSlackHookPath} {
		if err := os.WriteFile(filepath.Join(e.dir, name), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	// Three Chinese channels and two English ones (Slack, the file): the
	// model writes in the majority's Chinese.
	cfg := strings.Replace(string(raw), `channels = ["reports"]`, `channels = ["feishu", "dingtalk", "wecom", "slack", "reports"]`, 1)
	if err := os.WriteFile(e.config, []byte(cfg+languageChannels), 0o600); err != nil {
		t.Fatal(err)
	}

	report := fmt.Sprintf(`{"file":"src/config.go","line":7,"severity":"high","category":%q,"message":%q}`, modelCategory, zhMessage)
	told := func(r modelsim.Request) error {
		if !strings.Contains(r.System, zhRule) {
			return fmt.Errorf("the system prompt does not ask for Chinese:\n%s", r.System)
		}
		for _, m := range r.Messages {
			if strings.Contains(m.Text, "Simplified Chinese") {
				return fmt.Errorf("the language rule is in a %s message, not the system prompt", m.Role)
			}
		}
		return nil
	}
	sim := modelsim.Start(t,
		modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "aicr_report_problem", Arguments: report}}, Check: told},
		modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "aicr_publish_summary", Arguments: fmt.Sprintf(`{"title":"结论","markdown":%q}`, zhSummary)}}, Check: told},
	)
	sim.RequireKey(e2eModelKey)
	useLLM(t, e, modelsim.APIOpenAIChat, sim)
	if out, err := exec.Command(aicrBin, "config", "check", e.config).CombinedOutput(); err != nil {
		t.Fatalf("aicr config check: %v\n%s", err, out)
	}
	e.startDaemon()
	e.commit("wire the production account", map[string]string{"src/config.go": plantedFile})
	e.waitFinished(e.store(), 1, 120*time.Second)
	e.waitReports(60*time.Second, atLeast(1))

	deadline := time.Now().Add(60 * time.Second)
	for len(feishu.Received()) == 0 || len(ding.Received()) == 0 || len(wecom.Received()) == 0 || len(slackHook.Received()) == 0 {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(e.daemonLog)
			t.Fatalf("not every channel got the report: feishu %d, dingtalk %d, wecom %d, slack %d\n%s",
				len(feishu.Received()), len(ding.Received()), len(wecom.Received()), len(slackHook.Received()), log)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := sim.Err(); err != nil {
		t.Fatalf("model server: %v", err)
	}
	if n := len(sim.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2: one review in one language for every channel", n)
	}

	bodies := map[string]string{
		"feishu":   feishu.Received()[0].Card.Header.Title.Content + "\n" + feishu.Received()[0].Markdown(),
		"dingtalk": ding.Received()[0].Markdown.Title + "\n" + ding.Received()[0].Markdown.Text,
		"wecom":    wecom.Received()[0].Markdown.Content,
	}
	// aicr's frame in Chinese: the title, the counts with the severity,
	// the summary heading the model wrote, the footer; the model's text
	// as it wrote it; none of aicr's English words.
	english := regexp.MustCompile(`\b(Problems|Suggestion|View change|Reviewed by|aicr review|high|No problems|run \d|Secret-scanner|Committed secrets)\b`)
	for name, body := range bodies {
		// The builtin rules' credential findings are the review's, in
		// its language too.
		for _, want := range []string{"aicr 审查：main r1", "严重 1 个", "由 llm（scripted-coder）审查", zhMessage, zhSummary, "密钥扫描规则"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, body)
			}
		}
		if w := english.FindString(body); w != "" {
			t.Errorf("%s says %q in English:\n%s", name, w, body)
		}
	}
	slack := string(slackHook.Received()[0].Body)
	for _, want := range []string{"aicr review: main r1", "Problems:", "high", "Reviewed by llm (scripted-coder)", zhMessage} {
		if !strings.Contains(slack, want) {
			t.Errorf("slack lacks %q:\n%s", want, slack)
		}
	}
	if strings.Contains(slack, "审查") {
		t.Errorf("slack has Chinese frame words:\n%s", slack)
	}
	e.stopDaemon()
	assertNoKey(t, e.dir)
}
