package config

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/secret"
	"github.com/aicr-dev/aicr/weblink"
)

// Web is the [web] table: the daemon's own web page of findings and
// runs, and the signed links reports carry to it. Off unless Listen is
// set.
type Web struct {
	// Listen is the address the page is served on ("127.0.0.1:7071");
	// "" serves nothing.
	Listen string `toml:"listen"`
	// BaseURL is the URL readers' browsers reach (the shop's reverse
	// proxy), which report links start with.
	BaseURL string `toml:"base_url"`
	// Auth is how read pages authenticate: "proxy" (a trusted header set
	// by the shop's reverse proxy with SSO, from TrustedProxies only) or
	// "token". Signed finding links work without it.
	Auth string `toml:"auth"`
	// UserHeader is the header the proxy names the signed-in user in
	// (default X-Forwarded-User); TrustedProxies are the addresses or
	// CIDRs it may come from.
	UserHeader     string   `toml:"user_header"`
	TrustedProxies []string `toml:"trusted_proxies"`
	// TokenEnv / TokenFile hold the bearer token of auth = "token".
	TokenEnv  string `toml:"token_env"`
	TokenFile string `toml:"token_file"`
	// LinkKeyFile holds the key finding links are signed with; when
	// unset the daemon generates one in data_dir (web-link.key). Daemons
	// sharing a store must share it.
	LinkKeyFile string `toml:"link_key_file"`
	// LinkTTL is how long a finding link works (default 90 days).
	LinkTTL time.Duration `toml:"link_ttl"`
}

// Enabled reports whether the daemon serves the web page.
func (w Web) Enabled() bool { return w.Listen != "" }

// LinkKeyFileName is the link key the daemon generates in its data_dir
// when [web] link_key_file is not set.
const LinkKeyFileName = "web-link.key"

// LinkSigner is the signer of the report links to the web page: the key
// from link_key_file, else the one in dataDir (generated, 0600, on first
// use), and base_url. A config without [web] base_url signs no links
// (the zero Signer), so reports carry none.
func (w Web) LinkSigner(dataDir string) (weblink.Signer, error) {
	if w.BaseURL == "" {
		return weblink.Signer{}, nil
	}
	key, err := w.linkKey(dataDir)
	if err != nil {
		return weblink.Signer{}, err
	}
	return weblink.Signer{Key: key, BaseURL: strings.TrimRight(w.BaseURL, "/"), TTL: w.LinkTTL}, nil
}

func (w Web) linkKey(dataDir string) ([]byte, error) {
	if w.LinkKeyFile != "" {
		v, err := secret.Ref{File: w.LinkKeyFile}.Read()
		if err != nil {
			return nil, fmt.Errorf("web.link_key_file: %w", err)
		}
		if len(v.Reveal()) < weblink.MinKeyBytes {
			return nil, fmt.Errorf("web.link_key_file %s: the key is shorter than %d bytes: write one with `head -c 32 /dev/urandom | base64 > FILE`",
				w.LinkKeyFile, weblink.MinKeyBytes)
		}
		return []byte(v.Reveal()), nil
	}
	path := filepath.Join(dataDir, LinkKeyFileName)
	data, err := secret.ReadFile(path, secret.MaxFileBytes)
	if err == nil && len(strings.TrimSpace(string(data))) >= weblink.MinKeyBytes {
		return []byte(strings.TrimSpace(string(data))), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("web link key %s: %w", path, err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("generate web link key: %w", err)
	}
	key := base64.RawURLEncoding.EncodeToString(raw)
	// O_EXCL: when two processes start at once, the second reads the
	// first's key instead of replacing it under links already signed.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		if data, rerr := secret.ReadFile(path, secret.MaxFileBytes); rerr == nil && len(strings.TrimSpace(string(data))) >= weblink.MinKeyBytes {
			return []byte(strings.TrimSpace(string(data))), nil
		}
		return nil, fmt.Errorf("web link key %s is shorter than %d bytes: remove it and restart, or set [web] link_key_file", path, weblink.MinKeyBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("write web link key: %w", err)
	}
	_, werr := f.WriteString(key + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		return nil, fmt.Errorf("write web link key %s: %w", path, err)
	}
	return []byte(key), nil
}
