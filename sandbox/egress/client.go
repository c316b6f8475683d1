package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Names inside a run directory; rundir.Layout.EgressSocketPath is the same
// path (a test keeps them equal).
const (
	DirName    = "egress"
	SocketName = "proxy.sock"
	// ContainerDir is where the runner mounts the run's egress directory.
	ContainerDir = "/run/aicr-egress"
	// ContainerSocket is the socket's path inside the container.
	ContainerSocket = ContainerDir + "/" + SocketName
	// ForwardAddr is the loopback address Forward listens on inside the
	// container; HTTPS_PROXY/HTTP_PROXY point at http://ForwardAddr.
	ForwardAddr = "127.0.0.1:3128"
)

// SocketMount is what the runner mounts for the container to reach the
// proxy: HostDir (holding only the socket) at ContainerDir, read-only
// (connecting to a socket works on a read-only mount, and the agent then
// cannot replace the socket; the Podman test mounts it so).
type SocketMount struct {
	HostDir         string
	ContainerDir    string
	ContainerSocket string
}

// ForRun starts the proxy of one run at <runDir>/egress/proxy.sock. The
// egress directory is 0755 and the socket 0666 so the container's user
// (any uid, rootful or rootless) can connect; the run directory above
// them is private to the daemon user, which keeps other host users out.
func ForRun(runDir string, allow []string, record func(Event)) (*Proxy, SocketMount, error) {
	dir := filepath.Join(runDir, DirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, SocketMount{}, fmt.Errorf("egress: create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, SocketMount{}, fmt.Errorf("egress: chmod %s: %w", dir, err)
	}
	p, err := Listen(filepath.Join(dir, SocketName), allow, record)
	if err != nil {
		return nil, SocketMount{}, err
	}
	return p, SocketMount{HostDir: dir, ContainerDir: ContainerDir, ContainerSocket: ContainerSocket}, nil
}

// Forward listens on listenAddr (a loopback address) and pipes every
// connection to the proxy's unix socket, until ctx ends. Inside the
// container this makes HTTPS_PROXY=http://<listenAddr> work for programs
// that only speak TCP.
func Forward(ctx context.Context, listenAddr, socketPath string) error {
	host, _, err := net.SplitHostPort(listenAddr)
	if err != nil {
		return fmt.Errorf("egress forward: listen address %q: %w", listenAddr, err)
	}
	if ip, err := netip.ParseAddr(host); err != nil || !ip.IsLoopback() {
		return fmt.Errorf("egress forward: listen address %q is not a loopback IP; the forwarder must not be reachable from outside the container", listenAddr)
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", listenAddr)
	if err != nil {
		return fmt.Errorf("egress forward: listen on %s: %w", listenAddr, err)
	}
	return ForwardListener(ctx, ln, socketPath)
}

// ForwardListener is Forward on a listener the caller opened (tests use
// port 0). It closes ln and every piped connection when ctx ends.
func ForwardListener(ctx context.Context, ln net.Listener, socketPath string) error {
	var d net.Dialer
	return splice(ctx, ln, "egress forward",
		func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "unix", socketPath) },
		func(c net.Conn) {
			// The client sees a proxy error, not a silent hang.
			_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
		})
}

// splice accepts connections on ln and pipes each, both ways, to a
// connection dialUp opens (onDialFail answers the client when it cannot),
// until ctx ends; then it closes ln and every connection and waits for
// the pipes. name prefixes its errors.
func splice(ctx context.Context, ln net.Listener, name string, dialUp func(context.Context) (net.Conn, error), onDialFail func(net.Conn)) error {
	var (
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
		wg    sync.WaitGroup
	)
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	defer wg.Wait()
	track := func(c net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			return false
		}
		conns[c] = struct{}{}
		return true
	}
	untrack := func(c net.Conn) {
		mu.Lock()
		delete(conns, c)
		mu.Unlock()
		c.Close()
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("%s: accept: %w", name, err)
		}
		if !track(c) {
			c.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer untrack(c)
			up, err := dialUp(ctx)
			if err != nil {
				if onDialFail != nil {
					onDialFail(c)
				}
				return
			}
			if !track(up) {
				up.Close()
				return
			}
			defer untrack(up)
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(up, c); closeWrite(up); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, up); closeWrite(c); done <- struct{}{} }()
			<-done
			<-done
		}()
	}
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		c.Close()
	}
}

// DialerFor returns a dial function that reaches addr through the proxy
// at socketPath: it dials the socket, sends CONNECT addr and returns the
// tunnel. A refusal is an error carrying the proxy's reason.
func DialerFor(socketPath string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		switch network {
		case "tcp", "tcp4", "tcp6":
		default:
			return nil, fmt.Errorf("egress dial %s %s: only tcp goes through the proxy", network, addr)
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", socketPath)
		if err != nil {
			return nil, fmt.Errorf("egress dial %s: proxy socket %s: %w", addr, socketPath, err)
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
		if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr); err != nil {
			c.Close()
			return nil, fmt.Errorf("egress dial %s: %w", addr, err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}) //nolint:bodyclose // a CONNECT answer's body is the tunnel connection itself: c.Close() ends it, or the caller gets c
		if err != nil {
			c.Close()
			if ctx.Err() != nil {
				return nil, fmt.Errorf("egress dial %s: %w", addr, ctx.Err())
			}
			return nil, fmt.Errorf("egress dial %s: read proxy answer: %w", addr, err)
		}
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			c.Close()
			return nil, fmt.Errorf("egress dial %s: proxy answered %s: %s", addr, resp.Status, strings.TrimSpace(string(body)))
		}
		if br.Buffered() > 0 {
			return &bufferedConn{Conn: c, r: br}, nil
		}
		return c, nil
	}
}

type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// HTTPClient is an http.Client whose every connection, to http and https
// targets alike, is a tunnel through the proxy at socketPath. It ignores
// HTTP(S)_PROXY: the socket is the only way out.
func HTTPClient(socketPath string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:             nil,
		DialContext:       DialerFor(socketPath),
		ForceAttemptHTTP2: true,
		MaxIdleConns:      4,
	}}
}

// AllowlistFromURLs turns model base URLs into allowlist entries
// (host:port; port 443 for https and 80 for http when the URL has none).
func AllowlistFromURLs(urls ...string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, raw := range urls {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("egress allowlist: URL %q: %w", raw, err)
		}
		port := u.Port()
		switch u.Scheme {
		case "https":
			if port == "" {
				port = "443"
			}
		case "http":
			if port == "" {
				port = "80"
			}
		default:
			return nil, fmt.Errorf("egress allowlist: URL %q: scheme must be http or https", raw)
		}
		if u.Hostname() == "" {
			return nil, fmt.Errorf("egress allowlist: URL %q has no host", raw)
		}
		key, err := normalizeHostPort(net.JoinHostPort(u.Hostname(), port))
		if err != nil {
			return nil, fmt.Errorf("egress allowlist: URL %q: %w", raw, err)
		}
		if !seen[key] {
			seen[key] = true
			out = append(out, key)
		}
	}
	return out, nil
}
