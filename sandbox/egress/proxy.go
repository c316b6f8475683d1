// Package egress is the sandbox's only way out to the network when
// [sandbox] network = "llm-only": the container runs with no network of
// its own, and the daemon serves an allowlisting HTTP proxy on a unix
// socket mounted into the container. Only CONNECT (and absolute-URL plain
// HTTP) to an allowlisted host:port passes; every allowed and refused
// connection is reported to the caller, who records it in the run's audit.
//
// Inside the container, Forward turns the socket into a loopback TCP
// proxy for HTTPS_PROXY users (agent CLIs), and DialerFor/HTTPClient let
// aicr's own clients tunnel through the socket without any TCP at all.
//
// The package imports nothing of aicr, so both the daemon and the binary
// inside the container can use it.
package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Event is one connection the proxy allowed or refused.
type Event struct {
	At      time.Time
	Host    string
	Port    int
	Allowed bool
	Reason  string
}

// Options bound the proxy. The zero value of a field means its default.
type Options struct {
	// MaxTunnels caps concurrent tunnels and forwarded requests; past it
	// the proxy answers 503 and records a refusal. Default 32.
	MaxTunnels int
	// HeaderTimeout bounds reading a request's header. Default 10 s.
	HeaderTimeout time.Duration
	// IdleTimeout ends a tunnel with no traffic in either direction for
	// this long. Default 5 min (a model may think long before streaming).
	IdleTimeout time.Duration
	// DialTimeout bounds connecting to an allowed destination. Default 15 s.
	DialTimeout time.Duration
	// LookupIPAddr resolves host names at connect time; default
	// net.DefaultResolver. Tests inject a resolver to play DNS rebinding.
	LookupIPAddr func(ctx context.Context, host string) ([]net.IPAddr, error)
}

const (
	defaultMaxTunnels    = 32
	defaultHeaderTimeout = 10 * time.Second
	defaultIdleTimeout   = 5 * time.Minute
	defaultDialTimeout   = 15 * time.Second
	// maxHostLen keeps a hostile client from filling the audit with a
	// megabyte "host"; DNS names are at most 253 bytes.
	maxHostLen = 255
	// maxUnixPath is sun_path's size on Linux less the terminating NUL.
	maxUnixPath = 107
)

// Proxy is a running allowlisting proxy. Close stops it and ends every
// tunnel.
type Proxy struct {
	socketPath string
	ln         net.Listener
	srv        *http.Server
	allow      map[string]bool
	record     func(Event)
	opts       Options
	slots      chan struct{}

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // hijacked client conns and upstream conns
	wg     sync.WaitGroup
	served chan struct{}
}

// Listen serves an allowlisting proxy on a new unix socket at socketPath
// with the default bounds. allow lists "host:port" entries (see
// AllowlistFromURLs); record is called for every allowed and refused
// connection, from concurrent goroutines, before the client gets its
// answer, and may be nil.
func Listen(socketPath string, allow []string, record func(Event)) (*Proxy, error) {
	return ListenWith(socketPath, allow, record, Options{})
}

