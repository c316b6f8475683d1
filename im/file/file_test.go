package file

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

var fixedNow = time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600))

func build(t *testing.T, cfg Config, baseDir string) *Channel {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ch, err := cfg.Build(im.ChannelConfig{Name: "archive", Kind: KindName},
		im.Deps{BaseDir: baseDir, Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	return ch.(*Channel)
}

func message(run int64) im.Message {
	return im.Message{
		RunID:     run,
		ChangeURL: "https://example.com/r42",
		Change:    &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "42", Author: "alice", Description: "fix <it>"},
		Result: review.Result{
			Problems: []review.Problem{
				{File: "b.go", Line: 2, Severity: review.SeverityLow, Category: "style", Message: "meh", Fingerprint: "f2"},
				{File: "a.go", Line: 9, EndLine: 11, Severity: review.SeverityCritical, Category: "bug", Message: "boom\x1b[0m", Suggestion: "don't", Fingerprint: "f1"},
			},
			Summaries: []review.Summary{{Title: "T", Markdown: "body"}},
		},
	}
}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatalf("file does not end with a newline: %q", data)
	}
	var recs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%.200s", len(recs)+1, err, sc.Text())
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestSendAppendsJSONLines(t *testing.T) {
	dir := t.TempDir()
	ch := build(t, Config{Path: "out/reviews.jsonl"}, dir)
	path := filepath.Join(dir, "out", "reviews.jsonl")
	if ch.Path() != path {
		t.Fatalf("Path() = %q, want %q (relative to BaseDir)", ch.Path(), path)
	}
	for run := int64(1); run <= 2; run++ {
		if _, err := ch.Send(context.Background(), message(run)); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm&^0o640 != 0 {
		t.Errorf("mode = %v, want at most 0640", perm)
	}

	data, _ := os.ReadFile(path)
	first := strings.SplitN(string(data), "\n", 2)[0]
	var rec Record
	if err := json.Unmarshal([]byte(first), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Channel != "archive" || rec.Kind != "file" || rec.RunID != 1 || rec.Repo != "main" ||
		rec.VCS != "svn" || rec.Revision != "42" || rec.Author != "alice" || rec.ChangeURL != "https://example.com/r42" {
		t.Errorf("metadata wrong: %+v", rec)
	}
	if !rec.SentAt.Equal(fixedNow) || !strings.Contains(first, `"sent_at":"2025-03-04T04:06:07Z"`) {
		t.Errorf("sent_at wrong in %s", first)
	}
	if rec.Text != im.RenderText(message(1)) {
		t.Errorf("text = %q, want RenderText output", rec.Text)
	}
	if len(rec.Problems) != 2 || rec.Problems[0].Fingerprint != "f1" || rec.Problems[1].Fingerprint != "f2" {
		t.Errorf("problems not sorted by severity: %+v", rec.Problems)
	}
	if rec.Problems[0].Message != "boom[0m" {
		t.Errorf("control characters kept in structured problem: %q", rec.Problems[0].Message)
	}
	if len(rec.Summaries) != 1 || rec.Summaries[0].Markdown != "body" || rec.Skip != nil {
		t.Errorf("summaries/skip wrong: %+v %+v", rec.Summaries, rec.Skip)
	}
	if !strings.Contains(first, "fix <it>") {
		t.Errorf("HTML escaping applied: %s", first)
	}

	recs := readLines(t, path)
	if len(recs) != 2 || recs[1]["run_id"] != float64(2) {
		t.Fatalf("got %d records, second %v", len(recs), recs[len(recs)-1]["run_id"])
	}
	for _, key := range []string{"channel", "kind", "run_id", "repo", "vcs", "revision", "author", "text", "problems", "summaries", "skip", "sent_at"} {
		if _, ok := recs[0][key]; !ok {
			t.Errorf("key %q missing", key)
		}
	}
}

func TestSendEmptyResultWritesEmptyArrays(t *testing.T) {
	dir := t.TempDir()
	ch := build(t, Config{Path: filepath.Join(dir, "r.jsonl")}, "/elsewhere")
	msg := im.Message{RunID: 3, Result: review.Result{Skip: &review.Skip{Reason: "lgtm"}}}
	if _, err := ch.Send(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "r.jsonl"))
	for _, want := range []string{`"problems":[]`, `"summaries":[]`, `"skip":{"reason":"lgtm"}`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("line lacks %s: %s", want, data)
		}
	}
}

