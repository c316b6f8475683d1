package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// requestMark counts the requests already answered: the state file only
// ever appends requests (the server refuses duplicates), so the new ones
// of a pass are those past the mark.
type requestMark struct{ context, attribution int }

// replay answers the requests recorded since the last mark through the
// VCS adapter at the reviewed revision.
func replay(ctx context.Context, st *review.State, mark *requestMark, tgt Target) []pass.Answer {
	var answers []pass.Answer
	for _, r := range st.ContextRequests[min(mark.context, len(st.ContextRequests)):] {
		answers = append(answers, answerContext(ctx, r, tgt))
	}
	for _, r := range st.AttributionRequests[min(mark.attribution, len(st.AttributionRequests)):] {
		answers = append(answers, answerBlame(ctx, r, tgt))
	}
	mark.context, mark.attribution = len(st.ContextRequests), len(st.AttributionRequests)
	return answers
}

func requestName(tool, path string, rng *vcs.LineRange) string {
	if rng == nil {
		return tool + " " + path
	}
	return fmt.Sprintf("%s %s:%d-%d", tool, path, rng.Start, rng.End)
}

// lineSpan is the request's range, or the first defaultAnswerLines lines.
func lineSpan(rng *vcs.LineRange) (int, int) {
	if rng == nil || rng.Start < 1 || rng.End < rng.Start {
		return 1, defaultAnswerLines
	}
	return rng.Start, rng.End
}

func answerContext(ctx context.Context, r review.ContextRequest, tgt Target) pass.Answer {
	a := pass.Answer{Request: requestName(review.ToolFetchMoreContext, r.Path, r.Range)}
	if tgt.Replayer == nil {
		a.Error = "this repository cannot answer context requests"
		return a
	}
	// The file is read up to a cap; a range past it is answered with what
	// was read, and says so.
	w := &cappedBuffer{limit: 4 * maxAnswerBytes}
	err := tgt.Replayer.Cat(ctx, r.Path, tgt.Revision, w)
	if err != nil && !errors.Is(err, errCapped) && !errors.Is(err, vcs.ErrTooLarge) {
		a.Error = err.Error()
		return a
	}
	start, end := lineSpan(r.Range)
	lines := strings.SplitAfter(string(w.buf), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	if start > len(lines) {
		a.Error = fmt.Sprintf("%s has %d lines at revision %s; line %d is past its end", r.Path, len(lines), tgt.Revision, start)
		return a
	}
	var b strings.Builder
	for i := start; i <= min(end, len(lines)); i++ {
		line := fmt.Sprintf("%6d  %s", i, strings.TrimRight(lines[i-1], "\r\n"))
		if b.Len()+len(line)+1 > maxAnswerBytes {
			fmt.Fprintf(&b, "… (cut at %d bytes; ask for a smaller range)\n", maxAnswerBytes)
			break
		}
		b.WriteString(line + "\n")
	}
	a.Text = b.String()
	return a
}

func answerBlame(ctx context.Context, r review.AttributionRequest, tgt Target) pass.Answer {
	a := pass.Answer{Request: requestName(review.ToolTryBlame, r.Path, r.Range)}
	if tgt.Replayer == nil {
		a.Error = "this repository cannot answer blame requests"
		return a
	}
	start, end := lineSpan(r.Range)
	res, err := tgt.Replayer.Blame(ctx, r.Path, tgt.Revision, start, end)
	if err != nil {
		a.Error = err.Error()
		return a
	}
	if res.Status == vcs.BlameNotFound {
		a.Error = fmt.Sprintf("%s is not a file at revision %s", r.Path, tgt.Revision)
		return a
	}
	var b strings.Builder
	if res.Reason != "" {
		b.WriteString("(" + res.Reason + ")\n")
	}
	for _, l := range res.Lines {
		line := fmt.Sprintf("%6d  %s  %s  %s\n", l.Line, l.Revision, l.Author, l.Date.UTC().Format("2006-01-02"))
		if b.Len()+len(line) > maxAnswerBytes {
			break
		}
		b.WriteString(line)
	}
	a.Text = b.String()
	return a
}

// problemArgs is p as aicr.report_problem arguments.
func problemArgs(p review.Problem) json.RawMessage {
	args := map[string]any{"file": p.File, "line": p.Line, "severity": string(p.Severity),
		"category": p.Category, "message": p.Message}
	if p.Suggestion != "" {
		args["suggestion"] = p.Suggestion
	}
	if p.EndLine > 0 {
		args["end_line"] = p.EndLine
	}
	b, _ := json.Marshal(args)
	return b
}
