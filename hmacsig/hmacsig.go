// Package hmacsig is aicr's request signature: "sha256=" + hex of
// HMAC-SHA256(secret, timestamp + "." + body). The trigger protocol and
// the webhook channel sign with it, and receivers verify with it.
//
// It is a leaf: it imports nothing from aicr.
package hmacsig

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
)

// Prefix starts every signature, naming the algorithm.
const Prefix = "sha256="

// ErrNoSecret: no signing secret is configured, and an empty key would
// make every forged request verify. It is the one such sentinel: the
// trigger protocol and the config reader return this very value, so
// errors.Is holds whichever layer reports it.
var ErrNoSecret = errors.New("no signing secret configured")

// ErrBadSignature: the signature does not match the body and timestamp.
var ErrBadSignature = errors.New("signature does not match")

// Sign returns the signature of body sent at timestamp (unix seconds).
func Sign(secret []byte, timestamp int64, body []byte) string {
	return Prefix + hex.EncodeToString(mac(secret, timestamp, body))
}

// Verify checks signature against body and timestamp in constant time.
// Freshness of the timestamp is the caller's policy.
func Verify(secret []byte, timestamp int64, body []byte, signature string) error {
	if len(secret) == 0 {
		return ErrNoSecret
	}
	got, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(signature), Prefix))
	if err != nil || !strings.HasPrefix(strings.TrimSpace(signature), Prefix) {
		return ErrBadSignature
	}
	if !hmac.Equal(got, mac(secret, timestamp, body)) {
		return ErrBadSignature
	}
	return nil
}

func mac(secret []byte, timestamp int64, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(strconv.FormatInt(timestamp, 10)))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}