// ListenWith is Listen with explicit bounds.
func ListenWith(socketPath string, allow []string, record func(Event), opts Options) (*Proxy, error) {
	if len(socketPath) > maxUnixPath {
		return nil, fmt.Errorf("egress socket path %s is %d bytes, over the %d a unix socket allows: use a shorter data_dir", socketPath, len(socketPath), maxUnixPath)
	}
	set := make(map[string]bool, len(allow))
	for _, a := range allow {
		key, err := normalizeHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("egress allowlist entry %q: %w (want host:port, e.g. api.example.com:443)", a, err)
		}
		set[key] = true
	}
	if opts.MaxTunnels <= 0 {
		opts.MaxTunnels = defaultMaxTunnels
	}
	if opts.HeaderTimeout <= 0 {
		opts.HeaderTimeout = defaultHeaderTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = defaultIdleTimeout
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = defaultDialTimeout
	}
	if opts.LookupIPAddr == nil {
		opts.LookupIPAddr = net.DefaultResolver.LookupIPAddr
	}
	if record == nil {
		record = func(Event) {}
	}
	// A socket left by a crashed daemon would make Listen fail; nothing
	// else lives at this path, so remove it.
	if fi, err := os.Lstat(socketPath); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(socketPath)
	}
	ln, err := net.Listen("unix", socketPath) //nolint:noctx // binding a unix socket does not wait on anything; the proxy's life ends with Close, not a context
	if err != nil {
		return nil, fmt.Errorf("egress proxy: listen on %s: %w", socketPath, err)
	}
	// The container's non-root user (another uid, or a sub-uid when
	// rootless) must connect; the socket's directory is what keeps other
	// host users out (the run dir is 0700).
	if err := os.Chmod(socketPath, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress proxy: chmod %s: %w", socketPath, err)
	}
	p := &Proxy{
		socketPath: socketPath,
		ln:         ln,
		allow:      set,
		record:     record,
		opts:       opts,
		slots:      make(chan struct{}, opts.MaxTunnels),
		conns:      map[net.Conn]struct{}{},
		served:     make(chan struct{}),
	}
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		ReadHeaderTimeout: opts.HeaderTimeout,
		MaxHeaderBytes:    64 << 10,
		IdleTimeout:       opts.IdleTimeout,
		ErrorLog:          nil,
	}
	go func() {
		defer close(p.served)
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// SocketPath is where the proxy listens.
func (p *Proxy) SocketPath() string { return p.socketPath }

// Close stops accepting, ends every tunnel and forwarded request, waits
// for their goroutines and removes the socket.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.srv.Close()
	<-p.served
	p.wg.Wait()
	_ = os.Remove(p.socketPath)
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// track registers c so Close can end it; false when the proxy is closing.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	// Counted under mu so Close's Wait never races a late Add.
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		http.Error(w, "egress proxy: closing", http.StatusServiceUnavailable)
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()
	var authority string
	switch {
	case r.Method == http.MethodConnect:
		authority = r.Host
	case r.URL.IsAbs() && r.URL.Scheme == "http":
		authority = r.URL.Host
		if r.URL.Port() == "" {
			authority = net.JoinHostPort(r.URL.Hostname(), "80")
		}
	default:
		p.refuse(w, http.StatusForbidden, "", 0, fmt.Sprintf("only CONNECT host:port or an absolute http:// URL is proxied, not %s %s", r.Method, clip(r.RequestURI)))
		return
	}
	host, port, key, err := splitTarget(authority)
	if err != nil {
		p.refuse(w, http.StatusForbidden, clip(authority), 0, fmt.Sprintf("bad target %q: %v", clip(authority), err))
		return
	}
	if !p.allow[key] {
		p.refuse(w, http.StatusForbidden, host, port, "not in the egress allowlist")
		return
	}
	select {
	case p.slots <- struct{}{}:
		defer func() { <-p.slots }()
	default:
		p.refuse(w, http.StatusServiceUnavailable, host, port, fmt.Sprintf("too many open connections (limit %d)", p.opts.MaxTunnels))
		return
	}
	upstream, reason, err := p.dial(r.Context(), host, port)
	if reason != "" {
		p.refuse(w, http.StatusForbidden, host, port, reason)
		return
	}
	if err != nil {
		p.note(host, port, true, "allowlisted; connect failed: "+err.Error())
		http.Error(w, "egress proxy: connect to "+key+" failed", http.StatusBadGateway)
		return
	}
	if !p.track(upstream) {
		upstream.Close()
		http.Error(w, "egress proxy: closing", http.StatusServiceUnavailable)
		return
	}
	defer p.untrack(upstream)
	if r.Method == http.MethodConnect {
		p.note(host, port, true, "allowlisted")
		p.tunnel(w, upstream)
		return
	}
	p.note(host, port, true, "allowlisted (plain http)")
	p.forward(w, r, upstream)
}

// dial resolves host now and connects to one of its addresses. A name
// that resolves to a loopback, link-local or unspecified address is
// refused (reason set): an allowlisted public name must not be rebound
// to the daemon's own host or a cloud metadata service. Only an entry
// that names such an address itself (127.0.0.1:8000, [::1]:8000) or
// "localhost" reaches it.
func (p *Proxy) dial(ctx context.Context, host string, port int) (net.Conn, string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.DialTimeout)
	defer cancel()
	var addrs []netip.Addr
	declaredLocal := false
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
		declaredLocal = true
	} else {
		declaredLocal = host == "localhost" || strings.HasSuffix(host, ".localhost")
		ips, err := p.opts.LookupIPAddr(ctx, host)
		if err != nil {
			return nil, "", fmt.Errorf("resolve %s: %w", host, err)
		}
		for _, ip := range ips {
			a, ok := netip.AddrFromSlice(ip.IP)
			if ok {
				addrs = append(addrs, a.Unmap())
			}
		}
		if len(addrs) == 0 {
			return nil, "", fmt.Errorf("resolve %s: no addresses", host)
		}
	}
	if !declaredLocal {
		for _, a := range addrs {
			if a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsUnspecified() {
				return nil, fmt.Sprintf("%s resolves to %s, a loopback/link-local address (DNS rebinding guard; allowlist %s itself to allow it)", host, a, net.JoinHostPort(a.String(), strconv.Itoa(port))), nil
			}
		}
	}
	d := net.Dialer{}
	var lastErr error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a.String(), strconv.Itoa(port)))
		if err == nil {
			return c, "", nil
		}
		lastErr = err
	}
	return nil, "", lastErr
}

