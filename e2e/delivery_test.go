package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
)

// slowPlatform is a webhook receiver that answers from a script of
// statuses (then 200) and, while hold is open, keeps every request waiting.
type slowPlatform struct {
	mu       sync.Mutex
	script   []int
	hold     chan struct{}
	arrived  chan struct{}
	statuses []int
}

func (p *slowPlatform) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	select {
	case p.arrived <- struct{}{}:
	default:
	}
	if p.hold != nil {
		<-p.hold
	}
	p.mu.Lock()
	status := http.StatusOK
	if len(p.script) > 0 {
		status, p.script = p.script[0], p.script[1:]
	}
	p.statuses = append(p.statuses, status)
	p.mu.Unlock()
	w.WriteHeader(status)
}

func (p *slowPlatform) answered() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.statuses...)
}

// withPlatformChannel routes the env's repo to a webhook channel "slow"
// (before the file channel) and appends extra TOML to the config.
func (e *env) withPlatformChannel(url, extra string) {
	e.t.Helper()
	e.t.Setenv("AICR_E2E_SLOW_URL", url)
	b, err := os.ReadFile(e.config)
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := strings.Replace(string(b), `channels = ["reports"]`, `channels = ["slow", "reports"]`, 1)
	cfg += "\n[[channel]]\nname = \"slow\"\nkind = \"webhook\"\nurl_env = \"AICR_E2E_SLOW_URL\"\n" + extra
	if err := os.WriteFile(e.config, []byte(cfg), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// Issue 10 #12: a channel that does not answer holds neither the review
// worker nor the other channel: with one worker and the platform stuck on
// the first report, both runs finish and the file channel gets both reports.
func TestStuckChannelDelaysNeitherReviewsNorOtherChannels(t *testing.T) {
	e := newEnv(t, 1)
	p := &slowPlatform{hold: make(chan struct{}), arrived: make(chan struct{}, 16)}
	srv := httptest.NewServer(p)
	defer srv.Close()
	defer close(p.hold) // before srv.Close, which waits for held requests
	e.withPlatformChannel(srv.URL+"/x", "\n[dispatch]\ntimeout = \"1h\"\n")
	e.startDaemon()
	e.commit("one", map[string]string{"a.txt": "one\n"})
	e.commit("two", map[string]string{"b.txt": "two\n"})

	s := e.store()
	runs := e.waitFinished(s, 2, 60*time.Second)
	deadline := time.Now().Add(60 * time.Second)
	for len(e.reportLines()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("file channel got %d reports while the webhook was stuck", len(e.reportLines()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case <-p.arrived:
	case <-time.After(60 * time.Second):
		t.Fatal("the stuck channel was never attempted")
	}
	if got := p.answered(); len(got) != 0 {
		t.Fatalf("the platform answered %v while held", got)
	}
	if len(runs) != 2 {
		t.Fatalf("runs: %+v", runs)
	}
}

// Issue 10 #10: a failed first attempt is retried after `backoff`, not at
// the next retry_every tick (here an hour away) or the dispatcher's poll.
func TestFirstRetryHonoursBackoff(t *testing.T) {
	e := newEnv(t, 1)
	p := &slowPlatform{script: []int{http.StatusServiceUnavailable}, arrived: make(chan struct{}, 16)}
	srv := httptest.NewServer(p)
	defer srv.Close()
	e.withPlatformChannel(srv.URL+"/x", "\n[dispatch]\nbackoff = \"200ms\"\nmax_backoff = \"1s\"\nretry_every = \"@every 1h\"\n")
	e.startDaemon()
	e.commit("one", map[string]string{"a.txt": "one\n"})
	s := e.store()
	e.waitFinished(s, 1, 60*time.Second)
	// Generous next to a 200ms backoff; the old code waited for a
	// one-minute poll or the hourly retry_every.
	deadline := time.Now().Add(40 * time.Second)
	for {
		list, err := s.ListDispatches(context.Background(), audit.DispatchFilter{Channel: "slow"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 1 && list[0].Status == delivery.StatusSent {
			if got := fmt.Sprint(p.answered()); got != "[503 200]" {
				t.Fatalf("platform answered %s, want [503 200]", got)
			}
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(e.daemonLog)
			t.Fatalf("retry not made after backoff: %+v, platform answered %v\n%s", list, p.answered(), log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
