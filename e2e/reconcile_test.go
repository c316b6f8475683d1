package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
)

// Commits made while the hook is missing (removed by an upgrade, say) are
// found by the reconciler and reviewed once each; revisions the hook did
// report are not reviewed again.
func TestReconcilerFindsCommitsWhoseHookNeverFired(t *testing.T) {
	e := newEnvWith(t, 1, `reconcile_every = "@every 1s"`)
	e.startDaemon()
	e.commit("with hook", map[string]string{"a.txt": "one\n"})
	s := e.store()
	e.waitFinished(s, 1, 60*time.Second)

	if err := os.Remove(filepath.Join(e.repos, "hooks", "post-commit")); err != nil {
		t.Fatal(err)
	}
	e.commit("no hook 1", map[string]string{"b.txt": "api_key = \"k-1234567890abcdef\"\n"})
	e.commit("no hook 2", map[string]string{"c.txt": "three\n"})
	runs := e.waitFinished(s, 3, 60*time.Second)

	bySource := map[string]string{}
	count := map[string]int{}
	for _, r := range runs {
		bySource[r.Revision] = string(r.Source)
		count[r.Revision]++
	}
	// r1 had its hook, but the hook is detached: on a loaded machine the
	// reconciler's 1 s tick can see r1 before the hook's event arrives.
	// Either way it is reviewed exactly once.
	want := map[string][]string{"1": {"trigger", "reconcile"}, "2": {"reconcile"}, "3": {"reconcile"}}
	for rev, srcs := range want {
		if !slices.Contains(srcs, bySource[rev]) || count[rev] != 1 {
			t.Errorf("r%s: source %q, %d runs; want one of %v, 1 run", rev, bySource[rev], count[rev], srcs)
		}
	}
	for _, r := range runs {
		if r.Revision == "2" && (r.Status != audit.RunSucceeded || r.ProblemCount != 1) {
			t.Errorf("r2 should be reviewed with its finding: %+v", r)
		}
	}
}
