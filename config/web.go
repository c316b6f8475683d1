package config

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/im"
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
	// Language is the language of the page's every word ("en" or
	// "zh-CN"; default [report] language); a reader's ?lang= overrides
	// it for their browser.
	Language im.Language `toml:"language"`
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

// DefaultUserHeader is the header auth = "proxy" reads the signed-in user
// from when [web] user_header is not set.
const DefaultUserHeader = "X-Forwarded-User"

// The [web] auth modes.
const (
	WebAuthProxy = "proxy"
	WebAuthToken = "token"
)

// settle applies [web]'s defaults, resolves its files against the config
// file's directory and returns its problems. A [web] without listen
// serves nothing, but its link keys still sign report links (a daemon
// whose links another daemon serves), so whatever is set is checked.
func (w *Web) settle(dir string) []fieldProblem {
	if w.UserHeader == "" {
		w.UserHeader = DefaultUserHeader
	}
	if w.LinkTTL == 0 {
		w.LinkTTL = weblink.DefaultTTL
	}
	for _, p := range []*string{&w.TokenFile, &w.LinkKeyFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	var out []fieldProblem
	add := func(key, format string, args ...any) {
		out = append(out, fieldProblem{"web." + key, fmt.Sprintf(format, args...)})
	}
	if w.Listen != "" {
		if err := checkHostPort(w.Listen); err != nil {
			add("listen", "%v", err)
		}
		if w.BaseURL == "" {
			add("base_url", `missing: set it to the URL readers' browsers reach the page at ("https://aicr.example.com"), which report links start with`)
		}
		if w.Auth == "" {
			add("auth", `missing: set auth = "proxy" (a reverse proxy with SSO names the user) or auth = "token"`)
		}
	}
	if w.BaseURL != "" {
		if err := checkBaseURL(w.BaseURL); err != nil {
			add("base_url", "%v", err)
		}
	}
	switch w.Auth {
	case "":
	case WebAuthProxy:
		out = append(out, w.checkProxy()...)
	case WebAuthToken:
		if w.TokenEnv == "" && w.TokenFile == "" {
			add("auth", `auth = "token" needs token_env or token_file: the bearer token readers sign in with`)
		}
	default:
		add("auth", `must be "proxy" or "token", got %q`, w.Auth)
	}
	if w.TokenEnv != "" && w.TokenFile != "" {
		add("token_file", "set token_env or token_file, not both")
	}
	if w.LinkTTL < 0 {
		add("link_ttl", `must be positive ("2160h" is 90 days), got %s`, w.LinkTTL)
	}
	return out
}

// checkProxy checks auth = "proxy": the addresses the user header is
// trusted from, and the header's name.
func (w *Web) checkProxy() []fieldProblem {
	var out []fieldProblem
	if len(w.TrustedProxies) == 0 {
		out = append(out, fieldProblem{"web.trusted_proxies", `auth = "proxy" needs the addresses or CIDRs of the reverse proxy (["127.0.0.1", "10.0.0.0/24"]): the user header is trusted from those only`})
	}
	for _, p := range w.TrustedProxies {
		if _, err := ParseTrustedProxy(p); err != nil {
			out = append(out, fieldProblem{"web.trusted_proxies", err.Error()})
		}
	}
	if !validHeaderName(w.UserHeader) {
		out = append(out, fieldProblem{"web.user_header", fmt.Sprintf("%q is not an HTTP header name", w.UserHeader)})
	}
	return out
}

// ParseTrustedProxy reads one [web] trusted_proxies entry: an IP address
// (a single host) or a CIDR.
func ParseTrustedProxy(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not an IP address or CIDR (10.0.0.0/24)", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP address or CIDR (10.0.0.0/24)", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func checkHostPort(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("must be host:port (\"127.0.0.1:7071\"), got %q", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port must be a number from 0 to 65535, got %q", port)
	}
	return nil
}

func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("must be an absolute http:// or https:// URL, got %q", s)
	case u.Host == "":
		return fmt.Errorf("has no host: %q", s)
	case u.User != nil:
		return fmt.Errorf("must not carry a user or password (it goes into every report link): %q", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("must not have a query or fragment (links append their own path and query): %q", s)
	}
	return nil
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}
