package triggers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aicr-dev/aicr/hmacsig"
)

// EventsPath is the daemon's intake endpoint, relative to its base URL.
const EventsPath = "/v1/events"

var (
	// ErrNoSecret is hmacsig's, as ErrBadSignature is.
	ErrNoSecret         = hmacsig.ErrNoSecret
	ErrMissingSignature = errors.New("missing timestamp or signature header")
	ErrBadTimestamp     = errors.New("timestamp header is not unix seconds")
	ErrStaleTimestamp   = errors.New("timestamp too far from the receiver's clock")
	// ErrBadSignature is hmacsig's, so errors.Is holds whichever layer
	// reports it.
	ErrBadSignature = hmacsig.ErrBadSignature
	ErrReplayed     = errors.New("signature already used")
)

// Sign returns the X-Aicr-Signature value for body sent at timestamp:
// the hmacsig scheme, which the webhook channel signs with too.
func Sign(secret []byte, timestamp int64, body []byte) string {
	return hmacsig.Sign(secret, timestamp, body)
}

// Verify checks the signing headers of a request body received at now.
// The timestamp is checked before the signature so a clock problem is
// reported as one instead of as a wrong secret.
func Verify(secret []byte, timestampHeader, signatureHeader string, body []byte, now time.Time) error {
	if len(secret) == 0 {
		// An empty key would make every forged request verify.
		return ErrNoSecret
	}
	if timestampHeader == "" || signatureHeader == "" {
		return ErrMissingSignature
	}
	ts, err := strconv.ParseInt(strings.TrimSpace(timestampHeader), 10, 64)
	if err != nil {
		return ErrBadTimestamp
	}
	skew := now.Sub(time.Unix(ts, 0))
	if skew > MaxSkew || skew < -MaxSkew {
		return fmt.Errorf("%w: off by %s, allowed %s", ErrStaleTimestamp, skew.Round(time.Second), MaxSkew)
	}
	return hmacsig.Verify(secret, ts, body, signatureHeader)
}

// ReplayGuard remembers recently accepted signatures so a captured request
// cannot be sent again. Verify accepts a timestamp up to MaxSkew either
// side of the receiver's clock, so a signature stays valid for at most
// 2*MaxSkew after it is first seen; that is how long it is remembered.
// The zero value is ready to use and safe for concurrent use.
type ReplayGuard struct {
	mu        sync.Mutex
	seen      map[string]time.Time // signature -> forget after
	nextSweep time.Time
}

// NewReplayGuard returns an empty guard.
func NewReplayGuard() *ReplayGuard { return &ReplayGuard{} }

// replayWindow is how long a signature is remembered.
const replayWindow = 2 * MaxSkew

// Check records signature as seen at now and returns ErrReplayed if it was
// already seen inside the replay window. Call it only after Verify passed,
// so unauthenticated requests cannot fill the memory.
func (g *ReplayGuard) Check(signature string, now time.Time) error {
	key := strings.ToLower(strings.TrimSpace(signature))
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = make(map[string]time.Time)
	}
	// Sweeping at most once a minute keeps Check O(1) amortised while
	// bounding memory to the signatures of the last window plus a minute.
	if !now.Before(g.nextSweep) {
		for k, until := range g.seen {
			if now.After(until) {
				delete(g.seen, k)
			}
		}
		g.nextSweep = now.Add(time.Minute)
	}
	if until, ok := g.seen[key]; ok && !now.After(until) {
		return ErrReplayed
	}
	g.seen[key] = now.Add(replayWindow)
	return nil
}

// Len reports how many signatures are remembered.
func (g *ReplayGuard) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.seen)
}

// NewSignedRequest builds the signed POST of ev to the daemon at baseURL
// (scheme://host:port, EventsPath is appended). A zero V is set to
// ProtocolVersion and a zero SentAt to now.
func NewSignedRequest(ctx context.Context, baseURL string, secret []byte, ev Event, now time.Time) (*http.Request, error) {
	if len(secret) == 0 {
		return nil, ErrNoSecret
	}
	if ev.V == 0 {
		ev.V = ProtocolVersion
	}
	if ev.SentAt.IsZero() {
		ev.SentAt = now.UTC()
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(baseURL, "/")+EventsPath, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	ts := now.Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(secret, ts, body))
	return req, nil
}
