package doctor

import (
	"context"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/internal/pgtest"
)

func storeCheck(t *testing.T, cfg *config.Config, name string) Check {
	t.Helper()
	for _, c := range checkStore(context.Background(), cfg) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s check in %+v", name, checkStore(context.Background(), cfg))
	return Check{}
}

func TestStoreChecksOnPostgres(t *testing.T) {
	srv := pgtest.Start(t)
	t.Cleanup(pgtest.Stop)
	ctx := context.Background()
	cfg := &config.Config{Path: "/etc/aicr/aicr.toml", Store: config.Store{Kind: "postgres", DSNEnv: "AICR_DOCTOR_TEST_DSN"}}

	t.Setenv("AICR_DOCTOR_TEST_DSN", "")
	if c := storeCheck(t, cfg, CheckStore); c.Status == StatusOK || !strings.Contains(c.Detail, "dsn_env") || c.Fix == "" {
		t.Fatalf("unset DSN: %+v", c)
	}

	t.Setenv("AICR_DOCTOR_TEST_DSN", "postgres://aicr:hunter2@127.0.0.1:1/aicr?sslmode=disable")
	c := storeCheck(t, cfg, CheckStore)
	if c.Status == StatusOK || !strings.Contains(c.Fix, "pg_hba.conf") || strings.Contains(c.Detail+c.Fix, "hunter2") {
		t.Fatalf("unreachable server (and the password must not show): %+v", c)
	}

	dsn := srv.NewDatabase(t)
	t.Setenv("AICR_DOCTOR_TEST_DSN", dsn)
	if c := storeCheck(t, cfg, CheckStoreSchema); c.Status == StatusOK || !strings.Contains(c.Fix, "aicr db migrate --to postgres") {
		t.Fatalf("empty database: %+v", c)
	}

	s, err := audit.OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c := storeCheck(t, cfg, CheckStoreSchema); c.Status != StatusOK {
		t.Fatalf("migrated database: %+v", c)
	}
	if c := storeCheck(t, cfg, CheckStoreDaemons); c.Status == StatusOK || !strings.Contains(c.Detail, "no daemon") {
		t.Fatalf("no daemon yet: %+v", c)
	}
	if err := s.Heartbeat(ctx, "9.9.9", "10.1.2.3:8080"); err != nil {
		t.Fatal(err)
	}
	if c := storeCheck(t, cfg, CheckStoreDaemons); c.Status != StatusOK || !strings.Contains(c.Detail, "aicr 9.9.9") || !strings.Contains(c.Detail, "10.1.2.3:8080") {
		t.Fatalf("one live daemon: %+v", c)
	}
	if checkStore(ctx, &config.Config{}) != nil {
		t.Fatal("a SQLite store has no store checks")
	}
}
