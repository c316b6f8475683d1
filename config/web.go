package config

import "time"

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
