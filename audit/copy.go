package audit

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
)

// TableCount is how many rows one table had in the source and has in the
// destination after CopyAll.
type TableCount struct {
	Table  string `json:"table"`
	Source int64  `json:"source"`
	Copied int64  `json:"copied"`
}

// CopyAll copies every row of every table of src, a SQLite store, into
// dst (a PostgreSQL store, migrated to the same schema version), keeping
// ids, then moves dst's id sequences past the copied ids and checks the
// counts. It reads src in one read-only transaction (one snapshot) and
// refuses a dst that already holds rows, so it never mixes two histories.
// Stop the daemon first: what it writes after the snapshot is not copied.
func CopyAll(ctx context.Context, src, dst *Store) ([]TableCount, error) {
	if src.backend != BackendSQLite {
		return nil, fmt.Errorf("copy: %w: the source must be a SQLite database", ErrInvalid)
	}
	sv, err := src.SchemaVersion(ctx)
	if err != nil {
		return nil, err
	}
	dv, err := dst.SchemaVersion(ctx)
	if err != nil {
		return nil, err
	}
	if sv != dv {
		return nil, fmt.Errorf("copy: the source is at schema version %d, the destination at %d: run the same aicr on both (start the daemon once on the SQLite file to upgrade it)", sv, dv)
	}
	rtx, err := src.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("copy: read source: %w", err)
	}
	defer rtx.Rollback()
	tables, err := sqliteTablesInOrder(ctx, rtx)
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		var n int64
		if err := dst.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+t).Scan(&n); err != nil {
			return nil, fmt.Errorf("copy: destination table %s: %w (is the destination migrated by this aicr?)", t, err)
		}
		if n > 0 {
			return nil, fmt.Errorf("copy: the destination already has %d rows in %s: copy into an empty database (create a new one, or drop and recreate it)", n, t)
		}
	}
	wtx, err := dst.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("copy: begin: %w", err)
	}
	defer wtx.Rollback()
	var counts []TableCount
	for _, t := range tables {
		n, err := copyTable(ctx, rtx, wtx, t)
		if err != nil {
			return nil, fmt.Errorf("copy %s: %w", t, err)
		}
		counts = append(counts, TableCount{Table: t, Source: n})
	}
	if dst.backend == BackendPostgres {
		for _, t := range tables {
			if !idTables()[t] {
				continue
			}
			// Sequences were not advanced by inserts with explicit ids.
			if _, err := wtx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence('`+t+`', 'id'), COALESCE(MAX(id), 0) + 1, false) FROM `+t); err != nil {
				return nil, fmt.Errorf("copy: reset the id sequence of %s: %w", t, err)
			}
		}
	}
	// The copied runs' directories are in the data_dir beside the SQLite
	// file, on this host: dst's run home (SetRunHome) says so, or another
	// daemon's retention would mark them pruned without removing them.
	if dst.home != "" {
		if _, err := wtx.ExecContext(ctx, `UPDATE runs SET run_home = ? WHERE run_home = '' AND run_dir != ''`, dst.home); err != nil {
			return nil, fmt.Errorf("copy: record where the run directories are: %w", err)
		}
	}
	for i, c := range counts {
		if err := wtx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+c.Table).Scan(&counts[i].Copied); err != nil {
			return nil, fmt.Errorf("copy: count %s: %w", c.Table, err)
		}
		if counts[i].Copied != c.Source {
			return nil, fmt.Errorf("copy: %s has %d rows in the source but %d were written; nothing was committed", c.Table, c.Source, counts[i].Copied)
		}
	}
	if err := wtx.Commit(); err != nil {
		return nil, fmt.Errorf("copy: commit: %w", err)
	}
	return counts, nil
}

// sqliteTablesInOrder lists the source's tables (but schema_migrations,
// which the destination's own migrations fill) so that every table comes
// after the tables its foreign keys point at.
func sqliteTablesInOrder(ctx context.Context, tx *sql.Tx) ([]string, error) {
	names, err := queryStrings(ctx, tx, `SELECT name FROM sqlite_master WHERE type = 'table'
		AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations' ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("copy: list tables: %w", err)
	}
	deps := map[string][]string{}
	for _, n := range names {
		fks, err := queryStrings(ctx, tx, `SELECT "table" FROM pragma_foreign_key_list(?)`, n)
		if err != nil {
			return nil, fmt.Errorf("copy: foreign keys of %s: %w", n, err)
		}
		for _, to := range fks {
			if to != n {
				deps[n] = append(deps[n], to)
			}
		}
	}
	var out []string
	done := map[string]bool{}
	var visit func(string)
	visit = func(n string) {
		if done[n] {
			return
		}
		done[n] = true
		for _, d := range deps[n] {
			visit(d)
		}
		out = append(out, n)
	}
	sort.Strings(names)
	for _, n := range names {
		visit(n)
	}
	return out, nil
}

func copyTable(ctx context.Context, rtx, wtx *sql.Tx, table string) (int64, error) {
	rows, err := rtx.QueryContext(ctx, `SELECT * FROM `+table+` ORDER BY rowid`)
	if err != nil && strings.Contains(err.Error(), "rowid") {
		rows, err = rtx.QueryContext(ctx, `SELECT * FROM `+table) // WITHOUT ROWID tables
	}
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	insert, err := wtx.PrepareContext(ctx, `INSERT INTO `+table+` (`+strings.Join(cols, ", ")+`) VALUES (`+
		strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")+`)`)
	if err != nil {
		return 0, err
	}
	defer insert.Close()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var n int64
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		if _, err := insert.ExecContext(ctx, vals...); err != nil {
			return n, fmt.Errorf("row %d: %w", n+1, err)
		}
		n++
	}
	return n, rows.Err()
}
