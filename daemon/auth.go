package daemon

import (
	"errors"
	"net/http"
	"time"

	"github.com/aicr-dev/aicr/triggers"
)

// authenticate checks a request's signature headers over body and, when
// they fail, logs (rate-limited) and answers 401 with the reason; events
// and probes share it, so both say the same thing for the same fault.
func (in *intake) authenticate(w http.ResponseWriter, r *http.Request, body []byte, received time.Time) bool {
	err := triggers.Verify(in.secret, r.Header.Get(triggers.HeaderTimestamp), r.Header.Get(triggers.HeaderSignature), body, received)
	if err == nil {
		return true
	}
	in.unauthenticated(r, err)
	var code, msg string
	switch {
	case errors.Is(err, triggers.ErrMissingSignature):
		code, msg = "missing_signature", "missing "+triggers.HeaderTimestamp+" or "+triggers.HeaderSignature+" header: sign requests with the shared secret"
	case errors.Is(err, triggers.ErrBadTimestamp):
		code, msg = "bad_timestamp", triggers.HeaderTimestamp+" must be unix seconds"
	case errors.Is(err, triggers.ErrStaleTimestamp):
		code, msg = "stale_timestamp", "timestamp is more than 5 minutes from the daemon's clock: check NTP on both hosts"
	default:
		code, msg = "bad_signature", "signature does not match: the hook and the daemon must use the same secret"
	}
	if r.URL.Path == eventsPath {
		in.recordRefused(r, received, code, msg, body)
	}
	in.reject(w, http.StatusUnauthorized, code, msg)
	return false
}
