package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/triggers"
)

// checkDaemon asks the daemon's /healthz; remoteHost is set when the
// daemon is on another host.
func checkDaemon(ctx context.Context, cfg *daemon.Config) (Check, string) {
	c := Check{Name: CheckDaemon}
	u := redact(cfg.Notify.URL)
	host := ""
	if pu, err := url.Parse(cfg.Notify.URL); err == nil {
		host = pu.Hostname()
	}
	remote := ""
	if host != "" && !isLocalHost(ctx, host) {
		remote = host
	}
	if err := probeHealth(ctx, cfg.Notify.URL, cfg.Notify.Timeout); err != nil {
		c.Detail = fmt.Sprintf("no answer from %s/healthz: %v", strings.TrimSuffix(u, "/"), err)
		if remote != "" {
			c.Fix = fmt.Sprintf("the daemon runs on %s: check it is running there and that this host can reach it ([daemon] listen is loopback-only by default)", remote)
		} else {
			c.Fix = "start the daemon: aicr daemon --config " + shellQuote(cfg.Path) + " (as its service user), or set [notify] url to where it listens"
		}
		return c, remote
	}
	c.Status = StatusOK
	if remote != "" {
		c.Detail = fmt.Sprintf("%s/healthz answers; the daemon runs on another host (%s): run aicr doctor there for its side", strings.TrimSuffix(u, "/"), remote)
	} else {
		c.Detail = fmt.Sprintf("%s/healthz answers (this host)", strings.TrimSuffix(u, "/"))
	}
	return c, remote
}

func probeHealth(ctx context.Context, base string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = triggers.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return ue.Err // the URL is named by the caller, redacted
		}
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}

// isLocalHost reports whether host names this machine: loopback, one of
// its interface addresses, or its hostname.
func isLocalHost(ctx context.Context, host string) bool {
	if host == "localhost" {
		return true
	}
	if h, err := os.Hostname(); err == nil && strings.EqualFold(h, host) {
		return true
	}
	ips := []net.IP{net.ParseIP(host)}
	if ips[0] == nil {
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupIP(lctx, "ip", host)
		if err != nil {
			return false
		}
		ips = addrs
	}
	local, _ := net.InterfaceAddrs()
	for _, ip := range ips {
		if ip.IsLoopback() || ip.IsUnspecified() {
			return true
		}
		for _, a := range local {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}
