package e2e

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/internal/svntest"
)

// aicr demo end to end through the built binary: real svnadmin, the real
// hook, a daemon in the process, the builtin agent.
func TestDemo(t *testing.T) {
	svntest.Require(t)
	cmd := exec.Command(aicrBin, "demo")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("aicr demo: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	for _, want := range []string{"--- audit trail (aicr audit list) ---", "demo r2", "hard-coded-credential", "--- aicr audit show"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("stdout does not show %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr.String(), "==> committed r2") {
		t.Errorf("stderr lacks the progress lines:\n%s", stderr.String())
	}
}

func TestDemoWithoutSubversionExits1(t *testing.T) {
	cmd := exec.Command(aicrBin, "demo")
	cmd.Env = []string{"PATH=/nonexistent"}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "the demo needs svn") {
		t.Fatalf("err %v, output %s; want exit 1 naming svn", err, out)
	}
}