func (p *Proxy) tunnel(w http.ResponseWriter, upstream net.Conn) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "egress proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	if !p.track(client) {
		client.Close()
		return
	}
	defer p.untrack(client)
	_ = client.SetDeadline(time.Time{})
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// Bytes the client sent right after its CONNECT (a TLS ClientHello)
	// may already sit in the server's buffer.
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		if _, err := upstream.Write(b); err != nil {
			return
		}
	}
	p.pipe(client, upstream)
}

// pipe copies both ways until either side ends, Close is called, or
// neither direction carried a byte for IdleTimeout.
func (p *Proxy) pipe(a, b net.Conn) {
	var last struct {
		sync.Mutex
		t time.Time
	}
	last.t = time.Now()
	touch := func() { last.Lock(); last.t = time.Now(); last.Unlock() }
	idleFor := func() time.Duration { last.Lock(); defer last.Unlock(); return time.Since(last.t) }
	copyDir := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			_ = src.SetReadDeadline(time.Now().Add(p.opts.IdleTimeout))
			n, err := src.Read(buf)
			if n > 0 {
				touch()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() && idleFor() < p.opts.IdleTimeout {
					continue // the other direction is busy
				}
				return
			}
		}
	}
	done := make(chan struct{}, 2)
	go func() { copyDir(b, a); done <- struct{}{} }()
	go func() { copyDir(a, b); done <- struct{}{} }()
	<-done
	// One side ended: end both, so the other copy returns too.
	a.Close()
	b.Close()
	<-done
}

// forward sends one plain-HTTP request over upstream and streams the
// answer back (flushing, so server-sent events arrive as they are made).
// The connection is not reused: each request is checked and recorded.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, upstream net.Conn) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Close = true
	for _, h := range []string{"Proxy-Authorization", "Proxy-Connection", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		out.Header.Del(h)
	}
	idle := &idleConn{Conn: upstream, idle: p.opts.IdleTimeout}
	tr := &http.Transport{
		DialContext:       func(context.Context, string, string) (net.Conn, error) { return idle, nil },
		DisableKeepAlives: true,
		Proxy:             nil,
	}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(out)
	if err != nil {
		http.Error(w, "egress proxy: upstream request failed", http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if k == "Connection" || k == "Keep-Alive" {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// idleConn ends a forwarded request whose upstream goes quiet.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(b []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.idle))
	return c.Conn.Read(b)
}

func (p *Proxy) refuse(w http.ResponseWriter, status int, host string, port int, reason string) {
	p.note(host, port, false, reason)
	w.Header().Set("Connection", "close")
	http.Error(w, "egress proxy: refused: "+reason, status)
}

func (p *Proxy) note(host string, port int, allowed bool, reason string) {
	p.record(Event{At: time.Now(), Host: host, Port: port, Allowed: allowed, Reason: reason})
}

// splitTarget parses host:port and returns its canonical allowlist key.
func splitTarget(authority string) (host string, port int, key string, err error) {
	key, err = normalizeHostPort(authority)
	if err != nil {
		return "", 0, "", err
	}
	h, ps, _ := net.SplitHostPort(key)
	port, _ = strconv.Atoi(ps)
	return h, port, key, nil
}

// normalizeHostPort lowercases the host, canonicalises IP literals and
// checks the port, so "API.example.com:443" and "api.example.com:443"
// (or "[::1]:80" and "[0::1]:80") are one entry.
func normalizeHostPort(s string) (string, error) {
	host, ps, err := net.SplitHostPort(strings.TrimSpace(s))
	if err != nil {
		return "", err
	}
	if host == "" {
		return "", errors.New("no host")
	}
	if len(host) > maxHostLen {
		return "", errors.New("host too long")
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return "", fmt.Errorf("port %q is not 1-65535", ps)
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.Unmap().String()
	} else if strings.ContainsAny(host, "/ \t\r\n@%") {
		return "", errors.New("host has characters no host name has")
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

func clip(s string) string {
	if len(s) > maxHostLen {
		return s[:maxHostLen] + "…"
	}
	return s
}
