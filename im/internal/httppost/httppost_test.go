package httppost

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/secret"
)

func TestPostClassifiesStatusAndRedactsTheAnswer(t *testing.T) {
	const sec = "sig-key-0f1e2d3c"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test") != "1" || r.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
		// A platform echoing the request's token back must not leak it.
		fmt.Fprintf(w, "slow down %s %s %s", r.URL.Query().Get("access_token"), sec, strings.Repeat("x", 200<<10))
	}))
	defer srv.Close()
	hook := srv.URL + "/robot/send?access_token=tok-abcdef123456"
	resp, err := Post(context.Background(), srv.Client(), Request{URL: hook, Body: []byte(`{}`),
		Header: http.Header{"X-Test": {"1"}}, Secrets: []string{sec}})
	var se *im.SendError
	if !errors.As(err, &se) || se.Reason != im.ReasonRateLimited || !se.Retryable || se.RetryAfter.Seconds() != 7 {
		t.Fatalf("err = %#v", err)
	}
	if len(resp.Body) != maxResponse {
		t.Fatalf("read %d bytes of the answer, want the %d-byte bound", len(resp.Body), maxResponse)
	}
	imtest.AssertSendLeaksNothing(t, im.Receipt{Response: resp.Excerpt(Secrets(hook, sec)...)}, err, hook, "tok-abcdef123456", sec)
	// The placeholder is secret's, the same the llm agent's errors show.
	if want := "slow down " + secret.Redacted + " " + secret.Redacted + " x"; !strings.HasPrefix(se.Response, want) {
		t.Fatalf("answer excerpt %.60q, want it to start %q", se.Response, want)
	}
}

func TestTransportErrorsNameOnlyTheHost(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	hook := srv.URL + "/open-apis/bot/v2/hook/tok-5f3c9a1e7b"
	srv.Close()
	_, err := Post(context.Background(), nil, Request{URL: hook})
	var se *im.SendError
	if !errors.As(err, &se) || se.Reason != im.ReasonNetwork || !se.Retryable {
		t.Fatalf("err = %#v", err)
	}
	if !strings.Contains(err.Error(), "/<redacted>") {
		t.Fatalf("err = %v, want the redacted URL", err)
	}
	imtest.AssertSendLeaksNothing(t, im.Receipt{}, err, hook, "tok-5f3c9a1e7b")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Post(ctx, nil, Request{URL: hook})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v, want errors.Is context.Canceled", err)
	}
	imtest.AssertSendLeaksNothing(t, im.Receipt{}, err, hook, "tok-5f3c9a1e7b")
}
