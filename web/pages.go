package web

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/redact"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
)

// pageSize is how many rows a list shows at once.
const pageSize = 50

// excerptContext is how many lines around the anchored ones an excerpt
// shows.
const excerptContext = 4

// redactMargin is how many lines around an excerpt are scanned for
// credentials with it: more than a private key block holds.
const redactMargin = 200

// findingView is the finding page: the same page for a signed-in user
// (actions as one form) and a signed link's holder (its own actions).
type findingView struct {
	F       findings.Finding
	Now     time.Time
	RevName func(string) string
	History []findings.Event
	Excerpt []codeLine
	// ExcerptNote says why there is no excerpt, or where it comes from.
	ExcerptNote string
	// Done confirms the action just taken.
	Done string
	// A signed-in user's form.
	Actions    []findings.Action
	CSRF       string
	FormAction string
	// Link is a signed link's page: no navigation, no links to runs.
	Link        bool
	LinkActions []linkAction
	Confirm     *confirmView
	Notice      string
}

type linkAction struct {
	Action findings.Action
	URL    string
}

type confirmView struct {
	Action findings.Action
	URL    string
	CSRF   string
}

// findingPage is a signed-in user's page of one finding.
func (s *server) findingPage(w http.ResponseWriter, r *http.Request) {
	f, ok := s.loadFinding(w, r)
	if !ok {
		return
	}
	v, err := s.findingView(r.Context(), s.lang(r), f)
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	v.Actions = applicable(f.State)
	v.CSRF = s.csrfToken(userBinding(viewer(r), f.ID))
	v.FormAction = s.prefix + "/findings/" + strconv.FormatInt(f.ID, 10) + "/act"
	v.Done = doneText(s.lang(r), r.URL.Query().Get("done"))
	s.render(w, r, http.StatusOK, "finding", page{Title: s.t(r, im.KeyWebTitleFinding, strconv.FormatInt(f.ID, 10)), Data: v})
}

func userBinding(user string, id int64) string {
	return "user\n" + user + "\n" + strconv.FormatInt(id, 10)
}

// loadFinding reads the finding the path names, answering 404 itself.
func (s *server) loadFinding(w http.ResponseWriter, r *http.Request) (findings.Finding, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.fail(w, r, http.StatusNotFound, s.t(r, im.KeyWebErrNoFinding), s.t(r, im.KeyWebErrFindingAddr))
		return findings.Finding{}, false
	}
	f, err := s.store.GetFinding(r.Context(), id)
	if errors.Is(err, findings.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, s.t(r, im.KeyWebErrNoFinding), s.t(r, im.KeyWebErrFindingGone, strconv.FormatInt(id, 10)))
		return f, false
	}
	if err != nil {
		s.storeFailed(w, r, err)
		return f, false
	}
	return f, true
}

func (s *server) storeFailed(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("web: read the store", "path", r.URL.Path, "err", err)
	s.fail(w, r, http.StatusInternalServerError, s.t(r, im.KeyWebErrWentWrong), s.t(r, im.KeyWebErrStore))
}

func (s *server) findingView(ctx context.Context, l im.Language, f findings.Finding) (*findingView, error) {
	hist, err := s.store.FindingHistory(ctx, f.ID)
	if err != nil {
		return nil, err
	}
	v := &findingView{F: f, Now: s.now(), History: hist, RevName: revName("")}
	s.fillExcerpt(ctx, l, v)
	return v, nil
}

