package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/secret"
)

// sessionCookie holds a token sign-in: its expiry and an HMAC keyed by
// the token, so changing the token signs everyone out.
const sessionCookie = "aicr_session"

// sessionTTL is how long a token sign-in lasts.
const sessionTTL = 12 * time.Hour

// tokenActor is who a token sign-in acts as: the token names nobody.
const tokenActor = "token"

// maxActorLen bounds a user name from the proxy header or a link form.
const maxActorLen = 64

type userKey struct{}

// viewer is who reads a page: a signed-in user, or a signed link's
// holder (user "").
func viewer(r *http.Request) string {
	u, _ := r.Context().Value(userKey{}).(string)
	return u
}

// authed serves h to signed-in users only: the proxy's user from a
// trusted address, or a token sign-in.
func (s *server) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var user string
		switch s.cfg.Auth {
		case config.WebAuthProxy:
			var msg string
			if user, msg = s.proxyUser(r); user == "" {
				s.fail(w, r, http.StatusUnauthorized, s.t(r, im.KeyWebErrSignInRequired), msg)
				return
			}
		case config.WebAuthToken:
			if user = s.tokenUser(r); user == "" {
				s.renderLogin(w, r, http.StatusUnauthorized, r.URL.RequestURI(), "")
				return
			}
		default:
			s.fail(w, r, http.StatusUnauthorized, s.t(r, im.KeyWebErrSignInRequired), s.t(r, im.KeyWebErrAuthOff))
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	}
}

// proxyUser is the user the reverse proxy names, trusted only when the
// request comes from one of trusted_proxies; otherwise "" and why.
func (s *server) proxyUser(r *http.Request) (user, why string) {
	addr := remoteAddr(r)
	if !s.trusted(addr) {
		return "", s.t(r, im.KeyWebErrUntrusted, addr.String())
	}
	user = cleanName(r.Header.Get(s.cfg.UserHeader))
	if user == "" {
		return "", s.t(r, im.KeyWebErrNoUser, s.cfg.UserHeader)
	}
	return user, ""
}

func (s *server) trusted(a netip.Addr) bool {
	for _, p := range s.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientAddr is where a person acted from, for the audit trail: the
// connection's address, or behind a trusted proxy the last address in
// X-Forwarded-For that is not itself a trusted proxy (the ones before it
// are whatever the client claimed).
func (s *server) clientAddr(r *http.Request) string {
	addr := remoteAddr(r)
	if !s.trusted(addr) {
		return addr.String()
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		if a = a.Unmap(); !s.trusted(a) {
			return a.String()
		}
	}
	return addr.String()
}

func remoteAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

// readToken reads the bearer token at use, so a rotated token file takes
// effect without a restart; "" when it cannot be read.
func (s *server) readToken() string {
	v, err := secret.Ref{Env: s.cfg.TokenEnv, File: s.cfg.TokenFile}.Read()
	// Logged when the answer changes, not at every request.
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if old := s.tokenErr.Swap(&msg); old == nil || *old != msg {
		if err != nil {
			s.log.Warn("web: cannot read the [web] token; token sign-in is refused until it can", "err", err)
		} else if old != nil {
			s.log.Info("web: the [web] token is readable again")
		}
	}
	if err != nil {
		return ""
	}
	return strings.TrimSpace(v.Reveal())
}

// tokenUser is tokenActor for a request with the bearer token or a
// valid session cookie, else "".
func (s *server) tokenUser(r *http.Request) string {
	token := s.readToken()
	if token == "" {
		return ""
	}
	if got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1 {
			return tokenActor
		}
		return ""
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return ""
	}
	exp, mac, ok := strings.Cut(c.Value, ".")
	expUnix, err := strconv.ParseInt(exp, 10, 64)
	if !ok || err != nil || s.now().Unix() >= expUnix {
		return ""
	}
	if !hmac.Equal([]byte(mac), []byte(sessionMAC(token, exp))) {
		return ""
	}
	return tokenActor
}

func sessionMAC(token, exp string) string {
	return sign(derive([]byte(token), "aicr-web-session/v1"), exp)
}

func (s *server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Auth != config.WebAuthToken {
		http.Redirect(w, r, s.prefix+"/findings", http.StatusSeeOther)
		return
	}
	s.renderLogin(w, r, http.StatusOK, r.URL.Query().Get("next"), "")
}

func (s *server) renderLogin(w http.ResponseWriter, r *http.Request, status int, next, msg string) {
	s.render(w, r, status, "login", page{Title: s.t(r, im.KeyWebTitleSignIn), Data: map[string]string{
		"Next": safeNext(next), "CSRF": s.csrfToken("login"), "Error": msg,
	}})
}

func (s *server) login(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Auth != config.WebAuthToken {
		s.fail(w, r, http.StatusNotFound, s.t(r, im.KeyWebErrNotFound), s.t(r, im.KeyWebErrTokenOff))
		return
	}
	if !s.formOK(w, r, "login") {
		return
	}
	next := safeNext(r.PostFormValue("next"))
	token := s.readToken()
	got := strings.TrimSpace(r.PostFormValue("token"))
	if token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
		s.log.Info("web sign-in refused", "remote", s.clientAddr(r))
		s.renderLogin(w, r, http.StatusUnauthorized, next, s.t(r, im.KeyWebErrWrongToken))
		return
	}
	exp := strconv.FormatInt(s.now().Add(sessionTTL).Unix(), 10)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: exp + "." + sessionMAC(token, exp), Path: s.prefix + "/",
		MaxAge: int(sessionTTL.Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure || r.TLS != nil})
	s.log.Info("web sign-in", "remote", s.clientAddr(r))
	http.Redirect(w, r, s.prefix+next, http.StatusSeeOther)
}

func (s *server) logout(w http.ResponseWriter, r *http.Request) {
	if !s.formOK(w, r, "logout") {
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: s.prefix + "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secure || r.TLS != nil})
	http.Redirect(w, r, s.prefix+"/login", http.StatusSeeOther)
}

// safeNext keeps a post-sign-in redirect on this site: a path, never
// "//host" or "/\host", which browsers read as another site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.ContainsAny(next, "\r\n") {
		return "/findings"
	}
	return next
}

// cleanName is a person's name as the audit trail keeps it: sanitized,
// one line, bounded.
func cleanName(s string) string {
	s = strings.Join(strings.Fields(im.Sanitize(s)), " ")
	if r := []rune(s); len(r) > maxActorLen {
		s = string(r[:maxActorLen])
	}
	return s
}

// derive is a subkey of key for one purpose, so the link key's HMACs for
// links, CSRF tokens and sessions never collide.
func derive(key []byte, purpose string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

func sign(key []byte, msg string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
