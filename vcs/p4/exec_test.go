package p4_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
	. "github.com/aicr-dev/aicr/vcs/p4"
	"github.com/aicr-dev/aicr/vcs/vcstest"
)

func fakeAdapter(t *testing.T, body string, cfg Config) *Adapter {
	t.Helper()
	cfg.Port, cfg.User, cfg.DepotPaths = "localhost:1666", "aicr", []string{"//depot/main/..."}
	cfg.P4Path = vcstest.FakeTool(t, t.TempDir(), "p4", body)
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Issue 10 #9: a hung p4 is killed with its children at command_timeout
// and the failure is one the daemon retries.
func TestHungCommandKilledWithGroup(t *testing.T) {
	state := t.TempDir()
	a := fakeAdapter(t, vcstest.HangScript(state), Config{Charset: "none", CommandTimeout: 3 * time.Second})
	// Only a safety net so the pre-fix code fails instead of hanging.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := a.Fetch(ctx, "1", rundir.New(t.TempDir()))
	if !errors.Is(err, vcs.ErrTimeout) || !vcs.IsTransient(err) {
		t.Fatalf("Fetch of a hung p4 = %v, want vcs.ErrTimeout (transient)", err)
	}
	if !strings.Contains(err.Error(), "p4 describe") || !strings.Contains(err.Error(), "command_timeout") {
		t.Errorf("error %q should name the command and the key to raise", err)
	}
	vcstest.RequireGone(t, filepath.Join(state, "leader"))
	vcstest.RequireGone(t, filepath.Join(state, "child"))
}

// Issue 10 #9: p4 info used to run under the adapter's lock, so a second
// fetch waited for a hung server however short its own deadline.
func TestHungInfoDoesNotBlockOtherFetch(t *testing.T) {
	state := t.TempDir()
	started, release := filepath.Join(state, "started"), filepath.Join(state, "release")
	body := `case " $* " in *" info "*)
  : > ` + vcstest.Quote(started) + `
  while [ ! -e ` + vcstest.Quote(release) + ` ]; do sleep 0.05; done ;;
esac
echo "Connect to server failed; check \$P4PORT." >&2
exit 1
`
	a := fakeAdapter(t, body, Config{CommandTimeout: 10 * time.Minute})
	defer os.WriteFile(release, nil, 0o644)

	first := make(chan error, 1)
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	go func() { _, err := a.Fetch(ctx1, "1", rundir.New(t.TempDir())); first <- err }()
	vcstest.WaitFile(t, started)

	ctx2, cancel2 := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() { _, err := a.Fetch(ctx2, "2", rundir.New(t.TempDir())); second <- err }()
	cancel2()
	select {
	case err := <-second:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("second fetch = %v, want its own context's error", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the second fetch stayed blocked behind the first one's hung p4 info")
	}
	select {
	case err := <-first:
		t.Fatalf("first fetch returned (%v) while p4 info still hangs", err)
	default:
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-first; !errors.Is(err, vcs.ErrUnavailable) || !vcs.IsTransient(err) {
		t.Errorf("first fetch after the server answered = %v, want vcs.ErrUnavailable", err)
	}
}

// Issue 10 #26: secrets the daemon was given through *_env keys never
// reach p4; the variables the adapter sets on purpose do.
func TestChildEnvironmentHasNoDaemonSecrets(t *testing.T) {
	t.Setenv("AICR_TEST_WEBHOOK_SECRET", "hunter2-webhook")
	t.Setenv("P4PORT", "stray:1666")
	t.Setenv("AICR_TEST_P4PASSWD", "the-p4-password")
	dump := filepath.Join(t.TempDir(), "env")
	a := fakeAdapter(t, "env > "+vcstest.Quote(dump)+"\nexit 1\n",
		Config{Charset: "none", PasswordEnv: "AICR_TEST_P4PASSWD"})
	_, _ = a.Fetch(context.Background(), "1", rundir.New(t.TempDir()))
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	env := "\n" + string(b)
	for _, bad := range []string{"hunter2-webhook", "AICR_TEST_WEBHOOK_SECRET", "stray:1666", "AICR_TEST_P4PASSWD="} {
		if strings.Contains(env, bad) {
			t.Errorf("p4's environment contains %q:\n%s", bad, b)
		}
	}
	for _, want := range []string{"\nP4PASSWD=the-p4-password\n", "\nP4CONFIG=\n", "\nPATH="} {
		if !strings.Contains(env, want) {
			t.Errorf("p4's environment lacks %q:\n%s", strings.TrimSpace(want), b)
		}
	}
}

func TestUnreachableServerIsTransient(t *testing.T) {
	a := fakeAdapter(t, `printf 'Perforce client error:\n\tConnect to server failed; check $P4PORT.\n\tTCP connect to localhost:1666 failed.\n' >&2
exit 1
`, Config{Charset: "none"})
	_, err := a.Fetch(context.Background(), "1", rundir.New(t.TempDir()))
	if !errors.Is(err, vcs.ErrUnavailable) || !vcs.IsTransient(err) {
		t.Fatalf("Fetch against an unreachable server = %v, want vcs.ErrUnavailable", err)
	}
}

func TestCommandTimeoutValidated(t *testing.T) {
	err := Config{Port: "p:1", User: "u", DepotPaths: []string{"//d/..."}, CommandTimeout: -time.Second}.Validate()
	if err == nil || !strings.Contains(err.Error(), "command_timeout") {
		t.Fatalf("Validate = %v, want a command_timeout error", err)
	}
}
