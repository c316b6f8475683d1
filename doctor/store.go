package doctor

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/daemon"
)

// Checks of a shared store ([store] kind = "postgres").
const (
	CheckStore        = "store"         // the database reachable with the configured DSN
	CheckStoreSchema  = "store-schema"  // its schema at this aicr's version
	CheckStoreDaemons = "store-daemons" // daemons heartbeating into it
)

// checkStore checks a PostgreSQL store: the connection, the schema
// version and the daemons alive on it. A SQLite store is a file the
// daemon creates; nothing to check here.
func checkStore(ctx context.Context, cfg *config.Config) []Check {
	if !cfg.Store.Shared() {
		return nil
	}
	conn := Check{Name: CheckStore, Status: StatusFail}
	dsn, err := cfg.StoreDSN()
	if err != nil {
		conn.Detail = err.Error()
		conn.Fix = "set the variable [store] dsn_env names in the daemon's environment, or make the file dsn_file names readable by the daemon's user; it holds e.g. postgres://aicr:PASSWORD@db:5432/aicr?sslmode=require"
		return []Check{conn}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	now := time.Now()
	st, err := audit.InspectPostgres(ctx, dsn, now.Add(-daemon.LiveWithin))
	where := audit.RedactDSN(dsn)
	if err != nil {
		conn.Detail = err.Error()
		conn.Fix = fmt.Sprintf("check that PostgreSQL runs and accepts this host (pg_hba.conf, listen_addresses, firewall), and the user, password and database in the DSN (%s)", where)
		return []Check{conn}
	}
	conn.Status = StatusOK
	conn.Detail = fmt.Sprintf("connected to %s (PostgreSQL %s)", where, st.ServerVersion)
	out := []Check{conn}

	schema := Check{Name: CheckStoreSchema, Status: StatusFail}
	want := audit.LatestSchemaVersion()
	switch {
	case st.SchemaVersion == 0:
		schema.Detail = "the database has no aicr schema yet"
		schema.Fix = "start one daemon (it migrates the database), or copy an existing SQLite database first: aicr db migrate --to postgres --config " + shellQuote(cfg.Path)
	case st.SchemaVersion < want:
		schema.Detail = fmt.Sprintf("schema version %d, this aicr needs %d", st.SchemaVersion, want)
		schema.Fix = "restart a daemon with this aicr: it migrates the schema forward (the others keep working with the new columns)"
	case st.SchemaVersion > want:
		schema.Detail = fmt.Sprintf("schema version %d is newer than this aicr's %d: a newer aicr migrated it", st.SchemaVersion, want)
		schema.Fix = "upgrade aicr on this host to the version the other daemons run"
	default:
		schema.Status = StatusOK
		schema.Detail = fmt.Sprintf("schema version %d (current)", st.SchemaVersion)
	}
	out = append(out, schema)
	if schema.Status != StatusOK {
		return out
	}

	live := Check{Name: CheckStoreDaemons, Status: StatusFail}
	if len(st.Daemons) == 0 {
		live.Detail = fmt.Sprintf("no daemon has heartbeat into the database in the last %s: nothing reviews the queue", daemon.LiveWithin)
		live.Fix = "start the daemons: systemctl start aicr (or aicr daemon --config " + shellQuote(cfg.Path) + ") on each host"
		return append(out, live)
	}
	versions := map[string]bool{}
	var parts []string
	for _, d := range st.Daemons {
		versions[d.Version] = true
		parts = append(parts, fmt.Sprintf("%s pid %d (aicr %s, %s, seen %s ago)", d.Host, d.PID, d.Version, d.Listen, now.Sub(d.LastSeen).Round(time.Second)))
	}
	sort.Strings(parts)
	live.Status = StatusOK
	live.Detail = fmt.Sprintf("%d daemon(s) alive: %s", len(st.Daemons), strings.Join(parts, "; "))
	if len(versions) > 1 {
		live.Detail += "; they run different aicr versions: finish the upgrade on every host"
	}
	return append(out, live)
}
