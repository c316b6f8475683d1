package p4

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/aicr-dev/aicr/vcs"
)

// scopedDepotFile checks a path an agent chose (a vcs path: depot path
// without "//", real characters) and returns the escaped depot path.
// Wildcards and revision characters are neutralised by escaping; "..."
// and dot segments are refused; anything outside depot_paths and
// include/exclude is vcs.ErrPathOutOfScope.
func (a *Adapter) scopedDepotFile(path string) (string, error) {
	if err := checkFileName(path); err != nil {
		return "", fmt.Errorf("%w: %w", vcs.ErrPathOutOfScope, err)
	}
	df := depotFile(path)
	if !a.scope.contains(df) {
		return "", fmt.Errorf("%w: %s is outside the configured depot_paths", vcs.ErrPathOutOfScope, path)
	}
	if !a.filter.Match(path) {
		return "", fmt.Errorf("%w: %s is outside the repository's include/exclude", vcs.ErrPathOutOfScope, path)
	}
	return df, nil
}

// Cat writes path (a vcs path) as of changelist rev to w, decoded like
// Fetch does. Missing or deleted files fail with vcs.ErrNoSuchPath,
// files over max_file_bytes with vcs.ErrTooLarge.
func (a *Adapter) Cat(ctx context.Context, path string, rev string, w io.Writer) error {
	n, err := parseChange(rev)
	if err != nil {
		return err
	}
	df, err := a.scopedDepotFile(path)
	if err != nil {
		return err
	}
	recs, warns, err := a.runG(ctx, nil, "print", df+"@"+strconv.Itoa(n))
	if err != nil {
		return err
	}
	if len(warns) > 0 || len(recs) == 0 {
		return fmt.Errorf("%s@%d: %w", path, n, vcs.ErrNoSuchPath)
	}
	stat := recs[0]
	if isDeletedAction(stat.Get("action")) {
		return fmt.Errorf("%s@%d: deleted: %w", path, n, vcs.ErrNoSuchPath)
	}
	if base := baseType(stat.Get("type")); !isTextType(base) {
		return fmt.Errorf("%s@%d: %s file has no text: %w", path, n, base, vcs.ErrNoSuchPath)
	}
	out := map[string][]byte{}
	collectPrint(recs, out)
	text, ok := decodeContent(stat.Get("type"), out[stat.Get("depotFile")])
	if !ok {
		return fmt.Errorf("%s@%d: binary content: %w", path, n, vcs.ErrNoSuchPath)
	}
	if int64(len(text)) > a.cfg.MaxFileBytes {
		_, _ = w.Write(text[:a.cfg.MaxFileBytes])
		return fmt.Errorf("%s: %w (over %d bytes)", path, vcs.ErrTooLarge, a.cfg.MaxFileBytes)
	}
	_, err = w.Write(text)
	return err
}

// ErrBadRange is wrapped when a blame range is not 1 <= start <= end.
var ErrBadRange = errors.New("invalid line range")

