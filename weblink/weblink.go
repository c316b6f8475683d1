// Package weblink signs and checks the capability links a report carries
// for each of its findings: one URL per finding and action, HMAC-signed
// with the daemon's link key and expiring, so a reader who got the report
// can open the finding's page or act on it without an account, and nobody
// can forge a link for another finding or action. A GET of an action link
// only shows what it would do; the page's form POSTs it with a CSRF token
// (package web).
//
// It imports nothing of aicr: the daemon signs links when it plans a
// report, the web server checks them.
package weblink

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ActionView is the link to a finding's page; the other actions are
// findings.Action values (useful, false_positive, wont_fix, ...).
const ActionView = "view"

// DefaultTTL is how long a link works when [web] link_ttl is not set:
// long enough to act on last quarter's digest.
const DefaultTTL = 90 * 24 * time.Hour

// MinKeyBytes is the shortest link key Signer accepts.
const MinKeyBytes = 32

// sigBytes is how much of the HMAC a link carries: 160 bits is beyond
// guessing and keeps the URL short enough for chat.
const sigBytes = 20

var (
	// ErrExpired: the link's expiry has passed.
	ErrExpired = errors.New("link expired")
	// ErrBadSignature: the link was not signed with this key for this
	// finding and action (forged, altered or from another installation).
	ErrBadSignature = errors.New("link signature does not match")
	// ErrNoKey: the signer has no key (or one shorter than MinKeyBytes).
	ErrNoKey = errors.New("no link key")
)

// Signer signs and checks links under one key. The zero value signs
// nothing (Link returns "").
type Signer struct {
	// Key is the HMAC key ([web] link_key_file, or the one the daemon
	// generated in its data_dir). Daemons sharing a store must share it.
	Key []byte
	// BaseURL is what readers' browsers reach ([web] base_url), without a
	// trailing slash.
	BaseURL string
	// TTL is how long a link works; DefaultTTL when zero.
	TTL time.Duration
}

// Enabled reports whether s can sign links.
func (s Signer) Enabled() bool { return s.BaseURL != "" && len(s.Key) >= MinKeyBytes }

// Path is where the web server serves a finding's action link.
func Path(findingID int64, action string) string {
	return "/f/" + strconv.FormatInt(findingID, 10) + "/" + url.PathEscape(action)
}

// Link is the signed URL of action on a finding, valid until now+TTL;
// "" when s is not Enabled.
func (s Signer) Link(findingID int64, action string, now time.Time) string {
	if !s.Enabled() {
		return ""
	}
	ttl := s.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	exp := now.Add(ttl).Unix()
	q := url.Values{"exp": {strconv.FormatInt(exp, 10)}, "sig": {s.sign(findingID, action, exp)}}
	return strings.TrimRight(s.BaseURL, "/") + Path(findingID, action) + "?" + q.Encode()
}

// Verify checks a link's exp and sig query values for action on a
// finding at now.
func (s Signer) Verify(findingID int64, action, exp, sig string, now time.Time) error {
	if len(s.Key) < MinKeyBytes {
		return ErrNoKey
	}
	expUnix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	want := s.sign(findingID, action, expUnix)
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return ErrBadSignature
	}
	if now.Unix() >= expUnix {
		return ErrExpired
	}
	return nil
}

// sign is the link's signature: the HMAC of a versioned, unambiguous
// message (each field on its own line; none may hold a newline).
func (s Signer) sign(findingID int64, action string, exp int64) string {
	mac := hmac.New(sha256.New, s.Key)
	mac.Write([]byte("aicr-finding-link/v1\n" + strconv.FormatInt(findingID, 10) + "\n" +
		strings.ReplaceAll(action, "\n", "") + "\n" + strconv.FormatInt(exp, 10)))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:sigBytes])
}
