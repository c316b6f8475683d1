package llm

import (
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
)

// However many blocks arrive marked, a request leaves with at most four
// breakpoints (Anthropic refuses a fifth), keeping the system prompt's
// and the moving one on the last block.
func TestBreakpointsNeverPassFour(t *testing.T) {
	marked := func(text string) anthropic.ContentBlockParamUnion {
		b := anthropic.NewTextBlock(text)
		*b.GetCacheControl() = anthropic.NewCacheControlEphemeralParam()
		return b
	}
	p := anthropic.MessageNewParams{System: []anthropic.TextBlockParam{{Text: "rules"}}}
	for i := 0; i < 6; i++ {
		role := anthropic.MessageParamRoleUser
		if i%2 == 1 {
			role = anthropic.MessageParamRoleAssistant
		}
		p.Messages = append(p.Messages, anthropic.MessageParam{Role: role, Content: []anthropic.ContentBlockParamUnion{marked("a"), anthropic.NewTextBlock("b")}})
	}
	markBreakpoints(&p)
	if n := countBreakpoints(p); n != maxBreakpoints {
		t.Errorf("%d breakpoints, want %d", n, maxBreakpoints)
	}
	if p.System[0].CacheControl.Type == "" {
		t.Error("the system prompt lost its breakpoint")
	}
	last := p.Messages[len(p.Messages)-1].Content
	if cc := last[len(last)-1].GetCacheControl(); cc == nil || cc.Type == "" {
		t.Error("the last block has no breakpoint")
	}

	// Without prompt_cache nothing is marked at all.
	m := newAnthropic(ModelOptions{Model: "claude", PromptCache: false})
	q, err := m.params(Request{System: "rules", Messages: []Message{{Role: RoleUser, Text: "change then pass", Stable: 11}}})
	if err != nil {
		t.Fatal(err)
	}
	if n := countBreakpoints(q); n != 0 || len(q.Messages[0].Content) != 1 {
		t.Errorf("prompt_cache off: %d breakpoints, %d blocks", n, len(q.Messages[0].Content))
	}
	m.o.PromptCache = true
	q, _ = m.params(Request{System: "rules", Messages: []Message{{Role: RoleUser, Text: "change then pass", Stable: 11}}})
	if n := countBreakpoints(q); n != 3 || len(q.Messages[0].Content) != 2 || q.Messages[0].Content[0].OfText.Text != "change then" {
		t.Errorf("prompt_cache on: %d breakpoints, blocks %+v", n, q.Messages[0].Content)
	}
}