// Blame attributes lines start..end of path at changelist rev with `p4
// annotate -c` (change numbers per line) and one `p4 describe -s` of all
// the changes it names (author and date). Never the text.
func (a *Adapter) Blame(ctx context.Context, path, rev string, start, end int) (vcs.BlameResult, error) {
	res := vcs.BlameResult{Path: path, Revision: rev, Lines: []vcs.BlameLine{}}
	n, err := parseChange(rev)
	if err != nil {
		return res, err
	}
	df, err := a.scopedDepotFile(path)
	if err != nil {
		return res, err
	}
	if start < 1 || end < start {
		return res, fmt.Errorf("%w: %d-%d (want 1 <= start <= end)", ErrBadRange, start, end)
	}
	recs, warns, err := a.runG(ctx, nil, "annotate", "-c", df+"@"+strconv.Itoa(n))
	if err != nil {
		return res, err
	}
	if len(warns) > 0 || len(recs) == 0 {
		res.Status, res.Reason = vcs.BlameNotFound, fmt.Sprintf("no file %s at change %d", path, n)
		return res, nil
	}
	head := recs[0]
	if isDeletedAction(head.Get("action")) {
		res.Status, res.Reason = vcs.BlameNotFound, fmt.Sprintf("%s is deleted at change %d", path, n)
		return res, nil
	}
	var lines []string // change number per line
	for _, r := range recs[1:] {
		if r.Has("lower") {
			lines = append(lines, r.Get("lower"))
		}
	}
	if len(lines) == 0 && !isTextType(baseType(head.Get("type"))) {
		res.Status, res.Reason = vcs.BlamePartial, "binary file: no lines to attribute"
		return res, nil
	}
	last := min(end, len(lines))
	changes := map[string]bool{}
	for i := start; i <= last; i++ {
		changes[lines[i-1]] = true
	}
	meta, err := a.describeMany(ctx, changes)
	if err != nil {
		return res, err
	}
	for i := start; i <= last; i++ {
		c := lines[i-1]
		m := meta[c]
		res.Lines = append(res.Lines, vcs.BlameLine{Line: i, Revision: c, Author: m.user, Date: m.date})
	}
	res.Status = vcs.BlameOK
	if end > len(lines) {
		res.Status, res.Reason = vcs.BlamePartial, fmt.Sprintf("range clipped: the file has %d lines", len(lines))
	}
	return res, nil
}

type changeMeta struct {
	user string
	date time.Time
}

// describeMany is one `p4 describe -s` for every change in set.
func (a *Adapter) describeMany(ctx context.Context, set map[string]bool) (map[string]changeMeta, error) {
	out := map[string]changeMeta{}
	if len(set) == 0 {
		return out, nil
	}
	args := []string{"describe", "-s"}
	var nums []string
	for c := range set {
		nums = append(nums, c)
	}
	sort.Strings(nums)
	recs, _, err := a.runG(ctx, nil, append(args, nums...)...)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		t, _ := strconv.ParseInt(r.Get("time"), 10, 64)
		out[r.Get("change")] = changeMeta{user: r.Get("user"), date: time.Unix(t, 0).UTC()}
	}
	return out, nil
}

// Head implements vcs.Lister: the newest submitted change touching the
// configured depot paths (`p4 changes -m1 -s submitted PATHS`).
func (a *Adapter) Head(ctx context.Context) (string, error) {
	args := append([]string{"changes", "-m1", "-s", "submitted"}, a.scope.includes()...)
	recs, _, err := a.runG(ctx, nil, args...)
	if err != nil {
		return "", err
	}
	if len(recs) == 0 {
		return "0", nil
	}
	return recs[0].Get("change"), nil
}

// ChangesAfter implements vcs.Lister with one `p4 changes -s submitted
// PATH@>after ...`, oldest first, at most limit. Exclusion lines cannot
// be given to p4 changes, so a change touching only excluded files is
// listed; its review finds every file out of scope.
func (a *Adapter) ChangesAfter(ctx context.Context, after string, limit int) ([]string, error) {
	n, err := strconv.Atoi(after)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%w: %q", vcs.ErrBadRevision, after)
	}
	args := []string{"changes", "-s", "submitted"}
	for _, p := range a.scope.includes() {
		args = append(args, p+"@>"+strconv.Itoa(n))
	}
	recs, _, err := a.runG(ctx, nil, args...)
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	var nums []int
	for _, r := range recs {
		c, err := strconv.Atoi(r.Get("change"))
		if err == nil && c > n && !seen[c] {
			seen[c] = true
			nums = append(nums, c)
		}
	}
	sort.Ints(nums)
	if limit > 0 && len(nums) > limit {
		nums = nums[:limit]
	}
	out := make([]string, len(nums))
	for i, c := range nums {
		out[i] = strconv.Itoa(c)
	}
	return out, nil
}

// MaxCommitChange is `p4 counter maxCommitChange`: the last submitted
// change on the whole server, whatever the depot paths.
func (a *Adapter) MaxCommitChange(ctx context.Context) (int, error) {
	return a.counter(ctx, "maxCommitChange")
}

// ReviewCounter reads the shared counter (default name aicr-review).
func (a *Adapter) ReviewCounter(ctx context.Context, name string) (int, error) {
	return a.counter(ctx, name)
}

