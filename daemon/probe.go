package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/aicr-dev/aicr/triggers"
)

// maxProbeBytes bounds a probe body; a real one is under 100 bytes.
const maxProbeBytes = 4 << 10

// postProbe answers a signed probe (triggers.ProbePath) with what the
// daemon runs: version, config and repositories. It is authenticated and
// replay-checked exactly like an event, so a wrong secret gets the same
// 401 and reason as the hook's events would, and nothing is queued.
func (in *intake) postProbe(w http.ResponseWriter, r *http.Request) {
	received := in.now()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxProbeBytes))
	if err != nil {
		in.reject(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("probe body over %d bytes", maxProbeBytes))
		return
	}
	if !in.authenticate(w, r, body, received) {
		return
	}
	sig := r.Header.Get(triggers.HeaderSignature)
	if (in.replay != nil && in.replay.Check(sig, received) != nil) || in.replayedInStore(r, sig, received) {
		in.rejectReplayed(w)
		return
	}
	var req triggers.ProbeRequest
	if err := json.Unmarshal(body, &req); err != nil {
		in.reject(w, http.StatusBadRequest, "malformed_json", "probe body is not valid JSON: "+err.Error())
		return
	}
	ans := triggers.ProbeAnswer{Version: in.version, ConfigPath: in.cfg.Path, ConfigDigest: in.cfg.Digest, Repos: []triggers.ProbeRepo{}}
	ans.Host, _ = os.Hostname()
	for _, repo := range in.cfg.Repos {
		ans.Repos = append(ans.Repos, triggers.ProbeRepo{Name: repo.Name, Kind: string(repo.Kind)})
	}
	writeJSON(w, http.StatusOK, ans)
}

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
