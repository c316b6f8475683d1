package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/redact"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
	"github.com/aicr-dev/aicr/weblink"
)

// findingsStore is what the publisher needs of the store to give a
// review's problems their identity across commits and to tell channels
// what a change resolved; package audit implements it.
type findingsStore interface {
	TrackFindings(ctx context.Context, in findings.Review) (findings.Outcome, error)
	// PlanNotice plans a dispatch that is not a run's report (a
	// resolution), once per run, channel and slot: an existing row is
	// returned as it is.
	PlanNotice(ctx context.Context, runID int64, channel string, purpose delivery.Purpose, slot string, report *im.Report) (delivery.Dispatch, bool, error)
	// RunReportRows lists a run's dispatches with the report each sends.
	RunReportRows(ctx context.Context, runID int64) ([]audit.DispatchWithReport, error)
}

var _ findingsStore = (*audit.Store)(nil)

// SlotResolution is the dispatch slot of a run's resolution follow-up on
// a channel: one per resolving run and channel.
const SlotResolution = "resolution"

// tracking is what TrackFindings said of one run, and what the reports of
// its channels need of it.
type tracking struct {
	kind    vcs.Kind
	seen    []findings.Seen // aligned with the run's stored problems
	outcome findings.Outcome
	// told caches, per announcing run, the channels its report went to
	// (sent or still pending).
	told map[int64]map[string]audit.DispatchWithReport
}

// track applies a run's review to its repo's findings. It returns nil,
// nil when the run is not tracked: a shelved change is not the repo's
// history (its reports stay as they were), and a store without findings
// tracks nothing. Failed runs are never tracked (PlanFailure does not call
// this): their problems are the builtin rules' alone, and a retry of the
// run keeps its id, so tracking them would make the full review's
// findings look like repeats.
func (p *publisher) track(ctx context.Context, run *audit.Run, detail *audit.RunDetail, change *vcs.Change, result review.Result) (*tracking, error) {
	if p.findings == nil {
		return nil, nil
	}
	if _, shelved := triggers.ParseShelfRevision(run.Revision); shelved {
		return nil, nil
	}
	in := findings.Review{Repo: run.Repo, VCS: vcs.Kind(run.VCS), RunID: run.ID, Revision: run.Revision,
		Author: change.Author, At: p.clock(), Change: change, Problems: detail.Problems,
		Complete: (result.Skip == nil || result.Skip.Reason == review.SkipReasonLGTM) && !rulesOnly(detail.Budget)}
	if detail.Agent != nil {
		in.Agent, in.Model = detail.Agent.Agent, detail.Agent.Model
	}
	if in.Author == "" {
		in.Author = detail.User
	}
	if detail.RunDir != "" {
		src := rundir.New(detail.RunDir).SrcDir()
		in.Source = func(path string) ([]string, error) {
			b, err := review.ReadSource(src, path)
			if err != nil {
				return nil, err
			}
			return redactedLines(path, string(b)), nil
		}
	} else {
		in.Complete = false // nothing to tell a fix by
	}
	out, err := p.findings.TrackFindings(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("track findings: %w", err)
	}
	seen := make([]findings.Seen, len(detail.Problems))
	for _, s := range out.Seen {
		if s.Index < 0 || s.Index >= len(seen) || s.Finding.ID == 0 {
			return nil, fmt.Errorf("track findings: problem %d of %d has no finding", s.Index, len(seen))
		}
		seen[s.Index] = s
	}
	for i, s := range seen {
		if s.Finding.ID == 0 {
			return nil, fmt.Errorf("track findings: problem %d of %d has no finding", i, len(seen))
		}
	}
	return &tracking{kind: in.VCS, seen: seen, outcome: out, told: map[int64]map[string]audit.DispatchWithReport{}}, nil
}

