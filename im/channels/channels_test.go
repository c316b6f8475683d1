package channels

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/secret"
)

func TestKinds(t *testing.T) {
	kinds := Kinds()
	for _, name := range []string{"console", "file"} {
		k, ok := kinds[name]
		if !ok || k.Name != name || k.NewConfig == nil {
			t.Fatalf("kind %q: %+v, %v", name, k, ok)
		}
	}
	// Zero-size configs may share an address, so check sharing on file.
	a, b := kinds["file"].NewConfig(), kinds["file"].NewConfig()
	if a == b {
		t.Error("file: NewConfig returns a shared value")
	}
	delete(kinds, "console")
	if _, ok := Kinds()["console"]; !ok {
		t.Fatal("Kinds returns a shared map")
	}
}

// This is the decoding the daemon's loader is expected to do: each
// [[channel]] table decoded into the common keys and into its kind's
// config, with keys neither of them knows reported as errors.
func TestDecodeFromTOML(t *testing.T) {
	const doc = `
[[channel]]
name = "stdout"
kind = "console"

[[channel]]
name = "archive"
kind = "file"
no_problems = "publish_if_summary"
min_severity = "high"
path = "reviews/all.jsonl"

[[channel]]
name = "typo"
kind = "file"
pth = "x"
`
	var raw struct {
		Channel []toml.Primitive `toml:"channel"`
	}
	md, err := toml.Decode(doc, &raw)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out bytes.Buffer
	deps := im.Deps{Stdout: &out, BaseDir: dir}
	var built []im.Channel
	var validateErrs []error
	for _, prim := range raw.Channel {
		var common im.ChannelConfig
		if err := md.PrimitiveDecode(prim, &common); err != nil {
			t.Fatal(err)
		}
		if err := common.Validate(); err != nil {
			t.Fatal(err)
		}
		kind, ok := Kinds()[common.Kind]
		if !ok {
			t.Fatalf("unknown kind %q", common.Kind)
		}
		cfg := kind.NewConfig()
		if err := md.PrimitiveDecode(prim, cfg); err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			validateErrs = append(validateErrs, err)
			continue
		}
		if common.Name == "archive" && common.Policy() != (im.Policy{MinSeverity: review.SeverityHigh, NoProblems: im.NoProblemsPublishIfSummary}) {
			t.Errorf("archive policy = %+v", common.Policy())
		}
		ch, err := cfg.Build(common, deps)
		if err != nil {
			t.Fatal(err)
		}
		built = append(built, ch)
	}
	undecoded := md.Undecoded()
	if len(undecoded) != 1 || undecoded[0].String() != "channel.pth" {
		t.Errorf("undecoded keys = %v, want [channel.pth]", undecoded)
	}
	if len(validateErrs) != 1 || !errors.Is(validateErrs[0], im.ErrRequired) {
		t.Errorf("validation errors = %v, want one missing path", validateErrs)
	}
	if len(built) != 2 || built[0].Kind() != "console" || built[1].Kind() != "file" {
		t.Fatalf("built %v", built)
	}
	for _, ch := range built {
		if _, err := ch.Send(context.Background(), im.Message{RunID: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(out.String(), "aicr review: unknown change") {
		t.Errorf("console output = %q", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "reviews", "all.jsonl")); err != nil {
		t.Errorf("file channel did not write relative to BaseDir: %v", err)
	}
}

// Every kind that reads a secret validates its *_env / *_file pair with
// secret.Ref.Validate, so an operator reads the same sentence whichever
// channel (or the daemon's own secret) is misconfigured.
func TestSecretKeyErrorsAreSecretRefs(t *testing.T) {
	cases := []struct{ kind, prefix string }{
		{"webhook", "url"}, {"webhook", "secret"},
		{"slack", "token"}, {"slack", "webhook_url"},
		{"feishu", "webhook_url"}, {"feishu", "secret"},
		{"dingtalk", "webhook_url"}, {"dingtalk", "secret"},
		{"wecom", "webhook_url"},
	}
	for _, c := range cases {
		cfg := Kinds()[c.kind].NewConfig()
		doc := c.prefix + "_env = \"AICR_X\"\n" + c.prefix + "_file = \"x.txt\"\n"
		if _, err := toml.Decode(doc, cfg); err != nil {
			t.Fatalf("%s: %v", c.kind, err)
		}
		want := secret.Ref{Env: "AICR_X", File: "x.txt"}.Validate(c.prefix, false).Error()
		err := cfg.Validate()
		if !errors.Is(err, secret.ErrBoth) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s %s_env and %s_file: %v, want %q", c.kind, c.prefix, c.prefix, err, want)
		}
	}
	for _, kind := range []string{"webhook", "feishu", "dingtalk", "wecom"} {
		err := Kinds()[kind].NewConfig().Validate()
		if !errors.Is(err, secret.ErrNotConfigured) {
			t.Errorf("%s with no URL: %v, want secret.ErrNotConfigured", kind, err)
		}
	}
}
