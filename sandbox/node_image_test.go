package sandbox_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/internal/testimage"
)

// The Node.js image built without a registry runs node through the
// sandbox runner (no network, read-only root, non-root user), and its
// Node is new enough for the agent CLIs (>= 20).
func TestNodeImageRunsNode20InSandbox(t *testing.T) {
	_, cfg := probeSetup(t)
	img := testimage.Node(t)
	cfg.Podman.Image = img
	s := spec(t, "", 1201)
	s.Args = []string{"node", "--version"}
	res := run(t, cfg, s)
	out, errOut := readFile(t, s.StdoutPath), readFile(t, s.StderrPath)
	if res.ExitCode != 0 {
		t.Fatalf("node --version: exit %d, stderr %q", res.ExitCode, errOut)
	}
	major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(out), "v"), ".")
	n, err := strconv.Atoi(major)
	if err != nil || n < 20 {
		t.Fatalf("node --version printed %q: want Node 20 or newer (agent CLIs need it; NODE_SUITE=trixie or newer)", out)
	}

	// The root is read-only and the agent dir is the only place to write:
	// what node (or npm's cache) writes lands in HOME there, not in the image.
	s.Args = []string{"node", "-e", `require("fs").writeFileSync("/usr/evil", "x")`}
	if res := run(t, cfg, s); res.ExitCode == 0 {
		t.Fatal("node wrote /usr in the image: the root is not read-only")
	}
	s.Args = []string{"node", "-e", `require("fs").writeFileSync(process.env.HOME + "/ok", "x")`}
	if res := run(t, cfg, s); res.ExitCode != 0 {
		t.Fatalf("node could not write HOME in the agent dir: exit %d, %s", res.ExitCode, readFile(t, s.StderrPath))
	}
	found := false
	filepath.WalkDir(s.AgentDir, func(path string, d os.DirEntry, err error) error {
		found = found || (err == nil && d.Name() == "ok" && !d.IsDir())
		return nil
	})
	if !found {
		t.Fatalf("the file node wrote in HOME is not in the run's agent dir %s", s.AgentDir)
	}
}