// redactedLines is a file's lines with every credential blanked: the
// store keeps the anchored lines of a finding to tell a fix by, and a
// hard-coded credential's finding anchors the credential itself. A line
// keeps its place, so anchors and line numbers still agree; the same
// credential moved is still the same finding, and rotated in place it is
// still a hard-coded credential.
func redactedLines(path, text string) []string {
	const maxKeyLines = 200 // a 16k-bit RSA key in PEM is about 50
	lines := strings.Split(text, "\n")
	for _, sec := range redact.Find(path, text) {
		i := sec.Line - 1
		if i < 0 || i >= len(lines) {
			continue
		}
		if strings.Contains(lines[i], "PRIVATE KEY") {
			// A key block: every line of it, to its END line.
			for j := i; j < len(lines) && j < i+maxKeyLines; j++ {
				end := strings.Contains(lines[j], "-----END")
				lines[j] = redact.Placeholder
				if end {
					break
				}
			}
			continue
		}
		if red := redact.Text(lines[i]); red != lines[i] {
			lines[i] = red
		} else {
			// Found only with the lines around it: the whole line goes.
			lines[i] = redact.Placeholder
		}
	}
	return lines
}

func (p *publisher) clock() time.Time {
	if p.now == nil {
		return time.Now()
	}
	return p.now()
}

// toldChannels lists the channels the report of announcing run went to,
// with their dispatch and its report: sent, or still pending (a channel
// whose report was suppressed or failed was never told).
func (p *publisher) toldChannels(ctx context.Context, t *tracking, runID int64) (map[string]audit.DispatchWithReport, error) {
	if told, ok := t.told[runID]; ok {
		return told, nil
	}
	rows, err := p.findings.RunReportRows(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("dispatches of run %d: %w", runID, err)
	}
	told := map[string]audit.DispatchWithReport{}
	for _, d := range rows {
		if d.Slot == "" && d.Purpose == delivery.PurposeReport && (d.Status == delivery.StatusSent || d.Status == delivery.StatusPending) {
			told[d.Channel] = d
		}
	}
	t.told[runID] = told
	return told, nil
}

// view is the run's findings as channel sees them: a repeat of a finding
// whose report never reached this channel is new to it.
func (p *publisher) view(ctx context.Context, t *tracking, repo *config.Repo, runID int64, ch *config.Channel) (im.Findings, error) {
	f := im.Findings{Repeat: p.cfg.RepeatFor(repo, ch.Name), Tracked: make([]im.Tracked, len(t.seen))}
	for i, s := range t.seen {
		class := string(s.Class)
		if s.Duplicate {
			// The same problem twice in one review: the report shows
			// the first.
			class = im.ClassDuplicate
		}
		if !s.Duplicate && s.Class == findings.ClassRepeat && s.Finding.AnnouncedRunID != runID {
			told, err := p.toldChannels(ctx, t, s.Finding.AnnouncedRunID)
			if err != nil {
				return im.Findings{}, err
			}
			if _, ok := told[ch.Name]; !ok {
				class = string(findings.ClassNew)
			}
		}
		f.Tracked[i] = im.Tracked{FindingID: s.Finding.ID, Class: class, Commits: s.Finding.Sightings,
			Since: vcs.RevisionText(t.kind, s.Finding.FirstRevision), Page: p.link(s.Finding.ID, weblink.ActionView)}
		for _, a := range findings.ReportActions {
			f.Tracked[i].Actions = append(f.Tracked[i].Actions, im.ActionLink{Action: string(a), URL: p.link(s.Finding.ID, string(a))})
		}
	}
	return f, nil
}

// link is the signed link of action on a finding; "" without [web]
// base_url.
func (p *publisher) link(findingID int64, action string) string {
	return p.signer.Link(findingID, action, p.clock())
}

// trackedReport is dispatchReport for a tracked run: the channel's view
// of its findings under its policy, and whether the policy publishes it.
func trackedReport(c *config.Config, run *audit.RunDetail, change *vcs.Change, channel string, f im.Findings) (im.Report, bool, string) {
	repo, _ := c.Repo(run.Repo)
	msg := reportMessage(c, run, change, channel)
	res := review.Result{Problems: run.Problems, Summaries: run.Summaries}
	if res.Problems == nil {
		res.Problems = []review.Problem{}
	}
	if run.SkipReason != "" && run.SkipReason != im.ReasonNoProblemsSuppressed && run.Status != audit.RunFailed {
		res.Skip = &review.Skip{Reason: run.SkipReason}
	}
	filtered, view, publish, reason := c.PolicyFor(repo, channel).ApplyFindings(res, f)
	msg.Result, msg.Findings = filtered, &view
	return im.BuildReport(msg), publish, reason
}

