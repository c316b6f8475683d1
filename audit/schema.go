package audit

// migrations are applied in order; migration i+1 is migrations[i]. Never
// edit or reorder an applied migration: append a new one. Each migration is
// a list of single statements run in one transaction.
//
// Conventions: times are TEXT in timeFormat (UTC), NULL meaning "not yet";
// free text is NOT NULL DEFAULT ” so Go scans plain strings; enumerations
// carry CHECK constraints so a typo cannot reach the audit trail.
var migrations = [][]string{
	// 1: events, runs, problems, dispatches, rejected events.
	{
		// Every receipt of an event, duplicates included: the audit shows
		// how often a hook, the spool and the reconciler reported the same
		// revision. duplicate_of points at the primary receipt.
		`CREATE TABLE events (
			id           INTEGER PRIMARY KEY,
			vcs          TEXT    NOT NULL,
			repo         TEXT    NOT NULL,
			revision     TEXT    NOT NULL,
			user         TEXT    NOT NULL DEFAULT '',
			client       TEXT    NOT NULL DEFAULT '',
			source       TEXT    NOT NULL CHECK (source IN ('trigger', 'spool', 'manual', 'reconcile')),
			received_at  TEXT    NOT NULL,
			payload      TEXT    NOT NULL,
			duplicate_of INTEGER REFERENCES events(id),
			CHECK (duplicate_of IS NULL OR source <> 'manual')
		)`,
		// Idempotency on (repo, revision): at most one primary automatic
		// receipt per revision, whatever the interleaving of writers.
		// Manual requests are outside it so an operator can always re-review.
		`CREATE UNIQUE INDEX events_primary ON events (repo, revision)
			WHERE duplicate_of IS NULL AND source <> 'manual'`,
		`CREATE INDEX events_duplicate_of ON events (duplicate_of)
			WHERE duplicate_of IS NOT NULL`,
		`CREATE INDEX events_repo_revision ON events (repo, revision)`,

		// One run per primary event. The run is the queue entry and, once
		// finished, its record; a run re-done after a crash keeps its id
		// and counts attempts.
		`CREATE TABLE runs (
			id            INTEGER PRIMARY KEY,
			event_id      INTEGER NOT NULL UNIQUE REFERENCES events(id),
			vcs           TEXT    NOT NULL,
			repo          TEXT    NOT NULL,
			revision      TEXT    NOT NULL,
			status        TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'skipped')),
			skip_reason   TEXT    NOT NULL DEFAULT '',
			error         TEXT    NOT NULL DEFAULT '',
			problem_count INTEGER NOT NULL DEFAULT 0,
			attempts      INTEGER NOT NULL DEFAULT 0,
			queued_at     TEXT    NOT NULL,
			started_at    TEXT,
			finished_at   TEXT,
			run_dir       TEXT    NOT NULL DEFAULT '',
			summaries     TEXT    NOT NULL DEFAULT '[]'
		)`,
		`CREATE INDEX runs_status ON runs (status, id)`,
		`CREATE INDEX runs_repo_revision ON runs (repo, revision)`,

		// The validated problems of a run's last attempt. seq keeps the
		// agent's reporting order as the final tie-break.
		`CREATE TABLE problems (
			id          INTEGER PRIMARY KEY,
			run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
			seq         INTEGER NOT NULL,
			file        TEXT    NOT NULL,
			line        INTEGER NOT NULL,
			end_line    INTEGER NOT NULL DEFAULT 0,
			severity    TEXT    NOT NULL CHECK (severity IN ('info', 'low', 'medium', 'high', 'critical')),
			category    TEXT    NOT NULL DEFAULT '',
			message     TEXT    NOT NULL,
			suggestion  TEXT    NOT NULL DEFAULT '',
			fingerprint TEXT    NOT NULL DEFAULT '',
			UNIQUE (run_id, seq)
		)`,
		`CREATE INDEX problems_fingerprint ON problems (fingerprint)`,

		// One row per (run, channel): a resumed or replayed run finds the
		// row and its status instead of sending twice.
		`CREATE TABLE dispatches (
			id         INTEGER PRIMARY KEY,
			run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
			channel    TEXT    NOT NULL,
			status     TEXT    NOT NULL CHECK (status IN ('pending', 'sent', 'failed', 'suppressed')),
			attempts   INTEGER NOT NULL DEFAULT 0,
			last_error TEXT    NOT NULL DEFAULT '',
			created_at TEXT    NOT NULL,
			updated_at TEXT    NOT NULL,
			sent_at    TEXT,
			UNIQUE (run_id, channel)
		)`,
		`CREATE INDEX dispatches_status ON dispatches (status)`,

		// Requests the daemon refused (bad JSON, unknown repo, bad
		// signature, replay...), kept raw because they may not parse.
		`CREATE TABLE rejected_events (
			id          INTEGER PRIMARY KEY,
			received_at TEXT    NOT NULL,
			reason      TEXT    NOT NULL,
			remote      TEXT    NOT NULL DEFAULT '',
			payload     BLOB    NOT NULL,
			truncated   INTEGER NOT NULL DEFAULT 0
		)`,
	},
	// 2: retry of transient failures and the reconciler's high-water marks.
	{
		// A run that failed for a reason worth retrying (the VCS server was
		// unreachable) goes back to queued with not_before set; workers
		// skip it until then.
		`ALTER TABLE runs ADD COLUMN not_before TEXT`,
		`CREATE INDEX runs_queued_not_before ON runs (status, not_before)`,
		// Per repo, the newest change the reconciler knows was enqueued, so
		// a tick only looks at what came after.
		`CREATE TABLE repo_marks (
			repo       TEXT PRIMARY KEY,
			last_seen  TEXT NOT NULL,
			updated_at TEXT NOT NULL
		)`,
	},
	// 3: delivery with retries. SQLite cannot alter a CHECK constraint, so
	// dispatches is rebuilt to admit 'dead' and to carry the retry schedule,
	// the claim lease and what was sent; every attempt gets its own row.
	{
		`CREATE TABLE dispatches_v3 (
			id              INTEGER PRIMARY KEY,
			run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
			channel         TEXT    NOT NULL,
			status          TEXT    NOT NULL CHECK (status IN ('pending', 'sent', 'failed', 'suppressed', 'dead')),
			attempts        INTEGER NOT NULL DEFAULT 0,
			last_error      TEXT    NOT NULL DEFAULT '',
			created_at      TEXT    NOT NULL,
			updated_at      TEXT    NOT NULL,
			sent_at         TEXT,
			purpose         TEXT    NOT NULL DEFAULT 'report' CHECK (purpose IN ('report', 'error')),
			next_attempt_at TEXT,
			lease_until     TEXT,
			rendered        TEXT    NOT NULL DEFAULT '',
			message_id      TEXT    NOT NULL DEFAULT '',
			parts_delivered INTEGER NOT NULL DEFAULT 0,
			UNIQUE (run_id, channel)
		)`,
		`INSERT INTO dispatches_v3 (id, run_id, channel, status, attempts, last_error, created_at, updated_at, sent_at)
			SELECT id, run_id, channel, status, attempts, last_error, created_at, updated_at, sent_at FROM dispatches`,
		`DROP TABLE dispatches`,
		`ALTER TABLE dispatches_v3 RENAME TO dispatches`,
		`CREATE INDEX dispatches_status ON dispatches (status, next_attempt_at)`,
		`CREATE INDEX dispatches_channel ON dispatches (channel, status, id)`,
		// started_at without finished_at is an attempt a crash cut short:
		// the platform may or may not have the message.
		`CREATE TABLE dispatch_attempts (
			id            INTEGER PRIMARY KEY,
			dispatch_id   INTEGER NOT NULL REFERENCES dispatches(id) ON DELETE CASCADE,
			attempt       INTEGER NOT NULL,
			started_at    TEXT    NOT NULL,
			finished_at   TEXT,
			outcome       TEXT    NOT NULL DEFAULT '' CHECK (outcome IN ('', 'sent', 'retry', 'failed', 'dead')),
			reason        TEXT    NOT NULL DEFAULT '',
			status_code   INTEGER NOT NULL DEFAULT 0,
			platform_code TEXT    NOT NULL DEFAULT '',
			response      TEXT    NOT NULL DEFAULT '',
			error         TEXT    NOT NULL DEFAULT '',
			UNIQUE (dispatch_id, attempt)
		)`,
	},
	// 4: a timed-out attempt has an unknown outcome (status and
	// attempt outcome 'unknown'); first_attempt_at starts the give_up_after
	// window; unknown_outcomes counts timed-out attempts. SQLite cannot
	// alter a CHECK, so both tables are rebuilt: attempts first, pointing at
	// the new dispatches table, so dropping the old one cascades to nothing.
	{
		`CREATE TABLE dispatches_v9 (
			id               INTEGER PRIMARY KEY,
			run_id           INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
			channel          TEXT    NOT NULL,
			status           TEXT    NOT NULL CHECK (status IN ('pending', 'sent', 'failed', 'suppressed', 'dead', 'unknown')),
			attempts         INTEGER NOT NULL DEFAULT 0,
			last_error       TEXT    NOT NULL DEFAULT '',
			created_at       TEXT    NOT NULL,
			updated_at       TEXT    NOT NULL,
			sent_at          TEXT,
			purpose          TEXT    NOT NULL DEFAULT 'report' CHECK (purpose IN ('report', 'error')),
			next_attempt_at  TEXT,
			lease_until      TEXT,
			rendered         TEXT    NOT NULL DEFAULT '',
			message_id       TEXT    NOT NULL DEFAULT '',
			parts_delivered  INTEGER NOT NULL DEFAULT 0,
			first_attempt_at TEXT,
			unknown_outcomes INTEGER NOT NULL DEFAULT 0,
			UNIQUE (run_id, channel)
		)`,
		`INSERT INTO dispatches_v9 (id, run_id, channel, status, attempts, last_error, created_at, updated_at, sent_at,
			purpose, next_attempt_at, lease_until, rendered, message_id, parts_delivered, first_attempt_at)
			SELECT id, run_id, channel, status, attempts, last_error, created_at, updated_at, sent_at,
			purpose, next_attempt_at, lease_until, rendered, message_id, parts_delivered,
			(SELECT MIN(a.started_at) FROM dispatch_attempts a WHERE a.dispatch_id = dispatches.id)
			FROM dispatches`,
		`CREATE TABLE dispatch_attempts_v9 (
			id            INTEGER PRIMARY KEY,
			dispatch_id   INTEGER NOT NULL REFERENCES dispatches_v9(id) ON DELETE CASCADE,
			attempt       INTEGER NOT NULL,
			started_at    TEXT    NOT NULL,
			finished_at   TEXT,
			outcome       TEXT    NOT NULL DEFAULT '' CHECK (outcome IN ('', 'sent', 'retry', 'failed', 'dead', 'unknown')),
			reason        TEXT    NOT NULL DEFAULT '',
			status_code   INTEGER NOT NULL DEFAULT 0,
			platform_code TEXT    NOT NULL DEFAULT '',
			response      TEXT    NOT NULL DEFAULT '',
			error         TEXT    NOT NULL DEFAULT '',
			UNIQUE (dispatch_id, attempt)
		)`,
		`INSERT INTO dispatch_attempts_v9 SELECT * FROM dispatch_attempts`,
		`DROP TABLE dispatch_attempts`,
		`DROP TABLE dispatches`,
		`ALTER TABLE dispatches_v9 RENAME TO dispatches`,
		`ALTER TABLE dispatch_attempts_v9 RENAME TO dispatch_attempts`,
		`CREATE INDEX dispatches_status ON dispatches (status, next_attempt_at)`,
		`CREATE INDEX dispatches_channel ON dispatches (channel, status, id)`,
	},
	// 5: the intake's replay window survives restarts, so a signed
	// request captured before a restart cannot be sent again after it.
	{
		`CREATE TABLE replay_signatures (
			signature  TEXT PRIMARY KEY,
			expires_at TEXT NOT NULL
		) WITHOUT ROWID`,
		`CREATE INDEX replay_signatures_expiry ON replay_signatures (expires_at)`,
	},
	// 6: run leases (who works on a running run, until when), dry runs
	// that recovery never resumes, and the start of a run's retry window.
	{
		// lease_owner/pid/host name the process working on a running run;
		// it renews lease_until while it works. Recovery only takes a run
		// whose lease ran out or whose owner process is gone.
		`ALTER TABLE runs ADD COLUMN lease_owner TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE runs ADD COLUMN lease_pid INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE runs ADD COLUMN lease_host TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE runs ADD COLUMN lease_until TEXT`,
		// A dry run publishes nothing and is never queued; one interrupted
		// is failed, not resumed as a normal run.
		`ALTER TABLE runs ADD COLUMN dry_run INTEGER NOT NULL DEFAULT 0`,
		// When the run first failed transiently; retries stop after
		// [daemon] retry_for from here.
		`ALTER TABLE runs ADD COLUMN retry_since TEXT`,
		// Attempts cut short by a dying process, counted apart from
		// attempts that failed, so days of retries do not look like a run
		// that crashes the daemon.
		`ALTER TABLE runs ADD COLUMN interruptions INTEGER NOT NULL DEFAULT 0`,
	},
	// 7: what the review agent cost per run (issue 11 item 6): the
	// agent kind and model, ladder passes, model turns and tokens summed
	// over every attempt, and the cost when prices are configured (NULL
	// when they are not, so "free" and "unknown" differ).
	{
		`ALTER TABLE runs ADD COLUMN agent TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE runs ADD COLUMN agent_model TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE runs ADD COLUMN agent_passes INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE runs ADD COLUMN agent_turns INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE runs ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE runs ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE runs ADD COLUMN cost_usd REAL`,
	},
	// 8: every connection the sandbox's egress proxy allowed or
	// refused for a run (issue 12 item 3), so an agent that tried to reach
	// a host it may not shows in the run's audit.
	{
		`CREATE TABLE egress_events (
			id      INTEGER PRIMARY KEY,
			run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
			at      TEXT NOT NULL,
			host    TEXT NOT NULL,
			port    INTEGER NOT NULL,
			allowed INTEGER NOT NULL,
			reason  TEXT NOT NULL
		)`,
		`CREATE INDEX egress_events_run ON egress_events (run_id, id)`,
	},
	// 9: when the retention job removed a finished run's
	// directory (issue 12 item 6), so the audit says so instead of showing
	// a path that no longer exists.
	{
		`ALTER TABLE runs ADD COLUMN run_dir_pruned_at TEXT`,
	},
	// h-retention: when a delivered run's src/ copies were removed
	// (issue 15 item 5), and the indexes the retention job, the export and
	// `aicr audit rejected --since` read by time.
	{
		`ALTER TABLE runs ADD COLUMN sources_dropped_at TEXT`,
		`CREATE INDEX runs_sources_kept ON runs (finished_at)
			WHERE sources_dropped_at IS NULL AND run_dir_pruned_at IS NULL`,
		`CREATE INDEX runs_finished_at ON runs (finished_at)`,
		`CREATE INDEX runs_queued_at ON runs (queued_at)`,
		`CREATE INDEX rejected_events_received_at ON rejected_events (received_at)`,
	},
	// h-admin: repos an operator paused (aicr repo pause): their events
	// are still recorded and their runs queued, but no worker claims them
	// until the repo is resumed. A row per paused repo; resuming deletes it.
	{
		`CREATE TABLE repo_pauses (
			repo      TEXT NOT NULL PRIMARY KEY,
			paused_at TEXT NOT NULL,
			paused_by TEXT NOT NULL DEFAULT '',
			reason    TEXT NOT NULL DEFAULT ''
		)`,
	},
	// h-session: review sessions (issue 16 item 1): a developer's
	// pre-submit review of a working copy, a shelf, a revision or a patch,
	// run in rounds from an agent's MCP client or `aicr session`. The
	// session and each round live here so a wait from another process (a
	// restarted MCP server) continues it; the round's lease says which
	// process runs it and until when, so a dead one is detected.
	{
		`CREATE TABLE review_sessions (
			id          INTEGER PRIMARY KEY,
			target      TEXT    NOT NULL,
			repo        TEXT    NOT NULL DEFAULT '',
			agent       TEXT    NOT NULL DEFAULT '',
			model       TEXT    NOT NULL DEFAULT '',
			timeout_s   INTEGER NOT NULL DEFAULT 0,
			config_path TEXT    NOT NULL DEFAULT '',
			status      TEXT    NOT NULL CHECK (status IN ('active', 'ended')),
			created_at  TEXT    NOT NULL,
			ended_at    TEXT,
			finalized   INTEGER NOT NULL DEFAULT 0,
			verdict     TEXT    NOT NULL DEFAULT '',
			published_run_id INTEGER
		)`,
		`CREATE TABLE review_session_rounds (
			session_id     INTEGER NOT NULL REFERENCES review_sessions(id) ON DELETE CASCADE,
			round          INTEGER NOT NULL,
			status         TEXT    NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'timeout')),
			input          TEXT    NOT NULL DEFAULT '',
			started_at     TEXT    NOT NULL,
			finished_at    TEXT,
			run_dir        TEXT    NOT NULL DEFAULT '',
			result         TEXT    NOT NULL DEFAULT '',
			error          TEXT    NOT NULL DEFAULT '',
			failure_reason TEXT    NOT NULL DEFAULT '',
			lease_pid      INTEGER NOT NULL DEFAULT 0,
			lease_host     TEXT    NOT NULL DEFAULT '',
			lease_until    TEXT,
			agent          TEXT    NOT NULL DEFAULT '',
			agent_model    TEXT    NOT NULL DEFAULT '',
			agent_passes   INTEGER NOT NULL DEFAULT 0,
			input_tokens   INTEGER NOT NULL DEFAULT 0,
			output_tokens  INTEGER NOT NULL DEFAULT 0,
			PRIMARY KEY (session_id, round)
		)`,
	},
	// h-postgres: several daemons on one database (issue 17). Each daemon
	// heartbeats into daemons (doctor lists the live ones; dispatch
	// leases of a dead daemon are recognised); rate_buckets holds one
	// shared token bucket per destination (GCRA: the theoretical arrival
	// time of the next send), so daemons together keep a platform's limit.
	{
		`CREATE TABLE daemons (
			owner      TEXT PRIMARY KEY,
			host       TEXT    NOT NULL,
			pid        INTEGER NOT NULL,
			version    TEXT    NOT NULL DEFAULT '',
			listen     TEXT    NOT NULL DEFAULT '',
			started_at TEXT    NOT NULL,
			last_seen  TEXT    NOT NULL
		)`,
		`CREATE TABLE rate_buckets (
			channel    TEXT PRIMARY KEY,
			tat        TEXT NOT NULL,
			updated_at TEXT NOT NULL
		)`,
	},
	// The change's author as the fetch read it (issue 15 item 6: an
	// author column). A Subversion hook sends no user, so events.user is
	// empty for every svn run; the author is known once the revision is
	// fetched.
	{
		`ALTER TABLE runs ADD COLUMN author TEXT NOT NULL DEFAULT ''`,
	},
	// Several daemons, each with its data_dir on its own host: run_home
	// says whose data_dir holds a run's directory (host:data_dir, set
	// with run_dir on a shared store), so the directory is pruned, and
	// its src/ dropped, by the daemon that has it.
	{
		`ALTER TABLE runs ADD COLUMN run_home TEXT NOT NULL DEFAULT ''`,
	},
	// The report a dispatch sends (issue 23 item 5), as JSON: built under
	// the channel's policy when the dispatch is planned, rendered at every
	// attempt, so a retry sends what was planned whatever the config or
	// the run's files are by then. NULL: planned by an older aicr (the
	// daemon fills it at start) or suppressed (never sent).
	{
		`ALTER TABLE dispatches ADD COLUMN report TEXT`,
	},
	// Findings that live across commits (issue 24): one row per finding
	// of a repo, its identity (repo, key) unique, and its history in
	// finding_events. Run ids are plain numbers, not references: a
	// finding outlives the runs the audit_rows retention deletes.
	//
	// Dispatches that are not a run's report: a resolution follow-up (of
	// the resolving run, slot 'resolution') and a digest (no run, slot
	// 'digest:<name>:<period start>'). SQLite cannot drop NOT NULL or
	// alter a CHECK, so dispatches and their attempts are rebuilt as in
	// migration 4, ids, reports and message ids kept; on PostgreSQL the
	// copied ids then move the id sequences past them.
	{
		`CREATE TABLE findings (
			id                INTEGER PRIMARY KEY,
			repo              TEXT    NOT NULL,
			path              TEXT    NOT NULL,
			category          TEXT    NOT NULL DEFAULT '',
			finding_key       TEXT    NOT NULL,
			agent_fingerprint TEXT    NOT NULL DEFAULT '',
			anchor            TEXT    NOT NULL DEFAULT '',
			state             TEXT    NOT NULL CHECK (state IN ('open', 'resolved', 'dismissed', 'reopened')),
			severity          TEXT    NOT NULL CHECK (severity IN ('info', 'low', 'medium', 'high', 'critical')),
			message           TEXT    NOT NULL,
			suggestion        TEXT    NOT NULL DEFAULT '',
			line              INTEGER NOT NULL DEFAULT 0,
			end_line          INTEGER NOT NULL DEFAULT 0,
			agent             TEXT    NOT NULL DEFAULT '',
			model             TEXT    NOT NULL DEFAULT '',
			first_run_id      INTEGER NOT NULL,
			first_revision    TEXT    NOT NULL,
			first_author      TEXT    NOT NULL DEFAULT '',
			first_seen_at     TEXT    NOT NULL,
			last_run_id       INTEGER NOT NULL,
			last_revision     TEXT    NOT NULL,
			last_seen_at      TEXT    NOT NULL,
			sightings         INTEGER NOT NULL DEFAULT 1,
			announced_run_id  INTEGER NOT NULL,
			resolved_run_id   INTEGER NOT NULL DEFAULT 0,
			resolved_revision TEXT    NOT NULL DEFAULT '',
			resolved_author   TEXT    NOT NULL DEFAULT '',
			resolved_at       TEXT,
			acted_by          TEXT    NOT NULL DEFAULT '',
			acted_via         TEXT    NOT NULL DEFAULT '' CHECK (acted_via IN ('', 'slack', 'web', 'cli', 'mcp', 'review')),
			acted_at          TEXT,
			dismissal         TEXT    NOT NULL DEFAULT '' CHECK (dismissal IN ('', 'false_positive', 'wont_fix', 'accepted_risk')),
			note              TEXT    NOT NULL DEFAULT '',
			useful            INTEGER NOT NULL DEFAULT 0,
			UNIQUE (repo, finding_key)
		)`,
		`CREATE INDEX findings_repo_state ON findings (repo, state)`,
		`CREATE INDEX findings_repo_path ON findings (repo, path)`,
		`CREATE INDEX findings_first_run ON findings (first_run_id)`,
		`CREATE INDEX findings_resolved_run ON findings (resolved_run_id)`,
		`CREATE INDEX findings_resolved_at ON findings (resolved_at) WHERE state = 'resolved'`,
		`CREATE TABLE finding_events (
			id         INTEGER PRIMARY KEY,
			finding_id INTEGER NOT NULL REFERENCES findings(id) ON DELETE CASCADE,
			kind       TEXT    NOT NULL CHECK (kind IN ('reported', 'seen', 'resolved', 'reopened', 'dismissed', 'useful', 'moved')),
			at         TEXT    NOT NULL,
			actor      TEXT    NOT NULL DEFAULT '',
			via        TEXT    NOT NULL CHECK (via IN ('slack', 'web', 'cli', 'mcp', 'review')),
			run_id     INTEGER NOT NULL DEFAULT 0,
			revision   TEXT    NOT NULL DEFAULT '',
			action     TEXT    NOT NULL DEFAULT '',
			note       TEXT    NOT NULL DEFAULT '',
			path       TEXT    NOT NULL DEFAULT ''
		)`,
		`CREATE INDEX finding_events_finding ON finding_events (finding_id, id)`,
		`CREATE INDEX finding_events_run ON finding_events (run_id)`,
		`CREATE INDEX finding_events_kind_at ON finding_events (kind, at)`,

		`CREATE TABLE dispatches_v17 (
			id               INTEGER PRIMARY KEY,
			run_id           INTEGER REFERENCES runs(id) ON DELETE CASCADE,
			channel          TEXT    NOT NULL,
			status           TEXT    NOT NULL CHECK (status IN ('pending', 'sent', 'failed', 'suppressed', 'dead', 'unknown')),
			attempts         INTEGER NOT NULL DEFAULT 0,
			last_error       TEXT    NOT NULL DEFAULT '',
			created_at       TEXT    NOT NULL,
			updated_at       TEXT    NOT NULL,
			sent_at          TEXT,
			purpose          TEXT    NOT NULL DEFAULT 'report' CHECK (purpose IN ('report', 'error', 'resolution', 'digest')),
			next_attempt_at  TEXT,
			lease_until      TEXT,
			rendered         TEXT    NOT NULL DEFAULT '',
			message_id       TEXT    NOT NULL DEFAULT '',
			parts_delivered  INTEGER NOT NULL DEFAULT 0,
			first_attempt_at TEXT,
			unknown_outcomes INTEGER NOT NULL DEFAULT 0,
			report           TEXT,
			slot             TEXT    NOT NULL DEFAULT '',
			UNIQUE (run_id, channel, slot),
			CHECK (run_id IS NOT NULL OR slot <> '')
		)`,
		`INSERT INTO dispatches_v17 (id, run_id, channel, status, attempts, last_error, created_at, updated_at, sent_at,
			purpose, next_attempt_at, lease_until, rendered, message_id, parts_delivered, first_attempt_at, unknown_outcomes, report)
			SELECT id, run_id, channel, status, attempts, last_error, created_at, updated_at, sent_at,
			purpose, next_attempt_at, lease_until, rendered, message_id, parts_delivered, first_attempt_at, unknown_outcomes, report
			FROM dispatches`,
		`CREATE TABLE dispatch_attempts_v17 (
			id            INTEGER PRIMARY KEY,
			dispatch_id   INTEGER NOT NULL REFERENCES dispatches_v17(id) ON DELETE CASCADE,
			attempt       INTEGER NOT NULL,
			started_at    TEXT    NOT NULL,
			finished_at   TEXT,
			outcome       TEXT    NOT NULL DEFAULT '' CHECK (outcome IN ('', 'sent', 'retry', 'failed', 'dead', 'unknown')),
			reason        TEXT    NOT NULL DEFAULT '',
			status_code   INTEGER NOT NULL DEFAULT 0,
			platform_code TEXT    NOT NULL DEFAULT '',
			response      TEXT    NOT NULL DEFAULT '',
			error         TEXT    NOT NULL DEFAULT '',
			UNIQUE (dispatch_id, attempt)
		)`,
		`INSERT INTO dispatch_attempts_v17 (id, dispatch_id, attempt, started_at, finished_at, outcome, reason,
			status_code, platform_code, response, error)
			SELECT id, dispatch_id, attempt, started_at, finished_at, outcome, reason,
			status_code, platform_code, response, error FROM dispatch_attempts`,
		`DROP TABLE dispatch_attempts`,
		`DROP TABLE dispatches`,
		`ALTER TABLE dispatches_v17 RENAME TO dispatches`,
		`ALTER TABLE dispatch_attempts_v17 RENAME TO dispatch_attempts`,
		`CREATE INDEX dispatches_status ON dispatches (status, next_attempt_at)`,
		`CREATE INDEX dispatches_channel ON dispatches (channel, status, id)`,
		// The run-less rows' identity: NULLs are distinct in UNIQUE.
		`CREATE UNIQUE INDEX dispatches_notice ON dispatches (channel, slot) WHERE run_id IS NULL`,
		postgresOnly + `SELECT setval(pg_get_serial_sequence('dispatches', 'id'), COALESCE(MAX(id), 0) + 1, false) FROM dispatches`,
		postgresOnly + `SELECT setval(pg_get_serial_sequence('dispatch_attempts', 'id'), COALESCE(MAX(id), 0) + 1, false) FROM dispatch_attempts`,
	},
	// 18: accounting that matches the bill (issue 25 item 4). A run's
	// prompt tokens split as providers bill them: input_tokens stays the
	// uncached part, the cache reads and writes get columns of their own;
	// run_turns keeps every model round trip of every attempt and pass (turn
	// 0: a pass whose agent reports only totals, as the agent CLIs do).
	// agent_stopped says why a review stopped before its ladder was done
	// (a per-review cap), for the partial review's report; agent_clipped
	// the files (newline-separated) whose diff did not fit the model's
	// prompt budget.
	{
		`ALTER TABLE runs ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE runs ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE runs ADD COLUMN agent_stopped TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE runs ADD COLUMN agent_clipped TEXT NOT NULL DEFAULT ''`,
		`CREATE TABLE run_turns (
			run_id             INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
			attempt            INTEGER NOT NULL,
			pass               INTEGER NOT NULL,
			turn               INTEGER NOT NULL,
			input_tokens       INTEGER NOT NULL DEFAULT 0,
			cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
			cache_write_tokens INTEGER NOT NULL DEFAULT 0,
			output_tokens      INTEGER NOT NULL DEFAULT 0,
			PRIMARY KEY (run_id, attempt, pass, turn)
		)`,
	},
	// 19: the [[budget]] that applied to a run (issue 25 item 5): which
	// budget was spent, the action taken (builtin-only, skip, fallback), its
	// figures when it was decided and when model reviews resume, as JSON;
	// '' for a run no budget touched. The report's notice is rebuilt from
	// it, so it reads the same at every retry and in aicr audit show.
	{
		`ALTER TABLE runs ADD COLUMN budget TEXT NOT NULL DEFAULT ''`,
	},
}
