package findings

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/vcs"
)

// Write is one finding's change in a Decision: Finding is the row as it
// must be after the review (ID 0: a new finding, to insert), Events what
// its history gains (their FindingID is the store's to fill).
type Write struct {
	Finding Finding
	Events  []Event
}

// Decision is what one review does to its repo's findings: the Outcome
// Track returns and the Writes that make it so. A review already applied
// (the same run tracked again) decides the same Outcome with no Writes.
type Decision struct {
	Outcome Outcome
	Writes  []Write
	// newSeen maps the index of a new finding's Write to the Outcome.Seen
	// entries that refer to it, whose Finding.ID SetID fills.
	newSeen map[int][]int
}

// SetID records the id the store gave the finding of Writes[w] when it
// inserted it: the Write, its events and the Outcome's entries get it.
func (d *Decision) SetID(w int, id int64) {
	d.Writes[w].Finding.ID = id
	for i := range d.Writes[w].Events {
		d.Writes[w].Events[i].FindingID = id
	}
	for _, s := range d.newSeen[w] {
		d.Outcome.Seen[s].Finding.ID = id
	}
}

// Decide applies the review to existing, the repo's candidate findings
// (those whose Key is in Keys or whose Path is in Paths, and those the
// run resolved), in any state. tracked holds the ids of findings whose
// history already has an event of this run: a run tracked again (a
// resumed or second daemon) writes nothing more for them.
//
// Each problem matches at most one finding, tried in this order: its
// Key (under its path, then under the path its file was renamed from),
// its MessageKey, the agent's fingerprint (same path and category), then,
// when exactly one finding of the same path and category has it, the
// anchored code (its context changed) or the normalised message (the
// line changed, the problem did not). Two problems with one key are one
// problem: the second is a Duplicate of the first.
func (p *Plan) Decide(existing []Finding, tracked map[int64]bool) Decision {
	t := tracker{plan: p, in: p.in, tracked: tracked, claimed: map[int64]bool{}, keys: map[string]bool{},
		d: Decision{newSeen: map[int][]int{}}}
	t.cands = append([]Finding(nil), existing...)
	slices.SortFunc(t.cands, func(a, b Finding) int { return cmp.Compare(a.ID, b.ID) })
	for _, f := range t.cands {
		t.keys[f.Key] = true
	}
	firstByKey := map[string]int{} // identity key -> index in Outcome.Seen
	for _, q := range p.problems {
		ident := q.key
		if ident == "" {
			ident = q.msgKey
		}
		if first, ok := firstByKey[ident]; ok {
			s := t.d.Outcome.Seen[first]
			s.Index, s.Duplicate = q.index, true
			t.d.Outcome.Seen = append(t.d.Outcome.Seen, s)
			for w, refs := range t.d.newSeen {
				if slices.Contains(refs, first) {
					t.d.newSeen[w] = append(refs, len(t.d.Outcome.Seen)-1)
				}
			}
			continue
		}
		firstByKey[ident] = len(t.d.Outcome.Seen)
		t.see(q)
	}
	if p.in.Complete {
		t.resolve()
	}
	return t.d
}

// Decide is Prepare and Plan.Decide in one, for callers that have the
// candidates at hand.
func Decide(existing []Finding, tracked map[int64]bool, in Review) (Decision, error) {
	p, err := Prepare(in)
	if err != nil {
		return Decision{}, err
	}
	return p.Decide(existing, tracked), nil
}

type tracker struct {
	plan    *Plan
	in      Review
	cands   []Finding
	tracked map[int64]bool
	claimed map[int64]bool
	keys    map[string]bool // every key a candidate or a decided write holds
	d       Decision
}

