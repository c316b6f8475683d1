// Package file is the channel that appends each report as one JSON line to
// a file, for archiving, for feeding other tools and for tests.
package file

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
)

// KindName is the value of `kind` that selects this channel.
const KindName = "file"

// Config is the file-specific part of a [[channel]] table.
type Config struct {
	// Path is the file to append to; relative paths are resolved against
	// the directory of the config file.
	Path string `toml:"path"`
}

// Validate checks the file-specific keys.
func (c *Config) Validate() error {
	if strings.TrimSpace(c.Path) == "" {
		return &im.ConfigError{Key: "path", Err: im.ErrRequired}
	}
	return nil
}

// Build returns the file channel, resolving a relative path against
// deps.BaseDir.
func (c *Config) Build(common im.ChannelConfig, deps im.Deps) (im.Channel, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	path := c.Path
	if !filepath.IsAbs(path) && deps.BaseDir != "" {
		path = filepath.Join(deps.BaseDir, path)
	}
	return New(common.Name, path, deps.Clock()), nil
}

// Record is one line of the file.
type Record struct {
	Channel string `json:"channel"`
	Kind    string `json:"kind"`
	RunID   int64  `json:"run_id"`
	// DedupeKey is the dispatch's key; a retry finds it in the file's
	// tail and does not append the report again.
	DedupeKey string           `json:"dedupe_key,omitempty"`
	Repo      string           `json:"repo"`
	VCS       string           `json:"vcs"`
	Revision  string           `json:"revision"`
	Author    string           `json:"author"`
	ChangeURL string           `json:"change_url,omitempty"`
	Text      string           `json:"text"`
	Problems  []review.Problem `json:"problems"`
	Summaries []review.Summary `json:"summaries"`
	Skip      *review.Skip     `json:"skip"`
	// Failure: see webhook.Payload.Failure.
	Failure string `json:"failure,omitempty"`
	// Budget is the spent [[budget]] that changed how the change was
	// reviewed (builtin rules only, skipped, the fallback model); nil when
	// none applied.
	Budget *im.BudgetNotice `json:"budget,omitempty"`
	// ReportKind, Entries, Repeats, Resolved: see webhook.Payload.
	ReportKind string              `json:"report_kind,omitempty"`
	Entries    []im.Entry          `json:"entries,omitempty"`
	Repeats    []im.Repeat         `json:"repeats,omitempty"`
	Resolved   []im.ResolvedRecord `json:"resolved,omitempty"`
	// Digest is a [[digest]]'s figures (report_kind "digest").
	Digest *im.Digest `json:"digest,omitempty"`
	SentAt time.Time  `json:"sent_at"`
}

// Channel appends Records to a file.
type Channel struct {
	name string
	path string
	now  func() time.Time
}

var _ im.Channel = (*Channel)(nil)

// New returns a file channel named name appending to path. A nil now means
// time.Now.
func New(name, path string, now func() time.Time) *Channel {
	if now == nil {
		now = time.Now
	}
	return &Channel{name: name, path: path, now: now}
}

func (c *Channel) Name() string { return c.name }
func (c *Channel) Kind() string { return KindName }

// Path is the resolved file path.
func (c *Channel) Path() string { return c.path }

// Send appends one line. The file is opened per message with O_APPEND and
// the line goes out in a single write, so several workers (or several
// channels sharing a path, or logrotate moving the file away) never produce
// interleaved or lost lines; fsync makes a returned nil mean "on disk".
//
// A file cannot tell a retry from a new message, so Send first looks for
// msg.DedupeKey in the file's tail: a process killed after the write but
// before the attempt was recorded then retries without a duplicate line.
func (c *Channel) Send(ctx context.Context, msg im.Message) (im.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return im.Receipt{}, err
	}
	line, err := c.encode(msg)
	if err != nil {
		return im.Receipt{}, err
	}
	if msg.DedupeKey != "" {
		found, err := c.tailHas(msg.DedupeKey)
		if err != nil {
			return im.Receipt{}, fmt.Errorf("check for an earlier delivery: %w", err)
		}
		if found {
			return im.Receipt{Rendered: string(line), Parts: 1, Response: "already in the file (dedupe key " + msg.DedupeKey + ")"}, nil
		}
	}
	if err := c.appendLine(line); err != nil {
		return im.Receipt{}, err
	}
	return im.Receipt{Rendered: string(line), Parts: 1}, nil
}

// dedupeTail is how much of the end of the file is searched for a key: the
// line an interrupted attempt wrote is among the last ones.
const dedupeTail = 1 << 20

func (c *Channel) tailHas(key string) (bool, error) {
	f, err := os.Open(c.path)
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	off := max(st.Size()-dedupeTail, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return false, err
	}
	needle, err := json.Marshal(key)
	if err != nil {
		return false, err
	}
	return bytes.Contains(buf, append([]byte(`"dedupe_key":`), needle...)), nil
}

func (c *Channel) appendLine(line []byte) error {
	// os errors name the path, so the step name is all that is added here.
	if err := os.MkdirAll(filepath.Dir(c.path), 0o750); err != nil {
		return fmt.Errorf("create directory: %w", err)
	}
	f, err := openLocked(c.path)
	if err != nil {
		return err
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// encode is the record of msg's report, every value taken from it, as
// the webhook's payload is, so a planned report is archived as planned.
func (c *Channel) encode(msg im.Message) ([]byte, error) {
	rep := im.BuildReport(msg)
	rec := Record{
		Channel:   c.name,
		Kind:      KindName,
		RunID:     rep.RunID,
		DedupeKey: msg.DedupeKey,
		Repo:      rep.Change.Repo,
		VCS:       rep.Change.VCS,
		Revision:  rep.Change.Revision,
		Author:    rep.Change.Author,
		ChangeURL: rep.ChangeURL,
		Text:      im.PlainText(rep),
		Problems:  rep.Problems,
		Summaries: rep.Summaries,
		Skip:      rep.SkipReason,
		Failure:   rep.Failure,
		Budget:    rep.Budget,
		Entries:   rep.Entries,
		Repeats:   rep.Repeats,
		Resolved:  rep.ResolvedRecords(),
		Digest:    rep.Digest,
		SentAt:    c.now().UTC(),
	}
	if rep.Kind != im.KindReview {
		rec.ReportKind = string(rep.Kind)
	}
	// The lines are read by tools: lists are [] rather than null.
	if rec.Problems == nil {
		rec.Problems = []review.Problem{}
	}
	if rec.Summaries == nil {
		rec.Summaries = []review.Summary{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Readers grep these files; "<" escaped as \u003c helps nobody.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil { // Encode appends the newline
		return nil, fmt.Errorf("encode record: %w", err)
	}
	return buf.Bytes(), nil
}
