package p4_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/internal/p4emu"
	. "github.com/aicr-dev/aicr/vcs/p4"
)

// emuBin is the p4 emulator, built once into a temp dir as "p4".
var emuBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "p4emu-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	emuBin = filepath.Join(dir, "p4")
	build := exec.Command("go", "build", "-o", emuBin, "github.com/aicr-dev/aicr/internal/p4emu/p4")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build p4 emulator:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// emuEnv points the emulator at depot d and an invocation log; it sets
// the process environment, so tests using it must not run in parallel.
type emuEnv struct {
	log string
	cfg Config
}

func newEmu(tb testing.TB, d *p4emu.Depot) *emuEnv {
	tb.Helper()
	dir := tb.TempDir()
	depot := filepath.Join(dir, "depot.json")
	if err := d.Save(depot); err != nil {
		tb.Fatal(err)
	}
	e := &emuEnv{log: filepath.Join(dir, "p4.log")}
	// Tests that change the depot mid-test read these back.
	tb.Setenv(p4emu.EnvDepot, depot)
	tb.Setenv(p4emu.EnvLog, e.log)
	wrapper, err := p4emu.WriteWrapper(filepath.Join(dir, "bin"), emuBin, depot, e.log)
	if err != nil {
		tb.Fatal(err)
	}
	e.cfg = Config{Port: "localhost:1666", User: "aicr", P4Path: wrapper, DepotPaths: p4emu.DepotPaths}
	return e
}

func (e *emuEnv) adapter(tb testing.TB) *Adapter {
	tb.Helper()
	a, err := New(e.cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// calls returns the argv of every p4 invocation so far.
func (e *emuEnv) calls() []string {
	b, _ := os.ReadFile(e.log)
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func (e *emuEnv) reset() { os.Remove(e.log) }
