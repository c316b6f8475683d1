package vcs

// RevisionText is a revision as its VCS's users say it: Subversion's
// "r42", Perforce's "change 12345". Every surface (reports, audit show,
// plans, errors) names a revision through it, so one change is never
// "r1231" in one place and "change 1231" in another.
func RevisionText(kind Kind, rev string) string {
	switch kind {
	case KindSVN:
		return "r" + rev
	case KindP4:
		return "change " + rev
	default:
		return "revision " + rev
	}
}