// match finds q's finding among the unclaimed candidates; moved is set
// when it was found under the path q's file was renamed from.
func (t *tracker) match(q planned) (f *Finding, moved bool) {
	free := func(pred func(*Finding) bool) *Finding {
		for i := range t.cands {
			c := &t.cands[i]
			if !t.claimed[c.ID] && pred(c) {
				return c
			}
		}
		return nil
	}
	byKey := func(k string) func(*Finding) bool {
		return func(c *Finding) bool { return k != "" && c.Key == k }
	}
	for _, k := range []struct {
		key   string
		moved bool
	}{{q.key, false}, {q.oldKey, true}, {q.msgKey, false}, {q.oldMsg, true}} {
		if c := free(byKey(k.key)); c != nil {
			return c, k.moved
		}
	}
	samePlace := func(c *Finding) bool {
		return (c.Path == q.path || (q.oldPath != "" && c.Path == q.oldPath)) && strings.EqualFold(c.Category, q.category)
	}
	if q.agentF != "" {
		if c := free(func(c *Finding) bool { return samePlace(c) && c.AgentFingerprint == q.agentF }); c != nil {
			return c, c.Path != q.path
		}
	}
	// Then what only one finding of the file can be: the anchored code
	// (its context changed), or the agent's words (the line changed and
	// the problem did not).
	unique := func(pred func(*Finding) bool) *Finding {
		var only *Finding
		n := 0
		for i := range t.cands {
			c := &t.cands[i]
			if !t.claimed[c.ID] && samePlace(c) && pred(c) {
				only, n = c, n+1
			}
		}
		if n != 1 {
			return nil
		}
		return only
	}
	if q.anchor != "" {
		if c := unique(func(c *Finding) bool { return c.Anchor == q.anchor }); c != nil {
			return c, c.Path != q.path
		}
	}
	if q.message != "" {
		if c := unique(func(c *Finding) bool { return normLine(c.Message) == q.message }); c != nil {
			return c, c.Path != q.path
		}
	}
	return nil, false
}

// see classifies problem q and records the write it needs.
func (t *tracker) see(q planned) {
	pr := t.in.Problems[q.index]
	f, moved := t.match(q)
	if f == nil {
		t.addNew(q)
		return
	}
	t.claimed[f.ID] = true
	seen := Seen{Index: q.index}
	again := t.tracked[f.ID] || f.FirstRunID == t.in.RunID
	switch {
	case f.FirstRunID == t.in.RunID:
		seen.Class = ClassNew
	case again && f.State == StateDismissed:
		seen.Class = ClassDismissed
	case again && f.State == StateReopened && f.AnnouncedRunID == t.in.RunID:
		seen.Class = ClassReopened
	case again && f.State.Active():
		seen.Class = ClassRepeat
	default:
		again = false
	}
	if again {
		seen.Finding = *f
		t.d.Outcome.Seen = append(t.d.Outcome.Seen, seen)
		return
	}
	after := *f
	var events []Event
	if moved || after.Path != q.path {
		after.Path = q.path
		events = append(events, t.event(EventMoved, func(e *Event) { e.Path = q.path }))
	}
	t.rekey(&after, q)
	after.Line, after.EndLine = pr.Line, pr.EndLine
	if q.agentF != "" {
		after.AgentFingerprint = q.agentF
	}
	after.Sightings++
	if !revisionOlder(t.in.Revision, after.LastRevision) {
		after.LastRunID, after.LastRevision, after.LastSeenAt = t.in.RunID, t.in.Revision, t.in.At
	}
	switch f.State {
	case StateResolved:
		seen.Class = ClassReopened
		after.State = StateReopened
		after.AnnouncedRunID = t.in.RunID
		after.ResolvedRunID, after.ResolvedRevision, after.ResolvedAuthor, after.ResolvedAt = 0, "", "", time.Time{}
		events = append(events, t.event(EventReopened, nil))
	case StateDismissed:
		seen.Class = ClassDismissed
		events = append(events, t.event(EventSeen, nil))
	default:
		seen.Class = ClassRepeat
		events = append(events, t.event(EventSeen, nil))
	}
	seen.Finding = after
	t.d.Outcome.Seen = append(t.d.Outcome.Seen, seen)
	t.d.Writes = append(t.d.Writes, Write{Finding: after, Events: events})
}