// planResolutions plans, for each channel that was told of a finding
// this run resolved, one follow-up naming every earlier report of it
// whose findings this change resolved: one message per commit per
// channel. A channel left out of the config, or in digest mode, gets
// none; an earlier report that was suppressed or failed told nobody.
func (p *publisher) planResolutions(ctx context.Context, t *tracking, detail *audit.RunDetail, change *vcs.Change) error {
	if len(t.outcome.Resolved) == 0 {
		return nil
	}
	byRun := map[int64][]findings.Finding{}
	var runs []int64
	for _, f := range t.outcome.Resolved {
		if f.AnnouncedRunID == 0 || f.AnnouncedRunID == detail.ID {
			continue
		}
		if _, ok := byRun[f.AnnouncedRunID]; !ok {
			runs = append(runs, f.AnnouncedRunID)
		}
		byRun[f.AnnouncedRunID] = append(byRun[f.AnnouncedRunID], f)
	}
	slices.Sort(runs)
	perChannel := map[string][]im.Followup{}
	var channels []string
	for _, runID := range runs {
		told, err := p.toldChannels(ctx, t, runID)
		if err != nil {
			return err
		}
		for _, name := range sortedNames(told) {
			ch, ok := p.cfg.Channel(name)
			if !ok || ch.DigestOnly() {
				continue
			}
			fu := p.followup(t, told[name], byRun[runID])
			if _, ok := perChannel[name]; !ok {
				channels = append(channels, name)
			}
			perChannel[name] = append(perChannel[name], fu)
		}
	}
	for _, name := range channels {
		msg := reportMessage(p.cfg, detail, change, name)
		rep := im.BuildResolution(im.Resolution{Language: msg.Language, RunID: detail.ID, Change: change, ChangeURL: msg.ChangeURL,
			Followups: perChannel[name]})
		if _, _, err := p.findings.PlanNotice(ctx, detail.ID, name, delivery.PurposeResolution, SlotResolution, &rep); err != nil {
			return fmt.Errorf("channel %s: plan resolution: %w", name, err)
		}
	}
	return nil
}

// followup is what the resolution tells one channel of one earlier
// report d: its title, its message (for platforms that edit or thread)
// and a copy of it with the resolved findings marked.
func (p *publisher) followup(t *tracking, d audit.DispatchWithReport, resolved []findings.Finding) im.Followup {
	fu := im.Followup{RunID: d.RunID, MessageID: d.MessageID}
	notes := map[int64]string{}
	// The notes go into the earlier report as it was posted, so they
	// are in its language, whatever the channel reads now.
	lang := im.LangEnglish
	if d.Report != nil {
		lang = d.Report.Language
	}
	for _, f := range resolved {
		rev := vcs.RevisionText(t.kind, f.ResolvedRevision)
		fu.Resolved = append(fu.Resolved, im.Resolved{FindingID: f.ID, File: f.Path, Line: f.Line, Severity: string(f.Severity),
			Category: f.Category, Message: f.Message, Revision: rev, Author: f.ResolvedAuthor, Page: p.link(f.ID, weblink.ActionView)})
		notes[f.ID] = lang.ResolvedNote(rev, f.ResolvedAuthor)
		fu.Revision = vcs.RevisionText(t.kind, f.FirstRevision)
	}
	if earlier := d.Report; earlier != nil {
		fu.Title = earlier.Title
		if earlier.Change.Revision != "" {
			fu.Revision = vcs.RevisionText(vcs.Kind(earlier.Change.VCS), earlier.Change.Revision)
		}
		fu.Updated = im.MarkResolved(*earlier, notes)
	}
	return fu
}

func sortedNames(m map[string]audit.DispatchWithReport) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
