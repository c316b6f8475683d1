package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"

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
