package triggers

import (
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/vcs"
)

// The hook's copy names a revision as every other surface does.
func TestRevisionTextIsVCSs(t *testing.T) {
	for _, kind := range []string{KindSVN, KindP4, "git"} {
		if got, want := revisionText(kind, "1231"), vcs.RevisionText(vcs.Kind(kind), "1231"); got != want {
			t.Errorf("revisionText(%q) = %q, vcs.RevisionText = %q", kind, got, want)
		}
	}
}

// A Perforce change is "change 1231" in the hook's messages, never the
// SVN-style "r1231".
func TestSpoolRejectedNamesTheRevisionAsItsVCSDoes(t *testing.T) {
	for _, tc := range []struct{ vcs, repo, want string }{
		{KindP4, "depot", "depot change 1231 not sent"},
		{KindSVN, "main", "main r1231 not sent"},
	} {
		var stderr strings.Builder
		cfg := ClientConfig{SpoolDir: t.TempDir(), Secret: []byte("s")}
		ev := Event{V: ProtocolVersion, VCS: tc.vcs, Repo: tc.repo, Revision: "1231", Source: SourceTrigger}
		if err := spoolRejected(&stderr, cfg, ev, "a test"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: stderr %q does not say %q", tc.vcs, stderr.String(), tc.want)
		}
	}
}
