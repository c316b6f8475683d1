package egress_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/sandbox/egress"
)

type recorder struct {
	mu     sync.Mutex
	events []egress.Event
}

func (r *recorder) record(e egress.Event) { r.mu.Lock(); r.events = append(r.events, e); r.mu.Unlock() }
func (r *recorder) all() []egress.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]egress.Event(nil), r.events...)
}

// sockPath is short: unix socket paths are capped at 107 bytes.
func sockPath(t *testing.T) string {
	dir, err := os.MkdirTemp("", "eg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "p.sock")
}

func tlsServer(t *testing.T) (*httptest.Server, string) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello via "+r.Proto)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return srv, u.Host
}

func clientVia(srv *httptest.Server, dial func(context.Context, string, string) (net.Conn, error)) *http.Client {
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = dial
	return &http.Client{Transport: tr}
}

func get(t *testing.T, c *http.Client, u string) (string, error) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestDialerTunnelsTLSToAllowlistedHost(t *testing.T) {
	srv, hostport := tlsServer(t)
	rec := &recorder{}
	sock := sockPath(t)
	p, err := egress.Listen(sock, []string{hostport}, rec.record)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket mode: %v %v, want 0666", fi.Mode(), err)
	}
	body, err := get(t, clientVia(srv, egress.DialerFor(sock)), srv.URL)
	if err != nil || body != "hello via HTTP/1.1" {
		t.Fatalf("GET through tunnel: %q %v", body, err)
	}
	ev := rec.all()
	if len(ev) != 1 || !ev[0].Allowed || ev[0].Host != "127.0.0.1" || ev[0].Reason != "allowlisted" {
		t.Fatalf("events: %+v", ev)
	}
}

func TestRefusesHostNotInAllowlist(t *testing.T) {
	srv, hostport := tlsServer(t)
	_, other := tlsServer(t)
	rec := &recorder{}
	sock := sockPath(t)
	p, err := egress.Listen(sock, []string{other}, rec.record)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, err = get(t, clientVia(srv, egress.DialerFor(sock)), srv.URL)
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "not in the egress allowlist") {
		t.Fatalf("want a 403 naming the allowlist, got %v", err)
	}
	ev := rec.all()
	if len(ev) != 1 || ev[0].Allowed || net.JoinHostPort(ev[0].Host, strconv.Itoa(ev[0].Port)) != hostport {
		t.Fatalf("events: %+v", ev)
	}
}

// An allowlisted name rebound to loopback is refused; allowlisting the
// loopback address itself is what lets it through.
func TestRefusesNameResolvingToLoopback(t *testing.T) {
	srv, hostport := tlsServer(t)
	_, port, _ := net.SplitHostPort(hostport)
	resolve := func(ctx context.Context, host string) ([]net.IPAddr, error) {
		if host == "llm.example.com" {
			return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}}, nil
		}
		return nil, errors.New("no such host")
	}
	rec := &recorder{}
	sock := sockPath(t)
	p, err := egress.ListenWith(sock, []string{"LLM.example.com:" + port}, rec.record, egress.Options{LookupIPAddr: resolve})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := egress.DialerFor(sock)(context.Background(), "tcp", "llm.example.com:"+port)
	if err == nil {
		c.Close()
		t.Fatal("tunnel to a name rebound to loopback was opened")
	}
	if !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "DNS rebinding") {
		t.Fatalf("error: %v", err)
	}
	ev := rec.all()
	if len(ev) != 1 || ev[0].Allowed || ev[0].Host != "llm.example.com" || !strings.Contains(ev[0].Reason, "127.0.0.1") {
		t.Fatalf("events: %+v", ev)
	}
	_ = srv
}

