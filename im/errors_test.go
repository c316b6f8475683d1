package im

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestClassifyStatus(t *testing.T) {
	cases := []struct {
		status     int
		retryAfter string
		reason     Reason
		retryable  bool
		wait       time.Duration
	}{
		{200, "", "", false, 0},
		{204, "", "", false, 0},
		{400, "", ReasonClient, false, 0},
		{401, "", ReasonAuth, false, 0},
		{403, "", ReasonAuth, false, 0},
		{404, "", ReasonClient, false, 0},
		{408, "", ReasonTimeout, true, 0},
		{413, "", ReasonTooLarge, false, 0},
		{429, "7", ReasonRateLimited, true, 7 * time.Second},
		{429, "", ReasonRateLimited, true, 0},
		{500, "", ReasonServer, true, 0},
		{503, "2", ReasonServer, true, 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			h := http.Header{}
			if tc.retryAfter != "" {
				h.Set("Retry-After", tc.retryAfter)
			}
			got := ClassifyStatus(tc.status, h, []byte(`{"ok":false}`))
			if tc.reason == "" {
				if got != nil {
					t.Fatalf("2xx must be success, got %v", got)
				}
				return
			}
			if got == nil || got.Reason != tc.reason || got.Retryable != tc.retryable || got.RetryAfter != tc.wait || got.StatusCode != tc.status {
				t.Fatalf("got %+v", got)
			}
			ok, wait := IsRetryable(fmt.Errorf("send: %w", got))
			if ok != tc.retryable || wait != tc.wait {
				t.Fatalf("IsRetryable through wrapping: %v %v", ok, wait)
			}
		})
	}
	if ok, _ := IsRetryable(errors.New("plain")); ok {
		t.Fatal("unclassified errors must not be retried")
	}
}
