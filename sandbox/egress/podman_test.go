package egress_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/internal/testimage"
	"github.com/aicr-dev/aicr/sandbox"
	"github.com/aicr-dev/aicr/sandbox/egress"
)

// podman returns the podman binary and the environment to run it with.
// It fails (never skips) without podman, like the sandbox suite: `make
// test` installs it; AICR_TEST_NO_PODMAN=1 skips explicitly. The
// repository's configs/containers.conf (runc, no default ulimits) is used
// unless CONTAINERS_CONF names another.
func podman(t *testing.T) (string, []string) {
	t.Helper()
	bin, err := exec.LookPath("podman")
	if err != nil {
		if os.Getenv("AICR_TEST_NO_PODMAN") == "1" {
			t.Skip("podman not installed and AICR_TEST_NO_PODMAN=1")
		}
		t.Fatal("podman is not installed: run `make test`, which installs podman and runc (or set AICR_TEST_NO_PODMAN=1 to skip the sandbox tests explicitly)")
	}
	env := os.Environ()
	if os.Getenv("CONTAINERS_CONF") == "" {
		_, file, _, _ := runtime.Caller(0)
		conf := filepath.Join(filepath.Dir(file), "..", "..", "configs", "containers.conf")
		if _, err := os.Stat(conf); err == nil {
			env = append(env, "CONTAINERS_CONF="+conf)
		}
	}
	return bin, env
}

// A container with no network and the run's egress socket mounted
// reaches the allowlisted server only through the proxy: direct dials
// fail, a non-allowlisted target is refused, and the proxy recorded each.
func TestPodmanLLMOnlyEgress(t *testing.T) {
	bin, env := podman(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	work := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(work, "probe"), "./testdata/probe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build probe: %v\n%s", err, out)
	}
	// The image `make image` ships, with the probe where the runner
	// mounts the daemon's binary: its ENTRYPOINT runs the probe.
	image := testimage.Agent(t)

	allowedSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") }))
	defer allowedSrv.Close()
	otherSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("non-allowlisted server reached")
	}))
	defer otherSrv.Close()

	runDir, err := os.MkdirTemp("", "run")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(runDir)
	if err := os.Chmod(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	allow, err := egress.AllowlistFromURLs(allowedSrv.URL)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	p, m, err := egress.ForRun(runDir, allow, rec.record)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	cmd := exec.CommandContext(ctx, bin, "run", "--rm", "--network", "none", "--read-only",
		"--cap-drop", "all", "--security-opt", "no-new-privileges", "--user", "65534:65534",
		"-v", m.HostDir+":"+m.ContainerDir+":ro",
		"-v", filepath.Join(work, "probe")+":"+sandbox.BinaryMount+":ro", image,
		m.ContainerSocket, allowedSrv.URL+"/", otherSrv.URL+"/")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	t.Logf("probe:\n%s", out)
	if err != nil {
		t.Fatalf("probe failed: %v", err)
	}
	for _, check := range []string{"dialer-allowed ok", "dialer-refused ok", "direct-blocked ok", "forward-allowed ok", "forward-refused ok"} {
		if !strings.Contains(string(out), check) {
			t.Errorf("probe did not report %q", check)
		}
	}
	var allowed, refused int
	otherHost := strings.TrimPrefix(otherSrv.URL, "http://")
	for _, e := range rec.all() {
		hp := net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
		switch {
		case e.Allowed && hp == allow[0]:
			allowed++
		case !e.Allowed && hp == otherHost:
			refused++
		default:
			t.Errorf("unexpected event %+v", e)
		}
	}
	if allowed != 2 || refused != 2 {
		t.Errorf("recorded %d allowed and %d refused, want 2 and 2: %+v", allowed, refused, rec.all())
	}
}
