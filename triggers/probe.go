package triggers

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ProbePath is the daemon's signed self-description endpoint, relative to
// its base URL. It is signed with the hook's secret exactly like an event
// (same headers, skew limit and replay window), so a probe that gets an
// answer proves what /healthz cannot: that the daemon accepts what the
// hook signs. aicr doctor uses it; nothing is queued or recorded.
const ProbePath = "/v1/probe"

// ProbeRequest is the signed body of a probe. The nonce keeps two probes
// in the same second from carrying the same signature, which the replay
// guard would refuse.
type ProbeRequest struct {
	V      int       `json:"v"`
	SentAt time.Time `json:"sent_at"`
	Nonce  string    `json:"nonce"`
}

// ProbeAnswer is what the daemon says about itself.
type ProbeAnswer struct {
	// Version is the running daemon's aicr version.
	Version string `json:"version"`
	// Host is the daemon's hostname: a config path means the same file
	// only on the same host.
	Host string `json:"host"`
	// ConfigPath is the config file the daemon loaded, and ConfigDigest
	// "sha256:<hex>" of its bytes as loaded: different from the file on
	// disk means the file changed since and the daemon must reload.
	ConfigPath   string `json:"config_path"`
	ConfigDigest string `json:"config_digest"`
	// Repos are the [[repo]] names and kinds the daemon accepts events for.
	Repos []ProbeRepo `json:"repos"`
}

// ProbeRepo is one repository the daemon knows.
type ProbeRepo struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// Knows reports whether the daemon accepts events for repo name.
func (a ProbeAnswer) Knows(name string) bool {
	for _, r := range a.Repos {
		if r.Name == name {
			return true
		}
	}
	return false
}

// ProbeError is a probe the daemon answered with anything but 200: Code
// is the intake's error code (bad_signature, stale_timestamp, ...), the
// same the hook's events would get.
type ProbeError struct {
	Status  int
	Code    string
	Message string
}

func (e *ProbeError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("answered %d %s", e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("answered %d %s: %s", e.Status, e.Code, e.Message)
}

// maxProbeAnswer bounds the answer read: a few hundred repos at most.
const maxProbeAnswer = 1 << 20

// SendProbe POSTs one signed probe to the daemon at baseURL and returns its
// answer. A refusal is a *ProbeError; a transport failure is returned
// without the URL, which the caller names (redacted).
func SendProbe(ctx context.Context, baseURL string, secret []byte, timeout time.Duration, now time.Time) (ProbeAnswer, error) {
	var ans ProbeAnswer
	if len(secret) == 0 {
		return ans, ErrNoSecret
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	nonce := make([]byte, 12)
	if _, err := rand.Read(nonce); err != nil {
		return ans, err
	}
	body, err := json.Marshal(ProbeRequest{V: ProtocolVersion, SentAt: now.UTC(), Nonce: hex.EncodeToString(nonce)})
	if err != nil {
		return ans, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(baseURL, "/")+ProbePath, bytes.NewReader(body))
	if err != nil {
		return ans, fmt.Errorf("build request: %w", err)
	}
	ts := now.Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(secret, ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return ans, ue.Err
		}
		return ans, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxProbeAnswer))
	if err != nil {
		return ans, fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		pe := &ProbeError{Status: resp.StatusCode}
		var eb ErrorBody
		if json.Unmarshal(b, &eb) == nil {
			pe.Code, pe.Message = eb.Code, eb.Error
		}
		return ans, pe
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		return ans, fmt.Errorf("the answer is not a probe answer: %w", err)
	}
	return ans, nil
}
