// Package idlegate lets a polling loop skip a query whose answer cannot
// have changed: the last one found nothing at all to do (not even
// something waiting for a time to pass) and the store's mark has not
// moved since. The daemon's workers, lease sweep and sources sweep and the
// dispatcher share it, so an idle daemon runs no SQL.
package idlegate

// Gate remembers the last poll's answer and the mark taken before it. It
// is not safe for concurrent use: one loop owns it. A nil Gate never
// skips.
type Gate struct {
	// mark fingerprints the store; equal marks mean nobody committed in
	// between, ok false that it cannot tell. nil: never skip.
	mark  func() (mark any, ok bool)
	quiet bool
	at    any
}

// New returns a gate over mark; a nil mark (PostgreSQL, whose other
// daemons leave no trace on this host) makes every poll query.
func New(mark func() (any, bool)) *Gate { return &Gate{mark: mark} }

// Poll runs query unless it may be skipped; force runs it whatever the
// last answer was (a wake-up from this process: work was queued). query
// returns whether it found nothing at all to do. The mark is taken before
// query, so a commit made while it runs is seen at the next poll.
func (g *Gate) Poll(force bool, query func() (quiet bool)) {
	if g == nil || g.mark == nil {
		query()
		return
	}
	m, ok := g.mark()
	if !force && ok && g.quiet && m == g.at {
		return
	}
	g.quiet = query() && ok
	g.at = m
}

// Quiet reports whether the last poll that ran found nothing at all to
// do and could be compared later.
func (g *Gate) Quiet() bool { return g != nil && g.quiet }
