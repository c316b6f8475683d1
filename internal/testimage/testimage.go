// Package testimage finds the agent images `make image` and
// `make image-node` build, for the tests that run Podman. Those tests run
// the shipped images and never build one of their own: a test image
// (FROM scratch, no ENTRYPOINT) once hid that the shipped one could not
// run a review at all.
//
// `make test` builds the images first and compiles the tests with
// -X buildinfo.Version=$(VERSION), so sandbox.DefaultImage() is the image
// that very build made. A test run by hand (go test, Version "dev") uses
// the :latest tag the Makefile adds to every build.
package testimage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/aicr-dev/aicr/internal/buildinfo"
)

// EnvRequire makes a missing image a failure instead of a skip; `make
// test` and CI set it, since they build the images first.
const EnvRequire = "AICR_REQUIRE_IMAGES"

// Repositories of the shipped images (the Makefile's IMAGE and NODE_IMAGE).
const (
	AgentRepo = "localhost/aicr-agent"
	NodeRepo  = "localhost/aicr-agent-node"
)

// ContainersConf is the repo's configs/containers.conf (runc, no default
// ulimits), the one the Makefile exports to podman.
func ContainersConf(tb testing.TB) string {
	tb.Helper()
	p := containersConf()
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("configs/containers.conf: %v", err)
	}
	return p
}

func containersConf() string {
	_, file, _, _ := runtime.Caller(0)
	p, _ := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", "configs", "containers.conf"))
	return p
}

// RequirePodman fails (never skips) without podman unless
// AICR_TEST_NO_PODMAN=1: `make test` installs it, and a sandbox suite
// that silently skips proves nothing.
func RequirePodman(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		if os.Getenv("AICR_TEST_NO_PODMAN") == "1" {
			tb.Skip("podman not installed and AICR_TEST_NO_PODMAN=1")
		}
		tb.Fatal("podman is not installed: run `make test`, which installs podman and runc (or set AICR_TEST_NO_PODMAN=1 to skip the sandbox tests explicitly)")
	}
}

var (
	mu    sync.Mutex
	found = map[string]string{} // repo → tag
)

// TagOf is the tag of repo's shipped image these tests use:
// buildinfo.Version when that image exists (a `make test` build), else
// "latest"; ok is false when neither exists or podman is missing. It
// needs no testing.TB, for a TestMain that builds aicr (see BuildFlags).
func TagOf(repo string) (tag string, ok bool) {
	mu.Lock()
	defer mu.Unlock()
	if tag, ok := found[repo]; ok {
		return tag, true
	}
	if _, err := exec.LookPath("podman"); err != nil {
		return "", false
	}
	candidates := []string{buildinfo.Version, "latest"}
	if buildinfo.Version == "latest" {
		candidates = candidates[:1]
	}
	for _, tag := range candidates {
		cmd := exec.CommandContext(context.Background(), "podman", "--runtime", "runc", "image", "exists", repo+":"+tag)
		cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+containersConf())
		if cmd.Run() == nil {
			found[repo] = tag
			return tag, true
		}
	}
	return "", false
}

// Tag is TagOf for a test: without the image it fails under
// AICR_REQUIRE_IMAGES or CI, and skips naming the remedy otherwise.
func Tag(tb testing.TB, repo string) string {
	tb.Helper()
	RequirePodman(tb)
	if tag, ok := TagOf(repo); ok {
		return tag
	}
	target := "image"
	if repo == NodeRepo {
		target = "image-node"
	}
	msg := fmt.Sprintf("image %s:%s not found (nor :latest): run `make %s` (`make test` does) so the tests run the image aicr ships",
		repo, buildinfo.Version, target)
	if os.Getenv(EnvRequire) != "" || os.Getenv("CI") != "" {
		tb.Fatal(msg)
	}
	tb.Skip(msg + "; set " + EnvRequire + "=1 to make this a failure")
	return ""
}

// Agent is the image `make image` builds (builtin and llm agents).
func Agent(tb testing.TB) string {
	tb.Helper()
	return AgentRepo + ":" + Tag(tb, AgentRepo)
}

// Node is the image `make image-node` builds (agent CLIs).
func Node(tb testing.TB) string {
	tb.Helper()
	return NodeRepo + ":" + Tag(tb, NodeRepo)
}

// BuildFlags are the `go build` flags for a test's build of aicr, so
// that the binary's default image (sandbox.DefaultImage) is the shipped
// one; none when the image is missing (the tests that need it say so).
func BuildFlags() []string {
	tag, ok := TagOf(AgentRepo)
	if !ok {
		return nil
	}
	return []string{"-ldflags", "-X github.com/aicr-dev/aicr/internal/buildinfo.Version=" + tag}
}

// Podman runs podman with the repo's containers.conf, for test set-up.
func Podman(tb testing.TB, args ...string) (string, error) {
	tb.Helper()
	// Not tb.Context(): it ends before tb's Cleanup, where set-up is undone.
	cmd := exec.CommandContext(context.Background(), "podman", append([]string{"--runtime", "runc"}, args...)...)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+ContainersConf(tb))
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