// fillExcerpt reads the anchored lines from the source the last review
// that reported the finding kept in its run's src/; retention drops
// src/ once the run's reports are delivered, and the page then says so.
func (s *server) fillExcerpt(ctx context.Context, l im.Language, v *findingView) {
	f := v.F
	run, err := s.store.GetRun(ctx, f.LastRunID)
	if err != nil {
		if !errors.Is(err, audit.ErrNotFound) {
			s.log.Warn("web: read a finding's run", "finding", f.ID, "run", f.LastRunID, "err", err)
		}
		v.ExcerptNote = l.T(im.KeyWebNoteRunGone, strconv.FormatInt(f.LastRunID, 10))
		return
	}
	v.RevName = revName(run.VCS)
	rev := v.RevName(run.Revision)
	switch {
	case f.Line <= 0:
		v.ExcerptNote = l.T(im.KeyWebNoteWholeFile)
		return
	case run.RunDir == "" || !run.SourcesDroppedAt.IsZero() || !run.RunDirPrunedAt.IsZero():
		v.ExcerptNote = l.T(im.KeyWebNoteSrcDropped, rev)
		return
	}
	data, err := review.ReadSource(rundir.New(run.RunDir).SrcDir(), f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		v.ExcerptNote = l.T(im.KeyWebNoteFileGone, rev)
		return
	}
	if err != nil {
		s.log.Warn("web: read a finding's source", "finding", f.ID, "run", run.ID, "err", err)
		v.ExcerptNote = l.T(im.KeyWebNoteUnreadable, rev)
		return
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	end := max(f.EndLine, f.Line)
	if f.Line > len(lines) {
		v.ExcerptNote = l.T(im.KeyWebNotePastEnd, strconv.Itoa(f.Line), rev)
		return
	}
	from, to := max(1, f.Line-excerptContext), min(len(lines), end+excerptContext)
	redactLines(lines, from, to)
	for n := from; n <= to; n++ {
		line := strings.TrimSuffix(lines[n-1], "\r")
		v.Excerpt = append(v.Excerpt, codeLine{N: n, Text: visibleCode(line), Anchor: n >= f.Line && n <= end})
	}
	v.ExcerptNote = l.T(im.KeyWebNoteExcerpt, f.Path, rev)
}

// redactLines redacts credentials in lines[from-1:to] (1-based, both
// included), scanning a wide window around them so a private key block
// spanning lines is recognised whole, without scanning a huge file at
// every page view. A line a block redaction swallowed (it is no longer
// in the redacted window) is replaced whole.
func redactLines(lines []string, from, to int) {
	wfrom, wto := max(1, from-redactMargin), min(len(lines), to+redactMargin)
	window := strings.Split(redact.Text(strings.Join(lines[wfrom-1:wto], "\n")), "\n")
	if len(window) == wto-wfrom+1 {
		copy(lines[wfrom-1:wto], window)
		return
	}
	kept := make(map[string]bool, len(window))
	for _, l := range window {
		kept[l] = true
	}
	for n := from; n <= to; n++ {
		l := redact.Text(lines[n-1])
		if l == lines[n-1] && !kept[l] {
			l = redact.Placeholder
		}
		lines[n-1] = l
	}
}

// revName names a revision as its VCS does: "r120", "change 120".
func revName(kind string) func(string) string {
	return func(rev string) string {
		rev = text(rev)
		switch {
		case rev == "":
			return ""
		case kind == "p4":
			return "change " + rev
		case strings.HasPrefix(rev, "shelf-"):
			return rev
		}
		return "r" + rev
	}
}

// revNamer names the revisions of the listed findings' repos; a
// finding does not say its VCS, a run of its repo does.
func (s *server) revNamer(ctx context.Context, list []findings.Finding) (func(repo, rev string) string, error) {
	kinds := map[string]string{}
	for _, f := range list {
		if _, ok := kinds[f.Repo]; ok {
			continue
		}
		runs, err := s.store.ListRuns(ctx, audit.ListOptions{Repo: f.Repo, Limit: 1})
		if err != nil {
			return nil, err
		}
		kinds[f.Repo] = ""
		if len(runs) > 0 {
			kinds[f.Repo] = runs[0].VCS
		}
	}
	return func(repo, rev string) string { return revName(kinds[repo])(rev) }, nil
}

// listView is the finding list with its filters.
type listView struct {
	Filter   listFilter
	States   []findings.State
	Sevs     []review.Severity
	Findings []findings.Finding
	Now      time.Time
	Prev     string
	Next     string
	// Rev names a revision of a repo as its VCS does.
	Rev func(repo, rev string) string
}

type listFilter struct {
	Repo, Path, State, Severity, Author, Category string
}

func (s *server) findingList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lf := listFilter{Repo: q.Get("repo"), Path: q.Get("path"), State: q.Get("state"), Severity: q.Get("severity"),
		Author: q.Get("author"), Category: q.Get("category")}
	f := findings.Filter{Repo: lf.Repo, Path: lf.Path, Author: lf.Author, Category: lf.Category, Limit: pageSize + 1}
	switch st := findings.State(lf.State); {
	case lf.State == "":
	case lf.State == "active":
		f.States = []findings.State{findings.StateOpen, findings.StateReopened}
	case st.Valid():
		f.States = []findings.State{st}
	default:
		s.fail(w, r, http.StatusBadRequest, s.t(r, im.KeyWebErrBadFilter), s.t(r, im.KeyWebErrBadState, strconv.Quote(lf.State)))
		return
	}
	if lf.Severity != "" {
		if f.Severity = review.Severity(lf.Severity); !f.Severity.Valid() {
			s.fail(w, r, http.StatusBadRequest, s.t(r, im.KeyWebErrBadFilter), s.t(r, im.KeyWebErrBadSeverity, strconv.Quote(lf.Severity)))
			return
		}
	}
	offset, ok := s.pageParam(w, r, "offset")
	if !ok {
		return
	}
	f.Offset = offset
	list, err := s.store.ListFindings(r.Context(), f)
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	v := listView{Filter: lf, States: findings.States, Sevs: review.Severities, Now: s.now()}
	if len(list) > pageSize {
		list = list[:pageSize]
		v.Next = s.prefix + "/findings?" + withParam(q, "offset", strconv.Itoa(offset+pageSize))
	}
	if offset > 0 {
		v.Prev = s.prefix + "/findings?" + withParam(q, "offset", strconv.Itoa(max(0, offset-pageSize)))
	}
	v.Findings = list
	if v.Rev, err = s.revNamer(r.Context(), list); err != nil {
		s.storeFailed(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "findings", page{Title: s.t(r, im.KeyWebNavFindings), Data: v})
}

// pageParam reads a non-negative paging parameter, answering 400 itself.
func (s *server) pageParam(w http.ResponseWriter, r *http.Request, name string) (int, bool) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return 0, true
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		s.fail(w, r, http.StatusBadRequest, s.t(r, im.KeyWebErrBadPage), s.t(r, im.KeyWebErrPageParam, name, strconv.Quote(raw)))
		return 0, false
	}
	return n, true
}

