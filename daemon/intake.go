package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

// maxEventBytes bounds an intake body; a real event is a few hundred bytes.
const maxEventBytes = 64 << 10

// eventsPath is where hooks and triggers POST events.
const eventsPath = "/v1/events"

// intake is the HTTP server the notify client talks to.
type intake struct {
	cfg    *config.Config
	secret []byte
	store  *audit.Store
	replay *triggers.ReplayGuard
	log    *slog.Logger
	now    func() time.Time
	// wake tells idle workers that work was queued.
	wake func()
	// version is the running aicr's, for probes.
	version string
	// unauthLog keeps a flood of unsigned or forged requests from
	// flooding the log too; refusedLog bounds the same way how many of
	// them (and of replays) are kept in rejected_events.
	unauthLog  logLimiter
	refusedLog logLimiter
	metrics    *Metrics
}

func (in *intake) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+eventsPath, in.postEvent)
	mux.HandleFunc("POST "+triggers.ProbePath, in.postProbe)
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
	if !in.authenticate(w, r, body, received) {
		return
	}
	sig := r.Header.Get(triggers.HeaderSignature)
	// The in-memory guard is enough within one process and costs nothing;
	// the store's window, which survives restarts, is checked in the same
	// group-committed transaction that stores the event (Accept).
	if in.replay != nil && in.replay.Check(sig, received) != nil {
		in.rejectReplayedEvent(w, r, received, body)
		return
	}

	ev, code, msg := in.parseEvent(body)
	if code != "" {
		if in.replayedInStore(r, sig, received) {
			in.rejectReplayedEvent(w, r, received, body)
			return
		}
		status := http.StatusBadRequest
		if code == triggers.CodeUnknownRepo {
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
	source := intakeSource(ev.Source)
	res, err := in.store.Accept(r.Context(), sig, triggers.ReplayWindow, ev, source, received)
	if errors.Is(err, audit.ErrReplayed) {
		in.rejectReplayedEvent(w, r, received, body)
		return
	}
	if err != nil {
		in.log.Error("enqueue event", "repo", ev.Repo, "revision", ev.Revision, "err", err)
		in.reject(w, http.StatusServiceUnavailable, "store_unavailable", "the daemon could not store the event; the client will spool and retry")
		return
	}
	in.metrics.enqueued(source, res)
	in.log.Info("event accepted", "event_id", res.EventID, "run_id", res.RunID, "repo", ev.Repo, "revision", ev.Revision, "source", source, "duplicate", res.Duplicate)
	if !res.Duplicate {
		in.wake()
	}
	writeJSON(w, http.StatusAccepted, triggers.Accepted{EventID: res.EventID, Duplicate: res.Duplicate})
}

// intakeSource is the source recorded for an event POSTed by a hook or
// trigger. Only the signing secret authenticates the sender, and only hooks
// hold it, so the body may say at most whether the hook re-sent it from
// its spool; "manual" (which bypasses de-duplication) or "reconcile" are
// never taken from the wire.
func intakeSource(claimed triggers.Source) triggers.Source {
	if claimed == triggers.SourceSpool {
		return triggers.SourceSpool
	}
	return triggers.SourceTrigger
}

// rejectReplayedEvent refuses a replayed event and keeps it for aicr
// audit rejected.
func (in *intake) rejectReplayedEvent(w http.ResponseWriter, r *http.Request, received time.Time, body []byte) {
	in.recordRefused(r, received, "replayed", replayedMsg, body)
	in.rejectReplayed(w)
}

// recordRefused keeps an event request refused before it was parsed (a
// missing, stale or wrong signature, a replay) in rejected_events, so
// aicr audit rejected shows a hook signing with another secret. At most
// unauthLogBurst a minute are kept: a flood of forged requests is only
// counted (aicr_events_total), never grows the database without bound.
func (in *intake) recordRefused(r *http.Request, received time.Time, code, msg string, body []byte) {
	if _, _, ok := in.refusedLog.allow(received); !ok {
		return
	}
	if _, err := in.store.RecordRejectedEvent(r.Context(), audit.RejectedEvent{ReceivedAt: received, Reason: code + ": " + msg, Remote: r.RemoteAddr, Payload: body}); err != nil {
		in.log.Error("record rejected event", "err", err)
	}
}

const replayedMsg = "this exact signed request was already received; re-sign to send again"

func (in *intake) rejectReplayed(w http.ResponseWriter) {
	in.reject(w, http.StatusConflict, "replayed", replayedMsg)
}

// replayedInStore checks and records the signature in the store's replay
// window, which remembers it across restarts, for a request that will not
// be enqueued (Accept does both at once for one that will). A store
// failure is logged and the request let through: the signature's own age
// limit still bounds a replay to minutes.
func (in *intake) replayedInStore(r *http.Request, sig string, received time.Time) bool {
	seen, err := in.store.SeenSignature(r.Context(), sig, received, triggers.ReplayWindow)
	if err != nil {
		in.log.Error("replay window: store unavailable, checked in memory only", "err", err)
		return false
	}
	return seen
}

// parseEvent decodes and checks an event body; code is empty when valid.
// The returned event carries the canonical revision.
func (in *intake) parseEvent(body []byte) (ev triggers.Event, code, msg string) {
	if err := json.Unmarshal(body, &ev); err != nil {
		return ev, "malformed_json", "event body is not valid JSON: " + err.Error()
	}
	return checkEvent(in.cfg, ev)
}

// checkEvent validates an event against the config and canonicalises its
// revision ("+1" and "01" are "1", so they de-duplicate); it is shared by
// the intake and the spool drain so both refuse the same things. code is
// empty when the event is valid.
func checkEvent(cfg *config.Config, ev triggers.Event) (_ triggers.Event, code, msg string) {
	if ev.V != triggers.ProtocolVersion {
		return ev, "invalid_event", fmt.Sprintf("unsupported protocol version v=%d (this daemon speaks v=%d)", ev.V, triggers.ProtocolVersion)
	}
	if ev.Repo == "" {
		return ev, "invalid_event", "missing repo"
	}
	rev, err := triggers.CanonicalRevision(ev.Revision)
	if err != nil {
		return ev, "invalid_event", err.Error()
	}
	ev.Revision = rev
	repo, ok := cfg.Repo(ev.Repo)
	if !ok {
		// Typically the repo was just added to the config file and the
		// daemon not restarted: the hook keeps the event and re-sends it.
		return ev, triggers.CodeUnknownRepo, fmt.Sprintf("the running daemon does not know repo %q: reload it (restart the daemon after adding the [[repo]] to its config); the hook keeps the event spooled and re-sends it", ev.Repo)
	}
	if vcs.Kind(ev.VCS) != repo.Kind {
		return ev, "invalid_event", fmt.Sprintf("repo %q is kind %q but the event says vcs %q", ev.Repo, repo.Kind, ev.VCS)
	}
	if code, msg := checkShelveEvent(&ev); code != "" {
		return ev, code, msg
	}
	return ev, "", ""
}

// unauthenticated counts a request that failed the signature check and
// logs it, at most unauthLogBurst lines a minute: a flood of forged
// requests must not fill the disk with log lines.
func (in *intake) unauthenticated(r *http.Request, err error) {
	total, suppressed, ok := in.unauthLog.allow(in.now())
	if suppressed > 0 {
		in.log.Warn("unauthenticated requests: log lines suppressed", "suppressed", suppressed, "total_unauthenticated", total)
	}
	if ok {
		in.log.Warn("unauthenticated request", "remote", r.RemoteAddr, "err", err, "total_unauthenticated", total)
	}
}

func (in *intake) reject(w http.ResponseWriter, status int, code, msg string) {
	in.metrics.intakeRejected(code)
	// 401s were logged (rate-limited) by unauthenticated.
	if status != http.StatusUnauthorized {
		in.log.Warn("event rejected", "status", status, "code", code, "reason", msg)
	}
	writeJSON(w, status, triggers.ErrorBody{Error: msg, Code: code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// unauthLogBurst is how many unauthenticated requests are logged per
// minute before the rest are only counted.
const unauthLogBurst = 10

// logLimiter lets the first unauthLogBurst events of each minute be
// logged; the rest are counted and reported once, as a summary, when the
// next minute's first event arrives. The zero value is ready.
type logLimiter struct {
	mu          sync.Mutex
	windowStart time.Time
	inWindow    int
	suppressed  int
	total       int64
}

// allow counts one event at now. ok says whether to log it; suppressed is
// the number of events the previous window swallowed (to log as a summary
// once), and total counts every event since start.
func (l *logLimiter) allow(now time.Time) (total int64, suppressed int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total++
	if now.Sub(l.windowStart) >= time.Minute || now.Before(l.windowStart) {
		suppressed = l.suppressed
		l.windowStart, l.inWindow, l.suppressed = now, 0, 0
	}
	l.inWindow++
	if l.inWindow > unauthLogBurst {
		l.suppressed++
		return l.total, suppressed, false
	}
	return l.total, suppressed, true
}
