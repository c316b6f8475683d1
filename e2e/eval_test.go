package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aicr-dev/aicr/eval"
	"github.com/aicr-dev/aicr/internal/svntest"
)

// aicr eval with a column in the sandbox: the shipped binary, the image
// `make image` ships (no image key: the default, as an installation
// runs it), network none. The builtin agent in Podman scores exactly as
// it does on the host, over the built-in suite's leaked-credential cases.
func TestEvalColumnInTheSandbox(t *testing.T) {
	svntest.Require(t)
	requireAgentImage(t)
	dir := t.TempDir()
	native := filepath.Join(dir, "native.toml")
	boxed := filepath.Join(dir, "podman.toml")
	if err := os.WriteFile(native, []byte("[agent]\nkind = \"builtin\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(boxed, []byte(fmt.Sprintf(`[agent]
kind = "builtin"

[sandbox]
kind = "podman"
network = "none"

[sandbox.podman]
runtime = "runc"
containers_conf = %q
`, sandboxContainersConf(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runAicr(t, dir, "eval", "builtin", "--cases", "*-leaked-credential-*",
		"--agent-config", native, "--agent-config", boxed, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var rep eval.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Columns) != 2 || rep.Cases < 3 {
		t.Fatalf("report: %d columns, %d cases\n%s", len(rep.Columns), rep.Cases, errOut)
	}
	n, p := rep.Columns[0], rep.Columns[1]
	if n.Failed != 0 || p.Failed != 0 {
		t.Fatalf("failed reviews: native %d, podman %d\n%s", n.Failed, p.Failed, errOut)
	}
	a, b := n.Heuristic.First, p.Heuristic.First
	if a.TP == 0 || a.TP != b.TP || a.FP != b.FP || a.FN != b.FN {
		t.Errorf("native %+v\npodman %+v", a, b)
	}
	t.Logf("%d cases: native %s, podman %s per review", rep.Cases, n.PerReview.Wall, p.PerReview.Wall)
}
