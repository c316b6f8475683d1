package delivery

import (
	"strings"
	"testing"
	"time"
)

func TestConfigDefaultsAndValidate(t *testing.T) {
	var c Config
	c.ApplyDefaults()
	if errs := c.Validate(); len(errs) != 0 {
		t.Fatalf("defaults invalid: %v", errs)
	}
	if c.GiveUpAfter != 24*time.Hour || c.Timeout != 30*time.Second || c.MaxAttempts != 0 {
		t.Fatalf("defaults: %+v", c)
	}
	bad := Config{GiveUpAfter: time.Second, MaxAttempts: -1, Backoff: time.Minute, MaxBackoff: time.Second,
		Timeout: 10 * time.Millisecond, RetryEvery: "sometimes"}
	var got []string
	for _, e := range bad.Validate() {
		got = append(got, e.Error())
	}
	want := []string{"dispatch.give_up_after: must be at least 1m", "dispatch.max_attempts:", "dispatch.backoff:",
		"dispatch.timeout: must be at least 1s", `dispatch.retry_every: bad schedule "sometimes"`}
	if len(got) != len(want) {
		t.Fatalf("errors %q", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
}
