package svn

import (
	"context"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/vcs"
)

// This file reads metadata through the svn client (access = "svn").

type infoXML struct {
	Entry struct {
		Kind        string `xml:"kind,attr"`
		URL         string `xml:"url"`
		RelativeURL string `xml:"relative-url"`
		Root        string `xml:"repository>root"`
	} `xml:"entry"`
}

// info learns where the URL sits in its repository; cached because it
// cannot change while the daemon runs.
func (a *Adapter) info(ctx context.Context) (*repoInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.repo != nil {
		return a.repo, nil
	}
	out, err := a.output(ctx, "info", "--xml", headURL(a.cfg.URL))
	if err != nil {
		return nil, err
	}
	var x infoXML
	if err := xml.Unmarshal(out, &x); err != nil {
		return nil, fmt.Errorf("svn info: parse xml: %w", err)
	}
	e := x.Entry
	if e.URL == "" || e.Root == "" || !strings.HasPrefix(e.URL, e.Root) {
		return nil, fmt.Errorf("svn info: no url/root for %s", a.cfg.URL)
	}
	if e.Kind != "dir" {
		return nil, fmt.Errorf("svn info: %s is a %s: point url at a directory such as trunk", a.cfg.URL, e.Kind)
	}
	rel := strings.TrimPrefix(e.RelativeURL, "^")
	if rel == "" {
		rel = strings.TrimPrefix(e.URL, e.Root)
	}
	p, err := url.PathUnescape(rel)
	if err != nil {
		return nil, fmt.Errorf("svn info: bad relative url %q: %w", e.RelativeURL, err)
	}
	a.repo = &repoInfo{url: strings.TrimRight(e.URL, "/"), root: e.Root, path: strings.TrimRight(p, "/")}
	return a.repo, nil
}

type logXML struct {
	Entries []struct {
		Author string `xml:"author"`
		Date   string `xml:"date"`
		Msg    string `xml:"msg"`
		Paths  []struct {
			Action       string `xml:"action,attr"`
			Kind         string `xml:"kind,attr"`
			CopyFromPath string `xml:"copyfrom-path,attr"`
			CopyFromRev  string `xml:"copyfrom-rev,attr"`
			Path         string `xml:",chardata"`
		} `xml:"paths>path"`
	} `xml:"logentry"`
}

// log reads the revision's metadata and the paths it changed under the URL.
func (a *Adapter) log(ctx context.Context, info *repoInfo, rev int64) (*vcs.Change, error) {
	revStr := strconv.FormatInt(rev, 10)
	c := &vcs.Change{VCS: vcs.KindSVN, Revision: revStr}
	out, err := a.output(ctx, "log", "--xml", "-v", "-r", revStr, pegURL(info.url, rev))
	switch {
	case svnSays(err, "E160006"):
		return nil, a.noSuchRevision(ctx, rev)
	case svnSays(err, "E160013"), svnSays(err, "E195012"):
		// The URL did not exist at rev, so nothing under it changed.
		return c, a.revProps(ctx, info, rev, c)
	case err != nil:
		return nil, err
	}
	var x logXML
	if err := xml.Unmarshal(out, &x); err != nil {
		return nil, fmt.Errorf("svn log: parse xml: %w", err)
	}
	if len(x.Entries) == 0 {
		// svn log on a directory lists only revisions that touched it.
		return c, a.revProps(ctx, info, rev, c)
	}
	e := x.Entries[0]
	if err := setMeta(c, e.Author, e.Date, e.Msg); err != nil {
		return nil, err
	}
	for _, p := range e.Paths {
		rel, ok := info.relPath(p.Path)
		if !ok {
			continue
		}
		if err := checkRelPath(rel); err != nil {
			return nil, fmt.Errorf("svn log: %w", err)
		}
		f := vcs.FileChange{Path: rel, Action: action(p.Action), NodeKind: vcs.NodeFile}
		if p.Kind == "dir" {
			f.NodeKind = vcs.NodeDir
		}
		if p.CopyFromPath != "" {
			f.CopyFromPath = p.CopyFromPath
			if from, ok := info.relPath(p.CopyFromPath); ok {
				f.CopyFromPath = from
			}
			f.CopyFromRev = p.CopyFromRev
		}
		c.Files = append(c.Files, f)
	}
	sort.Slice(c.Files, func(i, j int) bool { return c.Files[i].Path < c.Files[j].Path })
	return c, nil
}

func setMeta(c *vcs.Change, author, date, msg string) error {
	c.Author = author
	c.Description = msg
	if date == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, date)
	if err != nil {
		return fmt.Errorf("svn log: bad date %q: %w", date, err)
	}
	c.Date = t
	return nil
}

type revpropsXML struct {
	Props []struct {
		Name     string `xml:"name,attr"`
		Encoding string `xml:"encoding,attr"`
		Value    string `xml:",chardata"`
	} `xml:"revprops>property"`
}

// revProps fills author, date and message for a revision that svn log on
// the URL does not show.
func (a *Adapter) revProps(ctx context.Context, info *repoInfo, rev int64, c *vcs.Change) error {
	out, err := a.output(ctx, "proplist", "--revprop", "--xml", "-v", "-r", strconv.FormatInt(rev, 10), info.root)
	if svnSays(err, "E160006") {
		return a.noSuchRevision(ctx, rev)
	}
	if err != nil {
		return err
	}
	return setRevProps(c, out)
}

// setRevProps reads `proplist --revprop --xml -v` output, which svn and
// svnlook print alike.
func setRevProps(c *vcs.Change, out []byte) error {
	var x revpropsXML
	if err := xml.Unmarshal(out, &x); err != nil {
		return fmt.Errorf("proplist: parse xml: %w", err)
	}
	var author, date, msg string
	for _, p := range x.Props {
		v := p.Value
		if p.Encoding == "base64" {
			// Values that are not valid XML text (control characters)
			// come base64-encoded.
			b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(v), ""))
			if err != nil {
				return fmt.Errorf("proplist: bad base64 in %s: %w", p.Name, err)
			}
			v = string(b)
		}
		switch p.Name {
		case "svn:author":
			author = v
		case "svn:date":
			date = v
		case "svn:log":
			msg = v
		}
	}
	return setMeta(c, author, date, msg)
}

func (a *Adapter) noSuchRevision(ctx context.Context, rev int64) error {
	if y, err := a.Youngest(ctx); err == nil {
		return fmt.Errorf("%w: r%d (youngest is r%d)", vcs.ErrNoSuchRevision, rev, y)
	}
	return fmt.Errorf("%w: r%d", vcs.ErrNoSuchRevision, rev)
}

// mimeType returns rel's svn:mime-type at rev, "" when it has none.
func (a *Adapter) mimeType(ctx context.Context, info *repoInfo, rel string, rev int64) (string, error) {
	if a.access == AccessSvnlook {
		var buf strings.Builder
		err := a.look(ctx, &buf, "propget", rev, "svn:mime-type", info.repoPath(rel))
		if svnSays(err, "E200017") {
			return "", nil
		}
		return buf.String(), err
	}
	out, err := a.output(ctx, "proplist", "--xml", "-v", fileURL(info.url, rel, rev))
	if err != nil {
		return "", err
	}
	var x struct {
		Props []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:",chardata"`
		} `xml:"target>property"`
	}
	if err := xml.Unmarshal(out, &x); err != nil {
		return "", fmt.Errorf("svn proplist: parse xml: %w", err)
	}
	for _, p := range x.Props {
		if p.Name == "svn:mime-type" {
			return p.Value, nil
		}
	}
	return "", nil
}
