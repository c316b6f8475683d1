package config

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/secret"
)

// Store is the [store] table: which database holds the queue and
// the audit trail. SQLite (the default) is a file in data_dir that one
// daemon owns; PostgreSQL is shared by several daemons on several hosts.
// The DSN carries a password, so it is only ever read from an environment
// variable or a file, never written in the config.
type Store struct {
	Kind    string `toml:"kind"`
	DSNEnv  string `toml:"dsn_env"`
	DSNFile string `toml:"dsn_file"`
}

// Shared says whether several daemons may use the store at once.
func (s Store) Shared() bool { return s.Kind == string(audit.BackendPostgres) }

func (s Store) dsnRef() secret.Ref { return secret.Ref{Env: s.DSNEnv, File: s.DSNFile} }

func (c *Config) validateStore() []fieldProblem {
	var out []fieldProblem
	s := &c.Store
	switch s.Kind {
	case "":
		s.Kind = string(audit.BackendSQLite)
	case string(audit.BackendSQLite), string(audit.BackendPostgres):
	default:
		return []fieldProblem{{"store.kind", fmt.Sprintf(`unknown store kind %q: use "sqlite" (a file in data_dir, the default) or "postgres"`, s.Kind)}}
	}
	switch {
	case s.Kind == string(audit.BackendSQLite) && !s.dsnRef().IsZero():
		out = append(out, fieldProblem{"store.dsn_env", `dsn_env/dsn_file are for kind = "postgres"; SQLite lives in data_dir`})
	case s.Kind == string(audit.BackendPostgres):
		if err := s.dsnRef().Validate("store.dsn", true); err != nil {
			out = append(out, fieldProblem{"store.dsn_env", fmt.Sprintf(`%v (the connection string, password included, e.g. postgres://aicr:PASSWORD@db:5432/aicr?sslmode=require)`, err)})
		}
	}
	return out
}

// StoreDSN reads the PostgreSQL connection string from dsn_env or
// dsn_file. Errors name the key, never the value.
func (c *Config) StoreDSN() (string, error) {
	v, err := c.Store.dsnRef().Read()
	if err != nil {
		key := "dsn_file"
		if c.Store.DSNEnv != "" {
			key = "dsn_env"
		}
		return "", fmt.Errorf("[store] %s: %w", key, err)
	}
	return v.Reveal(), nil
}

// DBPath is where the queue and audit trail live under data_dir.
func DBPath(cfg *Config) string { return filepath.Join(cfg.Daemon.DataDir, "aicr.db") }

// StoreLocation names the store for logs and messages, without secrets.
func StoreLocation(cfg *Config) string {
	if cfg.Store.Shared() {
		dsn, err := cfg.StoreDSN()
		if err != nil {
			return "postgres (" + err.Error() + ")"
		}
		return "postgres " + audit.RedactDSN(dsn)
	}
	return DBPath(cfg)
}

// OpenStore opens the configured store read-write, migrating it. On a
// shared store the run directories it records are this host's data_dir
// (audit.Store.SetRunHome): retention here removes only those.
func OpenStore(ctx context.Context, cfg *Config) (*audit.Store, error) {
	if cfg.Store.Shared() {
		dsn, err := cfg.StoreDSN()
		if err != nil {
			return nil, err
		}
		s, err := audit.OpenPostgres(ctx, dsn)
		if err != nil {
			return nil, err
		}
		s.SetRunHome(cfg.Daemon.DataDir)
		return s, nil
	}
	return audit.Open(ctx, DBPath(cfg))
}

// OpenStoreReadOnly opens the configured store for reading only; it
// creates and migrates nothing.
func OpenStoreReadOnly(ctx context.Context, cfg *Config) (*audit.Store, error) {
	if cfg.Store.Shared() {
		dsn, err := cfg.StoreDSN()
		if err != nil {
			return nil, err
		}
		return audit.OpenPostgresReadOnly(ctx, dsn)
	}
	return audit.OpenReadOnly(ctx, DBPath(cfg))
}