func TestTooManyTunnels(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c) // echo
		}
	}()
	rec := &recorder{}
	sock := sockPath(t)
	p, err := egress.ListenWith(sock, []string{ln.Addr().String()}, rec.record, egress.Options{MaxTunnels: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dial := egress.DialerFor(sock)
	var open []net.Conn
	for i := 0; i < 2; i++ {
		c, err := dial(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatalf("tunnel %d: %v", i, err)
		}
		open = append(open, c)
	}
	if _, err := dial(context.Background(), "tcp", ln.Addr().String()); err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "limit 2") {
		t.Fatalf("third tunnel: %v", err)
	}
	// A freed slot is usable again.
	open[0].Close()
	// The proxy notices the close asynchronously: retry, bounded generously.
	var c net.Conn
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if c, err = dial(context.Background(), "tcp", ln.Addr().String()); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("after a close: %v", err)
	}
	c.Close()
	open[1].Close()
	refused := 0
	for _, e := range rec.all() {
		if !e.Allowed && strings.Contains(e.Reason, "too many") {
			refused++
		}
	}
	if refused < 1 {
		t.Fatalf("no refusal recorded: %+v", rec.all())
	}
}

func TestCloseEndsTunnels(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c)
		}
	}()
	sock := sockPath(t)
	p, err := egress.Listen(sock, []string{ln.Addr().String()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := egress.DialerFor(sock)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo: %q %v", buf, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(buf); err == nil {
		t.Fatal("tunnel still open after Close")
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}

// HTTPS_PROXY users (agent CLIs) go through Forward's loopback listener.
func TestForwardServesProxyClients(t *testing.T) {
	srv, hostport := tlsServer(t)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Authorization") != "" {
			t.Error("proxy credentials forwarded upstream")
		}
		io.WriteString(w, "plain "+r.URL.Path)
	}))
	defer plain.Close()
	pu, _ := url.Parse(plain.URL)
	rec := &recorder{}
	sock := sockPath(t)
	p, err := egress.Listen(sock, []string{hostport, pu.Host}, rec.record)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- egress.ForwardListener(ctx, ln, sock) }()
	proxyURL, _ := url.Parse("http://" + ln.Addr().String())

	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(proxyURL) // what HTTPS_PROXY sets (Go skips it for 127.0.0.1 targets)
	c := &http.Client{Transport: tr}
	if body, err := get(t, c, srv.URL); err != nil || body != "hello via HTTP/1.1" {
		t.Fatalf("https via forward: %q %v", body, err)
	}
	if body, err := get(t, c, plain.URL+"/v1/models"); err != nil || body != "plain /v1/models" {
		t.Fatalf("plain http via forward: %q %v", body, err)
	}
	resp, err := c.Get("http://10.255.255.1:9/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("non-allowlisted plain http: %s", resp.Status)
	}
	var allowed, refused int
	for _, e := range rec.all() {
		if e.Allowed {
			allowed++
		} else {
			refused++
		}
	}
	if allowed != 2 || refused != 1 {
		t.Fatalf("events: %+v", rec.all())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestForwardRefusesNonLoopback(t *testing.T) {
	err := egress.Forward(context.Background(), "0.0.0.0:0", "/nonexistent")
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("got %v", err)
	}
}

func TestHTTPClientAndForRun(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer plain.Close()
	pu, _ := url.Parse(plain.URL)
	dir, err := os.MkdirTemp("", "run")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	p, m, err := egress.ForRun(dir, []string{pu.Host}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if want := rundir.New(dir).EgressSocketPath(); p.SocketPath() != want || filepath.Join(m.HostDir, egress.SocketName) != want {
		t.Fatalf("socket %s, mount %+v, rundir says %s", p.SocketPath(), m, want)
	}
	if body, err := get(t, egress.HTTPClient(p.SocketPath()), plain.URL); err != nil || body != "ok" {
		t.Fatalf("%q %v", body, err)
	}
}

func TestAllowlistFromURLs(t *testing.T) {
	got, err := egress.AllowlistFromURLs("https://API.example.com/v1", "http://vllm.lan:8000/v1", "http://10.0.0.5/", "https://[::1]/x", "https://api.example.com:443")
	if err != nil {
		t.Fatal(err)
	}
	want := "api.example.com:443 vllm.lan:8000 10.0.0.5:80 [::1]:443"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %v", got)
	}
	for _, bad := range []string{"ftp://x/", "https:///nohost", "api.example.com"} {
		if _, err := egress.AllowlistFromURLs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := egress.Listen(filepath.Join(t.TempDir(), "s"), []string{"nohostport"}, nil); err == nil || !strings.Contains(err.Error(), "nohostport") {
		t.Fatalf("bad allowlist entry: %v", err)
	}
}
