package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"
)

func newCmdDB(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "db",
		Short: "Maintain the audit database: backups",
	}
	cmd.AddCommand(newCmdDBBackup(f, nil))
	return cmd
}

// DBBackupOptions are the inputs of `aicr db backup`.
type DBBackupOptions struct {
	Factory *Factory
	File    string
	Format  string
}

func newCmdDBBackup(f *Factory, runF func(context.Context, *DBBackupOptions) error) *cobra.Command {
	opts := &DBBackupOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of the audit database to FILE (safe while the daemon runs)",
		Long: `Write a consistent copy of the audit database (aicr.db) to FILE with
SQLite's VACUUM INTO, then open the copy and check it. Safe while the daemon
runs: the copy is one read transaction and the daemon keeps writing. FILE must
not exist (a backup never overwrites); it is created with mode 0600.
Restore: stop the daemon, copy FILE over <data_dir>/aicr.db (remove aicr.db-wal
and aicr.db-shm), start the daemon.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			opts.File = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return dbBackupRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

func dbBackupRun(ctx context.Context, opts *DBBackupOptions) error {
	file, err := filepath.Abs(opts.File)
	if err != nil {
		return fmt.Errorf("backup file %s: %w", opts.File, err)
	}
	store, err := opts.Factory.ReadOnlyStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	info, err := store.Backup(ctx, file)
	if err != nil {
		return err
	}
	return newExporter(opts.Factory.IOStreams, opts.Format).Write(info, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "backed up %s to %s: %d bytes, schema version %d, %d runs, %d events, %d dispatches (integrity check ok)\n",
			store.Path(), info.Path, info.Bytes, info.SchemaVersion, info.Runs, info.Events, info.Dispatches)
		return err
	})
}
