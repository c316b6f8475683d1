// Package triggers is the VCS-server side of aicr: the wire protocol
// between hooks/triggers and the daemon, the notify client the hooks run,
// the on-disk spool it falls back to, and the installers that write hook
// scripts and trigger lines.
package triggers

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ProtocolVersion is the "v" field of every event body.
const ProtocolVersion = 1

// Source says how an event reached the daemon.
type Source string

const (
	SourceTrigger   Source = "trigger"   // sent by a hook/trigger as it fired
	SourceSpool     Source = "spool"     // re-sent or drained from a spool directory
	SourceManual    Source = "manual"    // aicr review / operator
	SourceReconcile Source = "reconcile" // found missing by the reconciler
)

// Event is the body of POST /v1/events.
type Event struct {
	V          int       `json:"v"`
	VCS        string    `json:"vcs"`
	Repo       string    `json:"repo"`
	Revision   string    `json:"revision"`
	User       string    `json:"user,omitempty"`
	Client     string    `json:"client,omitempty"`
	ServerPort string    `json:"serverport,omitempty"`
	ServerID   string    `json:"serverid,omitempty"`
	Txn        string    `json:"txn,omitempty"`
	Source     Source    `json:"source,omitempty"`
	SentAt     time.Time `json:"sent_at"`
	// Kind is KindShelve for a Perforce shelve-commit trigger; empty for
	// a commit.
	Kind string `json:"kind,omitempty"`
}

// Header names of the signing scheme.
const (
	HeaderTimestamp = "X-Aicr-Timestamp"
	HeaderSignature = "X-Aicr-Signature"
)

// MaxSkew is how far a request's timestamp may be from the daemon's clock.
const MaxSkew = 5 * time.Minute

// Accepted is the daemon's 202 response body.
type Accepted struct {
	EventID   int64 `json:"event_id"`
	Duplicate bool  `json:"duplicate,omitempty"`
}

// ErrorBody is the JSON body of every non-2xx intake response.
type ErrorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// CanonicalRevision returns the one spelling of an SVN revision or a
// Perforce change number that de-duplication compares: a positive decimal
// without sign or leading zeros. "+1", "01" and "1" are the same revision,
// so all three become "1"; anything else (0, negatives, hex, spaces, a
// number over int64) is an error naming the value.
func CanonicalRevision(rev string) (string, error) {
	digits := strings.TrimPrefix(rev, "+")
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return "", fmt.Errorf("revision %q is not a positive decimal number: send the SVN revision or Perforce change number as digits, e.g. \"42\"", rev)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 1 {
		return "", fmt.Errorf("revision %q is not a positive number that fits 64 bits: send the SVN revision or Perforce change number, e.g. \"42\"", rev)
	}
	return strconv.FormatInt(n, 10), nil
}

// ReplayWindow is how long the intake remembers a signature: Verify
// accepts a timestamp up to MaxSkew either side of the receiver's clock,
// so a signature stays usable for at most 2*MaxSkew after it is first seen.
const ReplayWindow = 2 * MaxSkew
