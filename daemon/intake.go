package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

// maxEventBytes bounds an intake body; a real event is a few hundred bytes.
const maxEventBytes = 64 << 10

// intake is the HTTP server the notify client talks to.
type intake struct {
	cfg    *Config
	secret []byte
	store  *audit.Store
	replay *triggers.ReplayGuard
	log    *slog.Logger
	now    func() time.Time
	// wake tells idle workers that work was queued.
	wake func()
}

func (in *intake) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/events", in.postEvent)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return mux
}

func (in *intake) postEvent(w http.ResponseWriter, r *http.Request) {
	received := in.now()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBytes))
	if err != nil {
		in.reject(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("event body over %d bytes", maxEventBytes))
		return
	}
	err = triggers.Verify(in.secret, r.Header.Get(triggers.HeaderTimestamp), r.Header.Get(triggers.HeaderSignature), body, received)
	switch {
	case errors.Is(err, triggers.ErrMissingSignature):
		in.reject(w, http.StatusUnauthorized, "missing_signature", "missing "+triggers.HeaderTimestamp+" or "+triggers.HeaderSignature+" header: sign requests with the shared secret")
		return
	case errors.Is(err, triggers.ErrBadTimestamp):
		in.reject(w, http.StatusUnauthorized, "bad_timestamp", triggers.HeaderTimestamp+" must be unix seconds")
		return
	case errors.Is(err, triggers.ErrStaleTimestamp):
		in.reject(w, http.StatusUnauthorized, "stale_timestamp", "timestamp is more than 5 minutes from the daemon's clock: check NTP on both hosts")
		return
	case err != nil:
		in.reject(w, http.StatusUnauthorized, "bad_signature", "signature does not match: the hook and the daemon must use the same secret")
		return
	}
	if err := in.replay.Check(r.Header.Get(triggers.HeaderSignature), received); err != nil {
		in.reject(w, http.StatusConflict, "replayed", "this exact signed request was already received; re-sign to send again")
		return
	}

	ev, code, msg := in.parseEvent(body)
	if code != "" {
		status := http.StatusBadRequest
		if code == "unknown_repo" {
			status = http.StatusUnprocessableEntity
		}
		// Authenticated but unusable: keep it so an operator can see what
		// the hook sent and why it was refused.
		if _, err := in.store.RecordRejectedEvent(r.Context(), audit.RejectedEvent{ReceivedAt: received, Reason: code + ": " + msg, Remote: r.RemoteAddr, Payload: body}); err != nil {
			in.log.Error("record rejected event", "err", err)
		}
		in.reject(w, status, code, msg)
		return
	}
	source := ev.Source
	if source == "" {
		source = triggers.SourceTrigger
	}
	res, err := in.store.Enqueue(r.Context(), ev, source, received)
	if err != nil {
		in.log.Error("enqueue event", "repo", ev.Repo, "revision", ev.Revision, "err", err)
		in.reject(w, http.StatusServiceUnavailable, "store_unavailable", "the daemon could not store the event; the client will spool and retry")
		return
	}
	in.log.Info("event accepted", "event_id", res.EventID, "run_id", res.RunID, "repo", ev.Repo, "revision", ev.Revision, "source", source, "duplicate", res.Duplicate)
	if !res.Duplicate {
		in.wake()
	}
	writeJSON(w, http.StatusAccepted, triggers.Accepted{EventID: res.EventID, Duplicate: res.Duplicate})
}

// parseEvent decodes and checks an event body; code is empty when valid.
func (in *intake) parseEvent(body []byte) (ev triggers.Event, code, msg string) {
	if err := json.Unmarshal(body, &ev); err != nil {
		return ev, "malformed_json", "event body is not valid JSON: " + err.Error()
	}
	code, msg = checkEvent(in.cfg, ev)
	return ev, code, msg
}

// checkEvent validates an event against the config; it is shared by the
// intake and the spool drain so both refuse the same things. code is empty
// when the event is valid.
func checkEvent(cfg *Config, ev triggers.Event) (code, msg string) {
	if ev.V != triggers.ProtocolVersion {
		return "invalid_event", fmt.Sprintf("unsupported protocol version v=%d (this daemon speaks v=%d)", ev.V, triggers.ProtocolVersion)
	}
	if ev.Repo == "" {
		return "invalid_event", "missing repo"
	}
	repo, ok := cfg.Repo(ev.Repo)
	if !ok {
		return "unknown_repo", fmt.Sprintf("unknown repo %q: add a [[repo]] with this name to the daemon's config", ev.Repo)
	}
	if vcs.Kind(ev.VCS) != repo.Kind {
		return "invalid_event", fmt.Sprintf("repo %q is kind %q but the event says vcs %q", ev.Repo, repo.Kind, ev.VCS)
	}
	if n, err := strconv.ParseInt(ev.Revision, 10, 64); err != nil || n < 1 {
		return "invalid_event", fmt.Sprintf("revision %q is not a positive integer", ev.Revision)
	}
	return "", ""
}

func (in *intake) reject(w http.ResponseWriter, status int, code, msg string) {
	in.log.Warn("event rejected", "status", status, "code", code, "reason", msg)
	writeJSON(w, status, triggers.ErrorBody{Error: msg, Code: code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
