package im

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func splitOpts(limit, maxParts int) SplitOptions {
	return SplitOptions{
		MaxParts: maxParts,
		Head:     func(i, n int) string { return "Title " + PartLabel(i, n) },
		Fits:     func(head, body string) bool { return len(head)+1+len(body) <= limit },
	}
}

func TestSplitSinglePartHasNoLabel(t *testing.T) {
	parts, err := Split([]Block{{Text: "header"}, {Text: "p1", Problem: true}}, splitOpts(100, 5))
	if err != nil || len(parts) != 1 || parts[0].Head != "Title " || parts[0].Body != "header\n\np1" {
		t.Fatalf("parts = %+v, %v", parts, err)
	}
}

func TestSplitPacksWithinLimitAndLabels(t *testing.T) {
	var blocks []Block
	for i := range 40 {
		blocks = append(blocks, Block{Text: fmt.Sprintf("问题 %02d ✅ 说明", i), Problem: true})
	}
	parts, err := Split(blocks, splitOpts(120, 10))
	if err != nil {
		t.Fatal(err)
	}
	var seen int
	for i, p := range parts {
		if len(p.Head)+1+len(p.Body) > 120 || !utf8.ValidString(p.Body) {
			t.Errorf("part %d: %d bytes", i+1, len(p.Head)+1+len(p.Body))
		}
		if want := fmt.Sprintf("(%d/%d)", i+1, len(parts)); !strings.HasSuffix(p.Head, want) {
			t.Errorf("head %q, want %s", p.Head, want)
		}
		seen += strings.Count(p.Body, "问题")
	}
	if seen != 40 {
		t.Fatalf("%d problems across parts, want 40", seen)
	}
}

func TestSplitCapsAndSaysHowManyWereLeftOut(t *testing.T) {
	blocks := []Block{{Text: "header"}}
	for i := range 50 {
		blocks = append(blocks, Block{Text: fmt.Sprintf("problem %02d with some words", i), Problem: true})
	}
	blocks = append(blocks, Block{Text: "summary stays"})
	parts, err := Split(blocks, splitOpts(300, 3))
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 {
		t.Fatalf("%d parts, want 3", len(parts))
	}
	kept := 0
	all := ""
	for _, p := range parts {
		kept += strings.Count(p.Body, "problem ")
		all += p.Body
	}
	last := parts[2]
	if last.Omitted != 50-kept || !strings.Contains(last.Body, fmt.Sprintf("%d more problems were left out", 50-kept)) {
		t.Fatalf("omitted %d, kept %d; last body:\n%s", last.Omitted, kept, last.Body)
	}
	if !strings.Contains(all, "summary stays") || !strings.Contains(all, "problem 00") || strings.Contains(all, "problem 49") {
		t.Fatalf("kept the wrong blocks:\n%s", all)
	}
}

func TestSplitNeverCutsInsideFence(t *testing.T) {
	code := "```go\n" + strings.Repeat("x := 1 // 注释\n", 30) + "```"
	text := "intro\n\n" + code + "\n\nafter"
	parts, err := Split([]Block{{Text: text, Problem: true}}, splitOpts(200, 10))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range parts {
		if strings.Count(p.Body, "```")%2 != 0 || !utf8.ValidString(p.Body) {
			t.Errorf("part %d breaks a fence or UTF-8:\n%s", i+1, p.Body)
		}
		if len(p.Head)+1+len(p.Body) > 200 {
			t.Errorf("part %d over the limit", i+1)
		}
	}
	if !strings.Contains(parts[len(parts)-1].Body, "after") {
		t.Fatalf("lost the text after the fence: %+v", parts)
	}
}

func TestSplitTooSmallLimit(t *testing.T) {
	_, err := Split([]Block{{Text: "header"}}, splitOpts(5, 5))
	if err == nil {
		t.Fatal("want an error when nothing fits")
	}
}

func BenchmarkSplit300(b *testing.B) {
	var blocks []Block
	for i := range 300 {
		blocks = append(blocks, Block{Text: strings.Repeat("问题说明 ", 30) + fmt.Sprint(i), Problem: true})
	}
	for b.Loop() {
		if _, err := Split(blocks, splitOpts(4096, 5)); err != nil {
			b.Fatal(err)
		}
	}
}
