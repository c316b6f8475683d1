package web

import (
	"crypto/hmac"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/im"
)

// csrfTTL is how long a form's token works: long enough to read a
// finding before acting on it.
const csrfTTL = 4 * time.Hour

// csrfToken is a form's token: when it was issued and an HMAC of that
// time and what the form is bound to (a signed link, or a user and a
// finding), so another site can neither forge one nor reuse one for
// another link, user or finding.
func (s *server) csrfToken(binding string) string {
	ts := strconv.FormatInt(s.now().Unix(), 10)
	return ts + "." + sign(s.csrfKey, binding+"\n"+ts)
}

func (s *server) csrfValid(binding, token string) bool {
	ts, mac, ok := strings.Cut(token, ".")
	issued, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil {
		return false
	}
	age := s.now().Sub(time.Unix(issued, 0))
	if age > csrfTTL || age < -time.Minute {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(sign(s.csrfKey, binding+"\n"+ts)))
}

// formOK parses a POST form and checks that it came from this site's own
// page bound to binding; it answers the request itself when not.
func (s *server) formOK(w http.ResponseWriter, r *http.Request, binding string) bool {
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, s.t(r, im.KeyWebErrBadForm), s.t(r, im.KeyWebErrBadFormMsg, err.Error()))
		return false
	}
	if !s.sameOrigin(r) {
		s.fail(w, r, http.StatusForbidden, s.t(r, im.KeyWebErrRefused), s.t(r, im.KeyWebErrCrossSite))
		return false
	}
	if !s.csrfValid(binding, r.PostFormValue("csrf")) {
		s.fail(w, r, http.StatusForbidden, s.t(r, im.KeyWebErrFormExpired), s.t(r, im.KeyWebErrFormExpiredMsg))
		return false
	}
	return true
}

// sameOrigin refuses a POST a browser says came from another site. Under
// Referrer-Policy: no-referrer a browser sends "Origin: null" with a
// form, so Sec-Fetch-Site, which browsers send with every request, has
// the first word; Origin decides for a browser that sends no
// Sec-Fetch-Site, and the CSRF token in every case.
func (s *server) sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return true
	case "":
	default: // cross-site, same-site: a page of another origin
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	b, err := url.Parse(s.cfg.BaseURL)
	return err == nil && b.Host != "" && strings.EqualFold(b.Host, u.Host) && b.Scheme == u.Scheme
}