// rekey gives f the key of q's problem (its code may have moved or been
// renamed), unless another finding holds that key already. A review that
// could not read the file does not trade a key of the code for one of the
// message.
func (t *tracker) rekey(f *Finding, q planned) {
	k := q.key
	if k == "" {
		if f.Anchor != "" {
			return
		}
		k = q.msgKey
	}
	if k == f.Key || t.keys[k] {
		return
	}
	f.Key = k
	t.keys[k] = true
	if q.anchor != "" {
		f.Anchor = q.anchor
	}
}

func (t *tracker) addNew(q planned) {
	pr := t.in.Problems[q.index]
	k := q.key
	if k == "" {
		k = q.msgKey
	}
	t.keys[k] = true
	in := t.in
	f := Finding{Repo: in.Repo, Path: q.path, Category: pr.Category, Key: k, AgentFingerprint: q.agentF, Anchor: q.anchor,
		State: StateOpen, Severity: pr.Severity, Message: pr.Message, Suggestion: pr.Suggestion,
		Line: pr.Line, EndLine: pr.EndLine, Agent: in.Agent, Model: in.Model,
		FirstRunID: in.RunID, FirstRevision: in.Revision, FirstAuthor: in.Author, FirstSeenAt: in.At,
		LastRunID: in.RunID, LastRevision: in.Revision, LastSeenAt: in.At, Sightings: 1, AnnouncedRunID: in.RunID}
	t.d.newSeen[len(t.d.Writes)] = []int{len(t.d.Outcome.Seen)}
	t.d.Writes = append(t.d.Writes, Write{Finding: f, Events: []Event{t.event(EventReported, nil)}})
	t.d.Outcome.Seen = append(t.d.Outcome.Seen, Seen{Index: q.index, Class: ClassNew, Finding: f})
}

func (t *tracker) event(kind EventKind, edit func(*Event)) Event {
	e := Event{Kind: kind, At: t.in.At, Via: ViaReview, RunID: t.in.RunID, Revision: t.in.Revision}
	if kind == EventResolved {
		e.Actor = t.in.Author
	}
	if edit != nil {
		edit(&e)
	}
	return e
}

// resolve closes the active findings the change fixed (see Store's
// TrackFindings): their file was reviewed (or deleted) and no longer
// holds the anchored code, and this review did not report them. A
// finding whose file was renamed and still holds the code moves with it.
func (t *tracker) resolve() {
	if t.in.Change == nil {
		return
	}
	for i := range t.cands {
		f := &t.cands[i]
		if t.claimed[f.ID] {
			continue
		}
		if f.State == StateResolved && f.ResolvedRunID == t.in.RunID {
			t.d.Outcome.Resolved = append(t.d.Outcome.Resolved, *f)
			continue
		}
		if !f.State.Active() || f.Repo != t.in.Repo || t.tracked[f.ID] || revisionOlder(t.in.Revision, f.LastRevision) {
			continue
		}
		fc, ok := t.in.Change.File(f.Path)
		if !ok {
			fc, ok = t.inDeletedDir(f.Path)
		}
		if !ok || fc.NodeKind == vcs.NodeDir {
			continue
		}
		if fc.Action == vcs.ActionDelete {
			if to, ok := t.renamedTo(f.Path); ok {
				t.follow(f, to)
			} else {
				t.close(f)
			}
			continue
		}
		if fc.Skipped != "" || f.Anchor == "" {
			continue // not reviewed, or nothing to look for: cannot tell
		}
		src := t.plan.source(f.Path)
		if src.err != nil {
			continue
		}
		if _, _, still := Locate(src.lines, f.Anchor); !still {
			t.close(f)
		}
	}
	slices.SortFunc(t.d.Outcome.Resolved, func(a, b Finding) int { return cmp.Compare(a.ID, b.ID) })
}

