// Command probe runs inside a --network none container with the egress
// socket mounted and reports what it can reach; the Podman test reads
// its output. Each line is "<check> ok" or "<check> FAIL <why>".
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/aicr-dev/aicr/sandbox/egress"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: probe SOCKET ALLOWED_URL REFUSED_URL")
		os.Exit(2)
	}
	sock, allowed, refused := os.Args[1], os.Args[2], os.Args[3]
	failed := false
	report := func(check string, err error) {
		if err != nil {
			failed = true
			fmt.Printf("%s FAIL %v\n", check, err)
			return
		}
		fmt.Printf("%s ok\n", check)
	}
	client := egress.HTTPClient(sock)
	client.Timeout = 20 * time.Second

	report("dialer-allowed", expectBody(client, allowed))
	report("dialer-refused", expectStatus(client, refused, "403"))

	u, _ := url.Parse(allowed)
	d := net.Dialer{Timeout: 3 * time.Second}
	if c, err := d.Dial("tcp", u.Host); err == nil {
		c.Close()
		report("direct-blocked", fmt.Errorf("dialled %s without the proxy", u.Host))
	} else {
		report("direct-blocked", nil)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		report("forward-allowed", err)
	} else {
		go egress.ForwardListener(ctx, ln, sock)
		proxyURL, _ := url.Parse("http://" + ln.Addr().String())
		fwd := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
		report("forward-allowed", expectBody(fwd, allowed))
		report("forward-refused", expectStatus(fwd, refused, "403"))
	}
	if failed {
		os.Exit(1)
	}
}

func expectBody(c *http.Client, u string) error {
	resp, err := c.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "reached" {
		return fmt.Errorf("%s: %s %q", u, resp.Status, b)
	}
	return nil
}

// expectStatus wants an error or response naming status: the dialer
// reports a refused CONNECT as an error, a proxy client as a response.
func expectStatus(c *http.Client, u, status string) error {
	resp, err := c.Get(u)
	if err != nil {
		if containsStr(err.Error(), status) {
			return nil
		}
		return err
	}
	resp.Body.Close()
	if containsStr(resp.Status, status) {
		return nil
	}
	return fmt.Errorf("%s: %s, want %s", u, resp.Status, status)
}

func containsStr(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
