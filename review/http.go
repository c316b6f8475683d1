package review

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/aicr-dev/aicr/mcperr"
)

// HTTPPath is where the Streamable HTTP transport serves MCP.
const HTTPPath = "/mcp"

// ErrNotLoopback: the HTTP transport was asked to listen where other hosts
// can reach it. The tools write into a run directory and need no
// authentication, so anything but loopback must be asked for explicitly.
var ErrNotLoopback = errors.New("listen address is not loopback")

// HTTPOptions configure the Streamable HTTP transport.
type HTTPOptions struct {
	// Addr is host:port; a bare port or ":port" means 127.0.0.1:port, and
	// port 0 picks a free one.
	Addr string
	// AllowNonLoopback permits addresses other hosts can reach.
	AllowNonLoopback bool
	// Ready, when set, is called with the endpoint URL once the listener
	// is open, before any request is served.
	Ready func(url string)
	// Logger receives transport diagnostics; nil means stderr.
	Logger *slog.Logger
}

// ListenAddr resolves addr as HTTPOptions.Addr describes and refuses a
// non-loopback host unless allowNonLoopback. A host name other than
// localhost counts as non-loopback: what it resolves to is not ours to
// check.
func ListenAddr(addr string, allowNonLoopback bool) (string, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return "", fmt.Errorf("http address: empty")
	}
	if !strings.Contains(addr, ":") {
		addr = ":" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("http address %q: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	addr = net.JoinHostPort(host, port)
	if allowNonLoopback || isLoopback(host) {
		return addr, nil
	}
	return "", fmt.Errorf("http address %s: %w (pass --allow-non-loopback to listen there anyway)", addr, ErrNotLoopback)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// ServeHTTP runs the tool server over MCP Streamable HTTP at
// http://<addr>/mcp until ctx ends. Every session shares one state file,
// exactly as the stdio transport writes it.
func ServeHTTP(ctx context.Context, opts ServerOptions, hopts HTTPOptions) error {
	addr, err := ListenAddr(hopts.Addr, hopts.AllowNonLoopback)
	if err != nil {
		return err
	}
	s, th, err := newServer(opts)
	if err != nil {
		return err
	}
	logger := hopts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("serve mcp http: %w", err)
	}
	mux := http.NewServeMux()
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	h := server.NewStreamableHTTPServer(s,
		server.WithStreamableHTTPServer(srv),
		server.WithStreamableHTTPLogger(logger),
	)
	// The same bound as the stdio transport: one message, not a flood.
	mux.Handle(HTTPPath, http.MaxBytesHandler(h, mcperr.MaxLineBytes))
	if hopts.Ready != nil {
		hopts.Ready("http://" + ln.Addr().String() + HTTPPath)
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return errors.Join(fmt.Errorf("serve mcp http: %w", err), th.flush())
	case <-ctx.Done():
	}
	// The grace period lets in-flight answers out; then the refusals only
	// counted in memory are written.
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := h.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return errors.Join(fmt.Errorf("shut down mcp http: %w", err), th.flush())
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return errors.Join(fmt.Errorf("serve mcp http: %w", err), th.flush())
	}
	return th.flush()
}
