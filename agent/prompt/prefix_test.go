package prompt

import (
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent/pass"
)

// Every pass of a review starts with the same bytes: the system prompt
// and the user message up to the end of the change and the dismissed
// findings. What a follow-up or repair pass adds comes after, so the
// providers' prefix caches (which match byte-identical prefixes only)
// serve the change to every later pass.
func TestPassesShareThePrefix(t *testing.T) {
	big := strings.Repeat("@@ -1,1 +1,2 @@\n ctx\n+added "+strings.Repeat("y", 70)+"\n", 120)
	diff := twoFileDiff + "Index: src/big.go\n===================================================================\n--- src/big.go\t(revision 41)\n+++ src/big.go\t(revision 42)\n" + big
	passes := []pass.Pass{
		{Number: 1, Kind: pass.Review},
		{Number: 2, Kind: pass.FollowUp, Context: []pass.Answer{{Request: "fetch_more_context src/verify.go:1-40", Text: strings.Repeat("1: code line\n", 40)}}},
		{Number: 3, Kind: pass.Repair, Missing: "- a final aicr.publish_summary"},
	}
	for _, budget := range []int{0, 3500} {
		var first Prompt
		for i, p := range passes {
			got := Build(Input{Change: svnChange(), Diff: diff, Dismissed: teamDismissals(), Pass: p, BudgetTokens: budget})
			if i == 0 {
				first = got
				if budget > 0 && len(got.Clipped) == 0 {
					t.Fatalf("budget %d: nothing clipped; the test wants a clipped diff too", budget)
				}
				for _, want := range []string{"## Change (untrusted data)", "### Diff (untrusted data)", "+	if user == \"\" || pass == \"\" {", "## Dismissed findings"} {
					if i := strings.Index(got.User, want); i < 0 || i >= got.Stable {
						t.Errorf("budget %d: %q (at %d) is not in the shared prefix of %d bytes", budget, want, i, got.Stable)
					}
				}
				if strings.Contains(got.User[:got.Stable], "Review pass") {
					t.Errorf("budget %d: the pass number is in the shared prefix", budget)
				}
				continue
			}
			if got.System != first.System {
				t.Errorf("budget %d, pass %d (%s): the system prompt differs from pass 1's", budget, p.Number, p.Kind)
			}
			if got.Stable != first.Stable || got.User[:got.Stable] != first.User[:first.Stable] {
				n := commonPrefix(got.User, first.User)
				t.Errorf("budget %d, pass %d (%s): shares %d bytes of the user message with pass 1, want its %d stable bytes; differs at %q",
					budget, p.Number, p.Kind, n, first.Stable, got.User[n:min(len(got.User), n+80)])
			}
			if !strings.Contains(got.User[got.Stable:], "# Review pass "+itoa(p.Number)) {
				t.Errorf("budget %d, pass %d: its own section is not after the shared prefix", budget, p.Number)
			}
		}
	}
}

// A follow-up whose answers do not fit next to pass 1's diff clips the
// diff harder: fitting the budget wins over sharing the prefix.
func TestFollowUpOverBudgetClipsHarder(t *testing.T) {
	diff := twoFileDiff + "Index: src/big.go\n===================================================================\n--- src/big.go\t(revision 41)\n+++ src/big.go\t(revision 42)\n" +
		strings.Repeat("@@ -1,1 +1,2 @@\n ctx\n+added "+strings.Repeat("y", 70)+"\n", 30)
	answers := []pass.Answer{{Request: "fetch_more_context src/verify.go", Text: strings.Repeat("1: a long line of code that was asked for\n", 120)}}
	const budget = 3000
	got := Build(Input{Change: svnChange(), Diff: diff, Pass: pass.Pass{Number: 2, Kind: pass.FollowUp, Context: answers}, BudgetTokens: budget})
	if n := (len(got.System) + len(got.User)) / BytesPerToken; n > budget {
		t.Errorf("the follow-up takes %d tokens, over the budget of %d", n, budget)
	}
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
