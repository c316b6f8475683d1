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

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/webhook"
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
	if strings.Contains(rec.Rendered, secret) {
		t.Error("the secret is in the rendered body")
	}

	// A receiver that rejects the signature (wrong secret) is a permanent auth error.
	os.WriteFile(filepath.Join(dir, "secret"), []byte("another-secret"), 0o600)
	_, err = ch.Send(context.Background(), msg)
	var se *im.SendError
	if !errors.As(err, &se) || se.Reason != im.ReasonAuth || se.Retryable || strings.Contains(se.Error(), "another-secret") {
		t.Fatalf("bad signature: %#v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	if err := (&webhook.Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "url_env: required") {
		t.Fatalf("missing url: %v", err)
	}
	if err := (&webhook.Config{URLEnv: "A", URLFile: "b"}).Validate(); err == nil {
		t.Fatal("both url_env and url_file accepted")
	}
}
