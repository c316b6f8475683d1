// Package pgtest starts a real PostgreSQL server for tests: initdb and
// pg_ctl from Debian's postgresql package, in a temporary directory, on a
// loopback port. One server serves a whole test process (initdb takes
// seconds); each test gets its own database. Run as root, the server runs
// as the user nobody, because postgres refuses to run as root.
//
// When the binaries are absent the tests that need them skip with the
// reason, unless AICR_REQUIRE_POSTGRES=1 (CI), where they fail.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// EnvDSN passes a running server's admin DSN to child test processes
// (re-executed test binaries, daemons), so they reuse it instead of
// starting their own.
const EnvDSN = "AICR_TEST_PG_ADMIN_DSN"

// EnvRequire makes a missing PostgreSQL a test failure instead of a skip.
const EnvRequire = "AICR_REQUIRE_POSTGRES"

// Server is a running PostgreSQL.
type Server struct {
	// AdminDSN connects to the maintenance database as the superuser.
	AdminDSN string
	dir      string
	pgCtl    string
	runAs    *syscall.Credential
	owned    bool
}

var (
	shared    *Server
	sharedErr error
	once      sync.Once
)

// Start returns the process's server, starting it on first use. It
// skips tb (or fails it, under AICR_REQUIRE_POSTGRES=1) when PostgreSQL
// is not installed.
func Start(tb testing.TB) *Server {
	tb.Helper()
	once.Do(func() { shared, sharedErr = start() })
	if sharedErr != nil {
		if errors.Is(sharedErr, errNotInstalled) && os.Getenv(EnvRequire) != "1" {
			tb.Skipf("PostgreSQL tests skipped: %v (install Debian's postgresql package, or set %s=1 to make this a failure)", sharedErr, EnvRequire)
		}
		tb.Fatalf("start PostgreSQL: %v", sharedErr)
	}
	return shared
}

// Main runs the tests and stops the server if one was started; call it
// from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	Stop()
	return code
}

// Stop stops the process's server if this process started it.
func Stop() {
	if shared != nil && shared.owned {
		cmd := exec.CommandContext(context.Background(), shared.pgCtl, "-D", filepath.Join(shared.dir, "data"), "-m", "immediate", "-w", "stop")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: shared.runAs}
		_ = cmd.Run()
		_ = os.RemoveAll(shared.dir)
	}
}

var errNotInstalled = errors.New("initdb and pg_ctl not found in PATH or /usr/lib/postgresql/*/bin")

func findBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		return matches[len(matches)-1], nil
	}
	return "", errNotInstalled
}

func start() (*Server, error) {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		return &Server{AdminDSN: dsn}, nil
	}
	initdb, err := findBin("initdb")
	if err != nil {
		return nil, err
	}
	pgCtl, err := findBin("pg_ctl")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "aicr-pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, pgCtl: pgCtl, owned: true}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			return nil, fmt.Errorf("running as root, and postgres refuses root: no user nobody to run it as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.runAs = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	run := func(name string, args ...string) error {
		// Not the first test's context: the server is shared by every
		// test of the process and outlives the one that starts it.
		cmd := exec.CommandContext(context.Background(), name, args...)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.runAs}
		// The server inherits no secrets and the locale is fixed, so
		// initdb does not depend on the host's LANG.
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LANG=C", "LC_ALL=C", "HOME=" + dir}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w\n%s", filepath.Base(name), err, out)
		}
		return nil
	}
	if err := run(initdb, "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200", port, dir)
	// Tests need no durability; benchmarks compare with SQLite's fsynced
	// commits and set AICR_PGTEST_FSYNC=on to pay the same price.
	if os.Getenv("AICR_PGTEST_FSYNC") != "on" {
		opts += " -c fsync=off"
	}
	if err := run(pgCtl, "-D", data, "-o", opts, "-l", filepath.Join(dir, "server.log"), "-w", "start"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.AdminDSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return s, nil
}

func freePort() (int, error) {
	l, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// NewDatabase creates an empty database and returns its DSN. It is
// dropped when tb ends (connections still open are ended first).
func (s *Server) NewDatabase(tb testing.TB) string {
	tb.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "t_" + hex.EncodeToString(b)
	dsn, err := s.CreateDatabase(name)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.DropDatabase(name) })
	return dsn
}

// CreateDatabase creates the named database and returns its DSN.
func (s *Server) CreateDatabase(name string) (string, error) {
	db, err := sql.Open("pgx", s.AdminDSN)
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.ExecContext(context.Background(), `CREATE DATABASE `+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.DSN(name), nil
}

// DropDatabase drops the named database, ending its connections.
func (s *Server) DropDatabase(name string) error {
	db, err := sql.Open("pgx", s.AdminDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
	return err
}

// DSN is the connection string of the named database on s.
func (s *Server) DSN(name string) string {
	u := s.AdminDSN
	// AdminDSN ends in /postgres?sslmode=disable.
	const tail = "/postgres?sslmode=disable"
	return u[:len(u)-len(tail)] + "/" + name + "?sslmode=disable"
}