func TestConcurrentSendNeverInterleaves(t *testing.T) {
	dir := t.TempDir()
	ch := build(t, Config{Path: "c.jsonl"}, dir)
	// Large lines make a torn or interleaved write show up as broken JSON.
	big := strings.Repeat("x", 200_000)
	const workers, perWorker = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				msg := message(int64(w*perWorker + i))
				msg.Result.Summaries = []review.Summary{{Markdown: fmt.Sprintf("%d-%d %s", w, i, big)}}
				_, err := ch.Send(context.Background(), msg)
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	recs := readLines(t, filepath.Join(dir, "c.jsonl"))
	if len(recs) != workers*perWorker {
		t.Fatalf("got %d lines, want %d", len(recs), workers*perWorker)
	}
	seen := map[float64]bool{}
	for _, r := range recs {
		seen[r["run_id"].(float64)] = true
	}
	if len(seen) != workers*perWorker {
		t.Fatalf("got %d distinct run ids, want %d", len(seen), workers*perWorker)
	}
}

func TestSendErrorNamesPath(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "not-a-dir")
	if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(blocker, "r.jsonl")
	ch := build(t, Config{Path: path}, "")
	_, err := ch.Send(context.Background(), message(1))
	if err == nil {
		t.Fatal("Send succeeded below a regular file")
	}
	if !strings.Contains(err.Error(), blocker) {
		t.Fatalf("error %q does not name the path", err)
	}

	// A directory where the file should be fails at open.
	dirPath := filepath.Join(dir, "isdir")
	if err := os.Mkdir(dirPath, 0o750); err != nil {
		t.Fatal(err)
	}
	_, err = build(t, Config{Path: dirPath}, "").Send(context.Background(), message(1))
	if err == nil || !strings.Contains(err.Error(), dirPath) {
		t.Fatalf("err = %v, want one naming %s", err, dirPath)
	}
}

func TestValidateRequiresPath(t *testing.T) {
	for _, p := range []string{"", "  "} {
		err := (&Config{Path: p}).Validate()
		if !errors.Is(err, im.ErrRequired) || err.Error() != "path: required" {
			t.Errorf("Validate(%q) = %v, want path: required", p, err)
		}
		if _, err := (&Config{Path: p}).Build(im.ChannelConfig{Name: "x", Kind: KindName}, im.Deps{}); err == nil {
			t.Errorf("Build(%q) succeeded", p)
		}
	}
}

// Issue 10 #18: a process killed after the write but before the attempt
// was recorded retries with the same dedupe key; the file keeps one line.
func TestRetryWithSameDedupeKeyAppendsOnce(t *testing.T) {
	dir := t.TempDir()
	ch := build(t, Config{Path: "r.jsonl"}, dir)
	ctx := context.Background()
	send := func(key string, maybe bool) {
		t.Helper()
		msg := message(1)
		msg.DedupeKey, msg.MaybeDelivered = key, maybe
		if _, err := ch.Send(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	send("aicr-1-archive", false)
	send("aicr-1-archive", true) // the retry after the crash
	// A key that only extends the first one is a different delivery.
	send("aicr-1-archive2", false)
	recs := readLines(t, filepath.Join(dir, "r.jsonl"))
	if len(recs) != 2 {
		t.Fatalf("got %d lines, want 2 (one per dedupe key): %v", len(recs), recs)
	}
	if recs[0]["dedupe_key"] != "aicr-1-archive" || recs[1]["dedupe_key"] != "aicr-1-archive2" {
		t.Fatalf("dedupe keys: %v, %v", recs[0]["dedupe_key"], recs[1]["dedupe_key"])
	}
}
