package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/hmacsig"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/webhook"
	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

const secret = "whsec-0123456789abcdef"

func TestSignedPayload(t *testing.T) {
	now := time.Unix(1700000000, 0)
	var body []byte
	var hdr http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		hdr = r.Header.Clone()
		// Verify the way a receiver would, without aicr's code.
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(r.Header.Get("X-Aicr-Timestamp") + "." + string(body)))
		if r.Header.Get("X-Aicr-Signature") != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"received":true}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "url"), []byte(srv.URL+"/aicr\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "secret"), []byte(secret+"\n"), 0o600)
	ch, err := (&webhook.Config{URLFile: "url", SecretFile: "secret"}).Build(
		im.ChannelConfig{Name: "ci", Kind: "webhook"}, im.Deps{BaseDir: dir, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	msg := im.Message{RunID: 9, DedupeKey: "aicr-9-ci", ChangeURL: "https://viewvc/?r=42",
		Change: &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "42", Author: "alice", Description: "fix <it>"},
		Author: &im.Identity{VCSUser: "alice", Email: "alice@example.com"},
		Result: review.Result{Problems: []review.Problem{{File: "a.go", Line: 3, Severity: review.SeverityHigh, Message: "中文 & <b>"}}}}
	rec, err := ch.Send(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	if rec.StatusCode != 200 || rec.Response != `{"received":true}` || rec.Rendered != string(body) {
		t.Fatalf("receipt %+v", rec)
	}
	if hdr.Get("Idempotency-Key") != "aicr-9-ci" || hdr.Get("X-Aicr-Timestamp") != strconv.FormatInt(now.Unix(), 10) {
		t.Fatalf("headers %v", hdr)
	}
	var p webhook.Payload
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Version != 1 || p.RunID != 9 || p.Change.Revision != "42" || p.Change.URL != "https://viewvc/?r=42" ||
		p.Counts["high"] != 1 || len(p.Problems) != 1 || p.Author.Email != "alice@example.com" || p.IdempotencyKey != "aicr-9-ci" {
		t.Fatalf("payload %+v", p)
	}
	if !strings.Contains(string(body), "中文 & <b>") {
		t.Errorf("body escapes text: %s", body)
	}
	imtest.AssertSendLeaksNothing(t, rec, err, secret)

	// A receiver that rejects the signature (wrong secret) is a permanent auth error.
	os.WriteFile(filepath.Join(dir, "secret"), []byte("another-secret"), 0o600)
	rec, err = ch.Send(context.Background(), msg)
	var se *im.SendError
	if !errors.As(err, &se) || se.Reason != im.ReasonAuth || se.Retryable {
		t.Fatalf("bad signature: %#v", err)
	}
	imtest.AssertSendLeaksNothing(t, rec, err, secret, "another-secret")
}

// The signature is package hmacsig's, so a receiver can verify with it.
func TestSignatureVerifiesWithHMACSig(t *testing.T) {
	var got error
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, _ := strconv.ParseInt(r.Header.Get(webhook.HeaderTimestamp), 10, 64)
		got = hmacsig.Verify([]byte(secret), ts, body, r.Header.Get(webhook.HeaderSignature))
	}))
	defer srv.Close()
	t.Setenv("AICR_TEST_WEBHOOK_URL", srv.URL)
	t.Setenv("AICR_TEST_WEBHOOK_SECRET", secret)
	ch, err := (&webhook.Config{URLEnv: "AICR_TEST_WEBHOOK_URL", SecretEnv: "AICR_TEST_WEBHOOK_SECRET"}).Build(
		im.ChannelConfig{Name: "ci", Kind: "webhook"}, im.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Send(context.Background(), im.Message{RunID: 1}); err != nil || got != nil {
		t.Fatalf("Send: %v, verify: %v", err, got)
	}
}

