package markdown

import (
	"strings"
	"testing"
)

func TestConvertKeepsUntrustedTextInert(t *testing.T) {
	src := "Hi <at id=all></at> [x](javascript:alert(1)) <https://ok.example/a> ![i](data:image/png;base64,AA)\n\n<div>raw</div>"
	for _, d := range []Dialect{DingTalk, WeCom, Feishu} {
		got := Convert(src, d)
		for _, bad := range []string{"<at ", "<div>", "javascript:", "data:image"} {
			if strings.Contains(got, bad) {
				t.Errorf("%s: output contains %q:\n%s", d, bad, got)
			}
		}
		if !strings.Contains(got, "[https://ok.example/a](https://ok.example/a)") {
			t.Errorf("%s: safe autolink lost:\n%s", d, got)
		}
	}
}

func TestConvertTableBecomesList(t *testing.T) {
	got := Convert("| 文件 | 问题 |\n|---|---|\n| a.go | 空指针 |\n| b.go | 泄漏 |", DingTalk)
	want := "- 文件: a.go; 问题: 空指针\n- 文件: b.go; 问题: 泄漏"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestConvertCodePerDialect(t *testing.T) {
	src := "```go\nif x {\n  y()\n}\n```"
	if got := Convert(src, Feishu); got != "```go\nif x {\n  y()\n}\n```" {
		t.Errorf("feishu:\n%s", got)
	}
	if got := Convert(src, DingTalk); got != "> if x {\n> \u00a0\u00a0y()\n> }" {
		t.Errorf("dingtalk:\n%q", got)
	}
	if got := Convert(src, WeCom); got != "> `if x {`\n> `\u00a0\u00a0y()`\n> `}`" {
		t.Errorf("wecom:\n%q", got)
	}
	// A fence inside the code gets a longer fence around it.
	if got := CodeBlock("a\n```\nb", "", Feishu); !strings.HasPrefix(got, "````\n") || !strings.HasSuffix(got, "\n````") {
		t.Errorf("nested fence:\n%s", got)
	}
}

func TestConvertStructure(t *testing.T) {
	src := "# Title\n\nSome **bold** and *it* and ~~gone~~ `code`.\n\n1. one\n2. two\n   - nested\n\n> quoted"
	want := map[Dialect]string{
		Feishu:   "### Title\n\nSome **bold** and *it* and ~~gone~~ `code`.\n\n1. one\n2. two\n  - nested\n\n> quoted",
		DingTalk: "### Title\n\nSome **bold** and *it* and gone `code`.\n\n1. one\n2. two\n  - nested\n\n> quoted",
		WeCom:    "### Title\n\nSome **bold** and it and gone `code`.\n\n1. one\n2. two\n  - nested\n\n> quoted",
	}
	for d, w := range want {
		if got := Convert(src, d); got != w {
			t.Errorf("%s:\n%s\nwant:\n%s", d, got, w)
		}
	}
}