func withParam(q url.Values, k, v string) string {
	c := url.Values{}
	for key, vals := range q {
		if key != k && len(vals) > 0 && vals[0] != "" {
			c.Set(key, vals[0])
		}
	}
	c.Set(k, v)
	return c.Encode()
}

type runsView struct {
	Repo string
	Runs []audit.RunSummary
	Now  time.Time
	Next string
	Top  bool
}

func (s *server) runList(w http.ResponseWriter, r *http.Request) {
	before, ok := s.pageParam(w, r, "before")
	if !ok {
		return
	}
	repo := r.URL.Query().Get("repo")
	runs, err := s.store.ListRuns(r.Context(), audit.ListOptions{Limit: pageSize + 1, Repo: repo, BeforeID: int64(before)})
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	v := runsView{Repo: repo, Now: s.now(), Top: before == 0}
	if len(runs) > pageSize {
		runs = runs[:pageSize]
		v.Next = s.prefix + "/runs?" + withParam(r.URL.Query(), "before", strconv.FormatInt(runs[len(runs)-1].ID, 10))
	}
	v.Runs = runs
	s.render(w, r, http.StatusOK, "runs", page{Title: s.t(r, im.KeyWebNavRuns), Data: v})
}

// runView is a run's page: the report as its dispatches stored it (the
// first one that has a report), its findings, its deliveries, its cost.
type runView struct {
	Run      *audit.RunDetail
	Rev      string
	Report   *im.Report
	From     string // the channel whose stored report is shown
	Problems []reportProblem
	Findings []findings.Finding
	Sends    []dispatchRow
	Now      time.Time
}

type reportProblem struct {
	review.Problem
	FindingID int64
}

type dispatchRow struct {
	delivery.Dispatch
	Verdict string
}

func (s *server) runPage(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.fail(w, r, http.StatusNotFound, s.t(r, im.KeyWebErrNoRun), s.t(r, im.KeyWebErrRunAddr))
		return
	}
	run, err := s.store.GetRun(r.Context(), id)
	if errors.Is(err, audit.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, s.t(r, im.KeyWebErrNoRun), s.t(r, im.KeyWebErrRunGone, strconv.FormatInt(id, 10)))
		return
	}
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	v := runView{Run: run, Rev: revName(run.VCS)(run.Revision), Now: s.now()}
	for _, d := range run.Dispatches {
		row := dispatchRow{Dispatch: d}
		rep, err := s.store.DispatchReport(r.Context(), d.ID)
		if err != nil {
			s.storeFailed(w, r, err)
			return
		}
		if rep != nil {
			row.Verdict = rep.Verdict
			if v.Report == nil {
				v.Report, v.From = rep, d.Channel
			}
		}
		v.Sends = append(v.Sends, row)
	}
	v.Problems = reportProblems(v.Report, run)
	if v.Findings, err = s.store.ListFindings(r.Context(), findings.Filter{RunID: id, Limit: 500}); err != nil {
		s.storeFailed(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "run", page{Title: s.t(r, im.KeyWebTitleRun, strconv.FormatInt(id, 10)), Data: v})
}

// reportProblems are the stored report's problems with their findings,
// or the run's recorded problems when no dispatch stored a report (a
// dry run, or every channel suppressed it).
func reportProblems(rep *im.Report, run *audit.RunDetail) []reportProblem {
	var out []reportProblem
	if rep == nil {
		for _, p := range im.SanitizeResult(run.Result()).Problems {
			out = append(out, reportProblem{Problem: p})
		}
		return out
	}
	for i, p := range rep.Problems {
		rp := reportProblem{Problem: p}
		if i < len(rep.Entries) {
			rp.FindingID = rep.Entries[i].FindingID
		}
		out = append(out, rp)
	}
	return out
}