// Transport failures and unreadable secrets never show the URL's token
// or a secret; a secret that cannot be read is a permanent failure that
// says what to fix.
func TestErrorsLeakNothing(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	hookURL := srv.URL + "/hooks/tok-9f8e7d6c?key=qk-1a2b3c4d"
	srv.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "url"), []byte(hookURL), 0o600)
	ch, err := (&webhook.Config{URLFile: "url", SecretFile: "missing.secret"}).Build(
		im.ChannelConfig{Name: "ci", Kind: "webhook"}, im.Deps{BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	msg := im.Message{RunID: 3, Change: &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "5",
		Description: "rotate: api_key=sk-live-51Habc123 was committed"}}
	rec, err := ch.Send(context.Background(), msg)
	var se *im.SendError
	if !errors.As(err, &se) || se.Retryable || !strings.Contains(err.Error(), filepath.Join(dir, "missing.secret")) {
		t.Fatalf("missing secret file: %v", err)
	}
	imtest.AssertSendLeaksNothing(t, rec, err, hookURL, "tok-9f8e7d6c", "qk-1a2b3c4d")

	os.WriteFile(filepath.Join(dir, "missing.secret"), []byte(secret), 0o600)
	rec, err = ch.Send(context.Background(), msg)
	if !errors.As(err, &se) || se.Reason != im.ReasonNetwork || !se.Retryable {
		t.Fatalf("transport error: %#v", err)
	}
	imtest.AssertSendLeaksNothing(t, rec, err, hookURL, "tok-9f8e7d6c", "qk-1a2b3c4d", secret)

	// Issue 10 #28: the commit message's credential is not in the payload.
	body, err := ch.(*webhook.Channel).Render(msg)
	if err != nil {
		t.Fatal(err)
	}
	imtest.AssertNoLeak(t, "payload", string(body), "sk-live-51Habc123")
}

func TestConfigValidation(t *testing.T) {
	if err := (&webhook.Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "url_env or url_file: no secret configured; set one") {
		t.Fatalf("missing url: %v", err)
	}
	if err := (&webhook.Config{URLEnv: "A", URLFile: "b"}).Validate(); err == nil {
		t.Fatal("both url_env and url_file accepted")
	}
}

// The payload is the report every chat channel renders, in machine form:
// the same sanitized problems and summaries, the same plain text, the
// change's full description with credentials blanked, and the reviewer's
// skip as it reported it (a clean "lgtm" included). Empty lists are [].
func TestPayloadIsTheReport(t *testing.T) {
	msg := im.Message{RunID: 4, ChangeURL: "https://viewvc/?r=7",
		Change: &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "7", Author: "bob",
			Description: "tidy\n\npassword=hunter2hunter2 was here"},
		Result: review.Result{Summaries: []review.Summary{{Title: " Overview ", Markdown: "all \x1bgood\n"}, {}},
			Skip: &review.Skip{Reason: "lgtm"}}}
	rep := im.BuildReport(msg)
	now := time.Unix(1700000000, 0)
	p := webhook.NewPayload(rep, "ci", "aicr-4-ci", now)
	if p.Text != im.PlainText(rep) || p.RunID != 4 || p.Skip == nil || p.Skip.Reason != "lgtm" ||
		p.Change.URL != rep.ChangeURL || p.Change.Repo != "main" {
		t.Fatalf("payload %+v", p)
	}
	if len(p.Summaries) != 1 || p.Summaries[0] != rep.Summaries[0] || p.Summaries[0].Markdown != "all good" {
		t.Fatalf("summaries %+v, want the report's %+v", p.Summaries, rep.Summaries)
	}
	if !strings.Contains(p.Change.Description, "was here") || strings.Contains(p.Change.Description, "hunter2") {
		t.Fatalf("description %q", p.Change.Description)
	}
	body, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"problems":[]`, `"counts":{}`, `"skip":{"reason":"lgtm"}`, `"text":"aicr review: main r7 by bob\ntidy\nNo problems found.\n`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("payload lacks %s:\n%s", want, body)
		}
	}
}
