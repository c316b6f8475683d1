package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLinkSignerGeneratesOneKeyAndKeepsIt(t *testing.T) {
	dir := t.TempDir()
	w := Web{Listen: "127.0.0.1:0", BaseURL: "https://aicr.example.com/"}
	s1, err := w.LinkSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := w.LinkSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !s1.Enabled() || !bytes.Equal(s1.Key, s2.Key) || s1.BaseURL != "https://aicr.example.com" {
		t.Fatalf("signers differ or are off: %+v %+v", s1.Enabled(), s2.Enabled())
	}
	fi, err := os.Stat(filepath.Join(dir, LinkKeyFileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	link := s1.Link(3, "view", time.Now())
	if link == "" {
		t.Fatal("no link")
	}
}

func TestLinkSignerWithoutBaseURLSignsNothing(t *testing.T) {
	s, err := Web{Listen: "127.0.0.1:0"}.LinkSigner(t.TempDir())
	if err != nil || s.Enabled() {
		t.Fatalf("signer = %+v, %v", s.Enabled(), err)
	}
}

func TestLinkSignerRefusesShortKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(path, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (Web{BaseURL: "https://x", LinkKeyFile: path}).LinkSigner(t.TempDir()); err == nil {
		t.Fatal("a short key file was accepted")
	}
}

// Each [web] problem is reported at its key's line, with what to set.
func TestWebConfigErrors(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "bad_web.toml"))
	if err == nil {
		t.Fatal("bad [web] accepted")
	}
	for _, want := range []string{
		`bad_web.toml:5: web.listen: must be host:port ("127.0.0.1:7071"), got "localhost"`,
		`bad_web.toml:6: web.base_url: must be an absolute http:// or https:// URL, got "ftp://aicr.example.com"`,
		`bad_web.toml:8: web.trusted_proxies: "10.0.0.0/33" is not an IP address or CIDR`,
		`bad_web.toml:8: web.trusted_proxies: "proxy.example.com" is not an IP address or CIDR`,
		`bad_web.toml:9: web.user_header: "X User" is not an HTTP header name`,
		`bad_web.toml:11: web.token_file: set token_env or token_file, not both`,
		`bad_web.toml:12: web.link_ttl: must be positive`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%s", want, err)
		}
	}
}

func TestWebConfigNeeds(t *testing.T) {
	base := "[daemon]\nsecret_env = \"X\"\n[[repo]]\nname = \"main\"\nkind = \"svn\"\nurl = \"file:///x\"\n"
	cases := []struct{ name, web, want string }{
		{"listen without base_url and auth", "[web]\nlisten = \"127.0.0.1:7071\"\n",
			`:7: web.base_url: missing`},
		{"listen without auth", "[web]\nlisten = \"127.0.0.1:7071\"\nbase_url = \"https://a.example\"\n",
			`:7: web.auth: missing: set auth = "proxy"`},
		{"proxy without trusted_proxies", "[web]\nlisten = \"127.0.0.1:7071\"\nbase_url = \"https://a.example\"\nauth = \"proxy\"\n",
			`web.trusted_proxies: auth = "proxy" needs the addresses`},
		{"token without a token", "[web]\nlisten = \"127.0.0.1:7071\"\nbase_url = \"https://a.example\"\nauth = \"token\"\n",
			`:10: web.auth: auth = "token" needs token_env or token_file`},
		{"unknown auth", "[web]\nlisten = \"127.0.0.1:7071\"\nbase_url = \"https://a.example\"\nauth = \"ldap\"\n",
			`:10: web.auth: must be "proxy" or "token", got "ldap"`},
		{"base_url with a password", "[web]\nbase_url = \"https://u:pw@a.example\"\n",
			`web.base_url: must not carry a user or password`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(writeTemp(t, base+c.web))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want %q, got %v", c.want, err)
			}
			if strings.Contains(err.Error(), "pw@") {
				t.Errorf("the password is in the error: %v", err)
			}
		})
	}
}

func TestWebConfigDefaultsAndPaths(t *testing.T) {
	cfg, err := Load(writeTemp(t, `[daemon]
secret_env = "X"
[web]
listen = "127.0.0.1:7071"
base_url = "https://aicr.example.com"
auth = "token"
token_file = "web-token"
link_key_file = "keys/link.key"
[[repo]]
name = "main"
kind = "svn"
url = "file:///x"
`))
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Web
	if w.UserHeader != DefaultUserHeader || w.LinkTTL != 90*24*time.Hour {
		t.Errorf("defaults: %q %s", w.UserHeader, w.LinkTTL)
	}
	dir := filepath.Dir(cfg.Path)
	if w.TokenFile != filepath.Join(dir, "web-token") || w.LinkKeyFile != filepath.Join(dir, "keys", "link.key") {
		t.Errorf("paths not resolved against the config file: %s %s", w.TokenFile, w.LinkKeyFile)
	}
	if !w.Enabled() {
		t.Error("not enabled")
	}
}
