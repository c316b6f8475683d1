package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// hotStmts are the statements every intake request runs. They are
// prepared once, on an idle pool at Open, and each transaction borrows
// them with tx.StmtContext, which database/sql prepares at most once per
// connection: compiling the SQL text on every request was about 29% of
// the intake's CPU.
type hotStmts struct {
	savepoint, rollbackTo, release *sql.Stmt

	insertEvent, insertEventOnce, insertRun, findPrimary *sql.Stmt

	recordSignature, pruneSignatures *sql.Stmt
}

const (
	sqlInsertEvent = `INSERT INTO events
		(vcs, repo, revision, user, client, source, received_at, payload, duplicate_of)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// The conflict clause names the partial unique index, so the database
	// itself decides who is primary; no read-then-write race even if a
	// writer were not using BEGIN IMMEDIATE.
	sqlInsertEventOnce = sqlInsertEvent + `
		ON CONFLICT (repo, revision) WHERE duplicate_of IS NULL AND source <> 'manual' DO NOTHING
		RETURNING id`
	sqlInsertRun = `INSERT INTO runs
		(event_id, vcs, repo, revision, status, queued_at) VALUES (?, ?, ?, ?, ?, ?)`
	sqlFindPrimary = `SELECT e.id, r.id FROM events e JOIN runs r ON r.event_id = e.id
		WHERE e.repo = ? AND e.revision = ? AND e.duplicate_of IS NULL AND e.source <> 'manual'`
	sqlRecordSignature = `INSERT INTO replay_signatures (signature, expires_at) VALUES (?, ?)
		ON CONFLICT (signature) DO NOTHING`
	sqlPruneSignatures = `DELETE FROM replay_signatures WHERE expires_at < ?`
)

func prepareHotStmts(ctx context.Context, db *sql.DB) (*hotStmts, error) {
	h := &hotStmts{}
	for _, p := range []struct {
		dst   **sql.Stmt
		query string
	}{
		{&h.savepoint, `SAVEPOINT op`},
		{&h.rollbackTo, `ROLLBACK TO op`},
		{&h.release, `RELEASE op`},
		{&h.insertEvent, sqlInsertEvent},
		{&h.insertEventOnce, sqlInsertEventOnce},
		{&h.insertRun, sqlInsertRun},
		{&h.findPrimary, sqlFindPrimary},
		{&h.recordSignature, sqlRecordSignature},
		{&h.pruneSignatures, sqlPruneSignatures},
	} {
		st, err := db.PrepareContext(ctx, p.query) //nolint:sqlclosecheck // kept in h for the store's life; h.close closes it (and does here on error)
		if err != nil {
			h.close()
			return nil, fmt.Errorf("prepare %q: %w", p.query, err)
		}
		*p.dst = st
	}
	return h, nil
}

// in is st bound to tx (closed with it).
func (h *hotStmts) in(ctx context.Context, tx *sql.Tx, st *sql.Stmt) *sql.Stmt {
	return tx.StmtContext(ctx, st)
}

func (h *hotStmts) close() error {
	if h == nil {
		return nil
	}
	var errs []error
	for _, st := range []*sql.Stmt{h.savepoint, h.rollbackTo, h.release, h.insertEvent, h.insertEventOnce, h.insertRun, h.findPrimary, h.recordSignature, h.pruneSignatures} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}
