package channels

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/internal/imtest"
)

// buildFromTOML builds one channel the way the daemon does: the common
// keys and the kind's keys decoded from the same table, then Build.
func buildFromTOML(t *testing.T, dir, doc string) (im.Channel, error) {
	t.Helper()
	var common im.ChannelConfig
	if _, err := toml.Decode(doc, &common); err != nil {
		t.Fatal(err)
	}
	cfg := Kinds()[common.Kind].NewConfig()
	if _, err := toml.Decode(doc, cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return cfg.Build(common, im.Deps{BaseDir: dir})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Issue 10 #14: the custom-bot kinds read their webhook URL and secret
// once, at Build. A missing secret file stopped the daemon from starting,
// and after fixing a wrong secret every retry kept failing until a
// restart. Now both are read at every Send.
func TestBotsReadSecretsAtSend(t *testing.T) {
	const right, wrong = "sec-right-7c1d2e3f", "sec-wrong-0a9b8c7d"
	cases := []struct {
		kind   string
		signs  bool
		server func(t *testing.T) (url string, received func() int)
	}{
		{"feishu", true, func(t *testing.T) (string, func() int) {
			s := imtest.NewFeishu(t, "tok-feishu-1a2b3c4d", right)
			return s.URL(), func() int { return len(s.Received()) }
		}},
		{"dingtalk", true, func(t *testing.T) (string, func() int) {
			s := imtest.NewDingTalk(t, "tok-ding-5e6f7a8b", right)
			return s.URL(), func() int { return len(s.Received()) }
		}},
		{"wecom", false, func(t *testing.T) (string, func() int) {
			s := imtest.NewWeCom(t, "key-wecom-9c0d1e2f")
			return s.URL(), func() int { return len(s.Received()) }
		}},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			dir := t.TempDir()
			hookURL, received := c.server(t)
			doc := "name = \"team\"\nkind = \"" + c.kind + "\"\nwebhook_url_file = \"hook.url\"\n"
			if c.signs {
				doc += "secret_file = \"bot.secret\"\n"
			}
			// Neither file exists yet: building (the daemon's start) must
			// still succeed.
			ch, err := buildFromTOML(t, dir, doc)
			if err != nil {
				t.Fatalf("Build with the secret files missing: %v", err)
			}
			leaks := []string{right, wrong, hookURL, "tok-feishu-1a2b3c4d", "tok-ding-5e6f7a8b", "key-wecom-9c0d1e2f"}

			rec, err := ch.Send(context.Background(), imtest.Message())
			assertPermanentSecretError(t, err, filepath.Join(dir, "hook.url"))
			imtest.AssertSendLeaksNothing(t, rec, err, leaks...)

			writeFile(t, filepath.Join(dir, "hook.url"), hookURL)
			if c.signs {
				writeFile(t, filepath.Join(dir, "bot.secret"), wrong)
				rec, err = ch.Send(context.Background(), imtest.Message())
				if retry, _ := im.IsRetryable(err); err == nil || retry {
					t.Fatalf("wrong secret: err = %v, want a permanent failure", err)
				}
				imtest.AssertSendLeaksNothing(t, rec, err, leaks...)
				writeFile(t, filepath.Join(dir, "bot.secret"), right)
			}
			// The operator fixed the files: the same channel, no restart.
			rec, err = ch.Send(context.Background(), imtest.Message())
			if err != nil {
				t.Fatalf("Send after fixing the files: %v", err)
			}
			if received() != 1 {
				t.Fatalf("platform received %d messages, want 1", received())
			}
			imtest.AssertSendLeaksNothing(t, rec, err, leaks...)
		})
	}
}

func assertPermanentSecretError(t *testing.T, err error, path string) {
	t.Helper()
	var se *im.SendError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want *im.SendError", err)
	}
	if se.Retryable || se.Reason != im.ReasonAuth {
		t.Fatalf("err = %v (retryable %v), want a permanent auth failure", err, se.Retryable)
	}
	for _, want := range []string{"webhook_url", path, "aicr dispatch retry"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %q, want it to name %q", err, want)
		}
	}
}

// Issue 10 #14, the retry half on its own: the files exist at start but
// the secret is wrong; after the operator fixes the file, the next send
// of the same channel (a `dispatch retry`, no restart) is signed with the
// new secret.
func TestFixedSecretFileTakesEffectWithoutRestart(t *testing.T) {
	const right, wrong = "sec-right-3e4f5a6b", "sec-wrong-7c8d9e0f"
	for _, kind := range []string{"feishu", "dingtalk"} {
		t.Run(kind, func(t *testing.T) {
			var hookURL string
			var received func() int
			if kind == "feishu" {
				s := imtest.NewFeishu(t, "tok-feishu-2b3c4d5e", right)
				hookURL, received = s.URL(), func() int { return len(s.Received()) }
			} else {
				s := imtest.NewDingTalk(t, "tok-ding-6f7a8b9c", right)
				hookURL, received = s.URL(), func() int { return len(s.Received()) }
			}
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "hook.url"), hookURL)
			writeFile(t, filepath.Join(dir, "bot.secret"), wrong)
			ch, err := buildFromTOML(t, dir, "name = \"team\"\nkind = \""+kind+"\"\n"+
				"webhook_url_file = \"hook.url\"\nsecret_file = \"bot.secret\"\n")
			if err != nil {
				t.Fatal(err)
			}
			rec, err := ch.Send(context.Background(), imtest.Message())
			if retry, _ := im.IsRetryable(err); err == nil || retry {
				t.Fatalf("wrong secret: err = %v, want a permanent failure", err)
			}
			imtest.AssertSendLeaksNothing(t, rec, err, right, wrong, hookURL)
			writeFile(t, filepath.Join(dir, "bot.secret"), right)
			rec, err = ch.Send(context.Background(), imtest.Message())
			if err != nil || received() != 1 {
				t.Fatalf("after fixing the secret file: %v (%d received)", err, received())
			}
			imtest.AssertSendLeaksNothing(t, rec, err, right, wrong, hookURL)
		})
	}
}