func (a *Adapter) counter(ctx context.Context, name string) (int, error) {
	recs, _, err := a.runG(ctx, nil, "counter", name)
	if err != nil {
		return 0, err
	}
	for _, r := range recs {
		if r.Has("value") {
			v, err := strconv.Atoi(r.Get("value"))
			if err != nil {
				return 0, fmt.Errorf("p4 counter %s: value %q", name, r.Get("value"))
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("p4 counter %s: no value in output", name)
}

// SetReviewCounter sets the shared counter (`p4 counter NAME N`) so
// admins can see in p4 how far aicr got. It needs review permission.
func (a *Adapter) SetReviewCounter(ctx context.Context, name string, change int) error {
	if name == "" || strings.ContainsAny(name, " \t\n/@#") || strings.HasPrefix(name, "-") {
		return fmt.Errorf("counter name %q: must be a plain word such as aicr-review", name)
	}
	_, _, err := a.runG(ctx, nil, "counter", name, strconv.Itoa(change))
	return err
}

// ErrUnknownUser: p4 has no user spec for the name.
var ErrUnknownUser = errors.New("unknown perforce user")

// UserEmail returns the Email of the user spec (`p4 user -o USER`),
// cached for the adapter's lifetime.
func (a *Adapter) UserEmail(ctx context.Context, user string) (string, error) {
	if user == "" || strings.HasPrefix(user, "-") || strings.ContainsAny(user, " \t\n@#*") {
		return "", fmt.Errorf("%w: %q", ErrUnknownUser, user)
	}
	a.mu.Lock()
	email, ok := a.emails[user]
	a.mu.Unlock()
	if ok {
		return email, nil
	}
	recs, _, err := a.runG(ctx, nil, "user", "-o", user)
	if err != nil {
		return "", err
	}
	if len(recs) == 0 || !recs[0].Has("Update") {
		// p4 prints a template spec (no Update date) for unknown users.
		return "", fmt.Errorf("%w: %s", ErrUnknownUser, user)
	}
	email = recs[0].Get("Email")
	a.mu.Lock()
	a.emails[user] = email
	a.mu.Unlock()
	return email, nil
}

// MinVersion is the oldest p4 client the adapter supports: every option
// it uses (-G, -x, print @=, annotate -c, describe -du, changes -m -s)
// is older, and 2017.1 is the oldest release with the tagged fields it
// reads documented as they are today.
const MinVersion = "2017.1"

// ErrOldClient: the p4 client is older than MinVersion.
var ErrOldClient = errors.New("p4 client too old")

var revLine = regexp.MustCompile(`Rev\. P4/[^/]+/(\d{4}\.\d+)/(\d+)`)

// ParseVersion reads the release from `p4 -V` output ("Rev.
// P4/LINUX26X86_64/2023.1/2468153 (2023/05/02).") as a semver version
// (2023.1.0) and the build number.
func ParseVersion(out string) (*semver.Version, string, error) {
	m := revLine.FindStringSubmatch(out)
	if m == nil {
		return nil, "", fmt.Errorf("p4 -V: no \"Rev. P4/...\" line in the output")
	}
	v, err := semver.NewVersion(m[1])
	if err != nil {
		return nil, "", fmt.Errorf("p4 -V: release %q: %w", m[1], err)
	}
	return v, m[2], nil
}

// CheckVersion runs `p4 -V` and refuses clients below MinVersion. It
// returns the release for display (aicr doctor).
func (a *Adapter) CheckVersion(ctx context.Context) (string, error) {
	cmd, err := a.command(ctx, nil, "-V")
	if err != nil {
		return "", err
	}
	cmd.Args = []string{a.bin, "-V"}
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("p4 -V: %w", err)
	}
	v, build, err := ParseVersion(string(out))
	if err != nil {
		return "", err
	}
	rel := fmt.Sprintf("%d.%d/%s", v.Major(), v.Minor(), build)
	if v.LessThan(semver.MustParse(MinVersion)) {
		return rel, fmt.Errorf("%w: %s is %s; aicr needs %s or newer (download the current p4 client from Perforce)", ErrOldClient, a.bin, rel, MinVersion)
	}
	return rel, nil
}