// renamedTo is the file of the change copied from path (a rename, when
// path is deleted); for a file in a directory copied elsewhere, the same
// file under the copy, listed or not (Subversion lists the directory).
func (t *tracker) renamedTo(path string) (vcs.FileChange, bool) {
	for _, fc := range t.in.Change.Files {
		if fc.CopyFromPath == path && fc.Path != path && fc.Action != vcs.ActionDelete {
			return fc, true
		}
	}
	for _, fc := range t.in.Change.Files {
		from := strings.TrimSuffix(fc.CopyFromPath, "/") + "/"
		if fc.NodeKind != vcs.NodeDir || fc.CopyFromPath == "" || fc.Action == vcs.ActionDelete || !strings.HasPrefix(path, from) {
			continue
		}
		to := strings.TrimSuffix(fc.Path, "/") + "/" + strings.TrimPrefix(path, from)
		if listed, ok := t.in.Change.File(to); ok {
			return listed, true
		}
		return vcs.FileChange{Path: to, Action: vcs.ActionAdd, NodeKind: vcs.NodeFile, CopyFromPath: path}, true
	}
	return vcs.FileChange{}, false
}

// inDeletedDir is the deletion of path's file by the deletion of a
// directory above it.
func (t *tracker) inDeletedDir(path string) (vcs.FileChange, bool) {
	for _, fc := range t.in.Change.Files {
		if fc.NodeKind == vcs.NodeDir && fc.Action == vcs.ActionDelete && strings.HasPrefix(path, strings.TrimSuffix(fc.Path, "/")+"/") {
			return vcs.FileChange{Path: path, Action: vcs.ActionDelete, NodeKind: vcs.NodeFile, Skipped: fc.Skipped}, true
		}
	}
	return vcs.FileChange{}, false
}

// follow handles finding f whose file was renamed to fc: it moves when
// the new file still holds its code (or there is no telling), and is
// resolved when the reviewed new file no longer does.
func (t *tracker) follow(f *Finding, fc vcs.FileChange) {
	if fc.Skipped != "" {
		return
	}
	after := *f
	after.Path = fc.Path
	src := t.plan.source(fc.Path)
	if _, listed := t.in.Change.File(fc.Path); src.err != nil && !listed {
		// A file of a directory moved whole: its content is the old one,
		// not fetched. It moves with its key (the anchor still finds it
		// once a review reports it there) and stays open.
		t.d.Writes = append(t.d.Writes, Write{Finding: after, Events: []Event{t.event(EventMoved, func(e *Event) { e.Path = fc.Path })}})
		return
	}
	if src.err != nil {
		return
	}
	if f.Anchor != "" {
		line, end, ok := Locate(src.lines, f.Anchor)
		if !ok {
			t.close(f)
			return
		}
		after.Line, after.EndLine = line, end
		if end == line {
			after.EndLine = 0
		}
		if k := Key(f.Repo, fc.Path, f.Category, src.lines, line, end); k != "" && !t.keys[k] {
			after.Key = k
		}
	} else if k := MessageKey(f.Repo, fc.Path, f.Category, f.Message); !t.keys[k] {
		after.Key = k
	}
	t.keys[after.Key] = true
	t.d.Writes = append(t.d.Writes, Write{Finding: after, Events: []Event{t.event(EventMoved, func(e *Event) { e.Path = fc.Path })}})
}

func (t *tracker) close(f *Finding) {
	after := *f
	after.State = StateResolved
	after.ResolvedRunID, after.ResolvedRevision, after.ResolvedAuthor, after.ResolvedAt = t.in.RunID, t.in.Revision, t.in.Author, t.in.At
	t.d.Writes = append(t.d.Writes, Write{Finding: after, Events: []Event{t.event(EventResolved, nil)}})
	t.d.Outcome.Resolved = append(t.d.Outcome.Resolved, after)
}
