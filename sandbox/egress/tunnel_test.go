package egress_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aicr-dev/aicr/sandbox/egress"
)

// A tunnel reaches an allowlisted target through the proxy, and a target
// the proxy refuses gets a closed connection, with the refusal recorded.
func TestTunnelListener(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "model") }))
	defer srv.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "other") }))
	defer other.Close()
	target := strings.TrimPrefix(srv.URL, "http://")

	var mu sync.Mutex
	var events []egress.Event
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	proxy, err := egress.Listen(sock, []string{target}, func(e egress.Event) { mu.Lock(); events = append(events, e); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	tunnel := func(to string) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go egress.TunnelListener(ctx, ln, sock, to)
		return "http://" + ln.Addr().String()
	}
	resp, err := http.Get(tunnel(target))
	if err != nil {
		t.Fatalf("through the tunnel: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "model" {
		t.Errorf("body %q", body)
	}
	if _, err := http.Get(tunnel(strings.TrimPrefix(other.URL, "http://"))); err == nil {
		t.Error("a tunnel to a target off the allowlist answered")
	}
	mu.Lock()
	defer mu.Unlock()
	allowed, refused := 0, 0
	for _, e := range events {
		if e.Allowed {
			allowed++
		} else {
			refused++
		}
	}
	if allowed == 0 || refused == 0 {
		t.Errorf("egress events %+v, want one allowed and one refused", events)
	}
}
