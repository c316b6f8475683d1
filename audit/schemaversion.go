package audit

import (
	"errors"
	"fmt"
)

// ErrSchemaTooNew: the database was migrated by a newer aicr than this
// one. Its tables may have changed in ways this binary would misread or
// damage, so it refuses to use it rather than guess.
var ErrSchemaTooNew = errors.New("database schema is newer than this aicr")

// SchemaVersionKnown is the schema this binary writes and reads: the
// number of migrations it knows.
func SchemaVersionKnown() int { return len(migrations) }

// Migrated says which schema version Open found (From, 0 for a new file)
// and left (To); they differ when Open applied migrations.
type Migrated struct {
	From, To int
}

// Migrated reports what Open did to the schema, for the daemon's log.
func (s *Store) Migrated() Migrated { return s.migrated }

// checkNotNewer refuses a database a newer aicr migrated: after a
// downgrade the old binary must not run on the new schema (the backup
// taken before the upgrade is the way back).
func checkNotNewer(path string, found int) error {
	if found <= len(migrations) {
		return nil
	}
	return fmt.Errorf("%w: %s is at schema version %d, this aicr knows versions up to %d: "+
		"run the aicr that upgraded it, or restore the backup taken before the upgrade (see README, Upgrade)",
		ErrSchemaTooNew, path, found, len(migrations))
}
