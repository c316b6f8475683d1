package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/daemon"
)

// DBMigrateOptions are the inputs of `aicr db migrate`.
type DBMigrateOptions struct {
	Factory *Factory
	To      string
	From    string
	Format  string
}

func newCmdDBMigrate(f *Factory, runF func(context.Context, *DBMigrateOptions) error) *cobra.Command {
	opts := &DBMigrateOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "migrate --to postgres [--from FILE]",
		Short: "Copy a SQLite audit database into the configured PostgreSQL database",
		Long: `Copies every row of the SQLite database (ids kept) into the PostgreSQL
database named by [store] dsn_env or dsn_file, migrated first to this aicr's
schema, resets its id sequences and checks that every table has as many rows
as the source. The destination must be empty; nothing is written unless the
whole copy succeeds. Stop the daemon first (what it writes after the copy
starts is not copied), set [store] kind = "postgres" with dsn_env or
dsn_file, run this, then start the daemon again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if opts.To != string(audit.BackendPostgres) {
				return usageErrorf(`--to must be "postgres", got %q`, opts.To)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return dbMigrateRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&opts.To, "to", "", `the destination backend: "postgres" (required)`)
	cmd.Flags().StringVar(&opts.From, "from", "", "the SQLite file to copy (default: aicr.db in the config's data_dir)")
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

func dbMigrateRun(ctx context.Context, opts *DBMigrateOptions) error {
	cfg, err := opts.Factory.Config()
	if err != nil {
		return err
	}
	if !cfg.Store.Shared() {
		return fmt.Errorf(`%s: [store] kind is %q: set kind = "postgres" and dsn_env or dsn_file (the destination), then run this again`, cfg.Path, cfg.Store.Kind)
	}
	dsn, err := cfg.StoreDSN()
	if err != nil {
		return err
	}
	from := opts.From
	if from == "" {
		from = config.DBPath(cfg)
	}
	if _, err := os.Stat(from); err != nil {
		return fmt.Errorf("--from %s: %w", from, err)
	}
	// A daemon still writing the file would lose what it writes after the
	// copy's snapshot: hold the lock a daemon on that data_dir holds.
	if dir := filepath.Dir(from); isFile(filepath.Join(dir, "daemon.lock")) {
		unlock, err := daemon.LockDataDir(dir)
		if err != nil {
			return fmt.Errorf("--from %s: %w", from, err)
		}
		defer unlock()
	}
	// A file the previous aicr wrote is at an older schema: bring it to
	// this aicr's, as its daemon would at start (the destination is
	// migrated to the same version), so the copy needs no detour through
	// a daemon on SQLite.
	up, err := audit.Open(ctx, from)
	if err != nil {
		return fmt.Errorf("--from %s: %w", from, err)
	}
	if m := up.Migrated(); m.From != m.To {
		fmt.Fprintf(opts.Factory.IOStreams.ErrOut, "upgraded %s from schema version %d to %d\n", from, m.From, m.To)
	}
	if err := up.Close(); err != nil {
		return fmt.Errorf("--from %s: %w", from, err)
	}
	src, err := audit.OpenReadOnly(ctx, from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := audit.OpenPostgres(ctx, dsn)
	if err != nil {
		return err
	}
	defer dst.Close()
	// The run directories of the copied runs stay in this data_dir.
	dst.SetRunHome(cfg.Daemon.DataDir)
	counts, err := audit.CopyAll(ctx, src, dst)
	if err != nil {
		return err
	}
	out := newExporter(opts.Factory.IOStreams, opts.Format)
	if out.JSON() {
		return writeJSON(opts.Factory.IOStreams.Out, map[string]any{"from": from, "to": audit.RedactDSN(dsn), "tables": counts})
	}
	tw := tabwriter.NewWriter(opts.Factory.IOStreams.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tSOURCE\tCOPIED")
	for _, c := range counts {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", c.Table, c.Source, c.Copied)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(opts.Factory.IOStreams.Out, "copied %s to %s; every table matches. Start the daemon.\n", from, audit.RedactDSN(dsn))
	return err
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
