package daemon

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/web"
)

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The daemon serves [web] on its own listener, with the link key it
// generates in data_dir, and stops it with itself.
func TestServeStartsTheWebPage(t *testing.T) {
	cfg, _ := newSVNConfig(t)
	addr := freePort(t)
	tokenFile := filepath.Join(t.TempDir(), "web-token")
	if err := os.WriteFile(tokenFile, []byte("web-secret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Web = config.Web{Listen: addr, BaseURL: "http://" + addr, Auth: config.WebAuthToken, TokenFile: tokenFile, LinkTTL: time.Hour}
	d := startDaemon(t, cfg)
	get := func(token string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", "http://"+addr+"/runs", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultClient.Do(req)
	}
	resp, err := get("web-secret-token")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Security-Policy") != web.CSP || !strings.Contains(string(body), "<h1>Runs") {
		t.Fatalf("GET /runs: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	if resp, err := get("wrong"); err != nil || resp.StatusCode != 401 {
		t.Errorf("wrong token: %v %v", resp, err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Daemon.DataDir, config.LinkKeyFileName)); err != nil {
		t.Errorf("no link key generated: %v", err)
	}
	d.stop()
	if _, err := get("web-secret-token"); err == nil {
		t.Error("the web page still answers after the daemon stopped")
	}
}

// A [web] listen address that is taken ends the start with the reason.
func TestServeRefusesATakenWebPort(t *testing.T) {
	cfg, _ := newSVNConfig(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg.Web = config.Web{Listen: ln.Addr().String(), BaseURL: "http://aicr.test", Auth: config.WebAuthToken, TokenEnv: "X"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = Serve(ctx, Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "[web] listen "+ln.Addr().String()) {
		t.Fatalf("Serve = %v", err)
	}
}
