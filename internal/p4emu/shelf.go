package p4emu

// Shelved changes: a pending change whose files were shelved (`p4
// shelve`). `p4 describe -S` lists the shelved files (the record carries
// an empty "shelved" key, and each file the revision it was opened at,
// "none" for an add), `p4 describe -S -du` diffs them against that
// revision, and `p4 print //...@=N` prints their shelved content.

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/vcs/p4"
)

// Shelve adds a pending change with shelved files, numbered after the
// last change, and returns it.
func (d *Depot) Shelve(c *Change) *Change {
	c.Status, c.Shelved = "pending", true
	return d.Submit(c)
}

// shelf is the shelved change numbered n, if there is one.
func (e *emu) shelf(n int) (*Change, bool) {
	c, ok := e.d.byNum[n]
	return c, ok && c.Shelved && c.status() == "pending"
}

// baseRev is the submitted revision a shelved file was opened at: the
// head when the shelf was made (nil for a new file).
func (e *emu) baseRev(f *File) *FileV {
	return e.d.at(f.Path, e.d.maxCommit())
}

// shelvedFileV is a shelved file as print and describe see it.
func (e *emu) shelvedFileV(c *Change, f *File) *FileV {
	rev := 0
	if b := e.baseRev(f); b != nil {
		rev = b.Rev
	}
	return &FileV{Change: c, File: f, Rev: rev}
}

// describeShelf answers describe -S for a shelved change; false when c
// is not one (describe then prints it as usual).
func (e *emu) describeShelf(c *Change, short bool) bool {
	if !c.Shelved || c.status() != "pending" {
		return false
	}
	if e.mode == "text" {
		e.describeShelfText(c, short)
		return true
	}
	r := kv("change", strconv.Itoa(c.Num), "user", c.User, "client", c.Client,
		"time", strconv.FormatInt(c.Time, 10), "desc", c.Desc, "status", "pending",
		"changeType", "public", "shelved", "", "path", changePath(c))
	for i, f := range c.Files {
		is := strconv.Itoa(i)
		v := e.shelvedFileV(c, f)
		rev := "none"
		if v.Rev > 0 {
			rev = strconv.Itoa(v.Rev)
		}
		r.Set("depotFile"+is, []byte(p4.EscapePath(f.Path)))
		r.Set("action"+is, []byte(f.Action))
		r.Set("type"+is, []byte(f.Type))
		r.Set("rev"+is, []byte(rev))
		if !isDeleted(f.Action) {
			r.Set("fileSize"+is, []byte(strconv.Itoa(len(f.Content))))
			r.Set("digest"+is, []byte(digest(f.Content)))
		}
	}
	e.stat(r)
	return true
}

// describeShelfText is describeText for a shelf: "Shelved files ..."
// instead of "Affected files ...", diffs against the opened revision.
func (e *emu) describeShelfText(c *Change, short bool) {
	w := e.stdout
	t := time.Unix(c.Time, 0).UTC().Format("2006/01/02 15:04:05")
	fmt.Fprintf(w, "Change %d by %s@%s on %s *pending*\n\n", c.Num, c.User, c.Client, t)
	for _, l := range strings.Split(strings.TrimRight(c.Desc, "\n"), "\n") {
		fmt.Fprintf(w, "\t%s\n", l)
	}
	fmt.Fprintf(w, "\nShelved files ...\n\n")
	for _, f := range c.Files {
		v := e.shelvedFileV(c, f)
		rev := "none"
		if v.Rev > 0 {
			rev = strconv.Itoa(v.Rev)
		}
		fmt.Fprintf(w, "... %s#%s %s\n", p4.EscapePath(f.Path), rev, f.Action)
	}
	if short {
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "\nDifferences ...\n\n")
	for _, f := range c.Files {
		if f.Action != "edit" && f.Action != "integrate" {
			continue
		}
		base := e.baseRev(f)
		if base == nil {
			continue
		}
		fmt.Fprintf(w, "==== %s#%d (%s) ====\n\n", p4.EscapePath(f.Path), base.Rev, f.Type)
		if !isTextType(f.Type) {
			continue
		}
		hunks := unifiedHunks(splitLinesKeep(e.d.content(base)), splitLinesKeep(f.Content))
		if hunks != "" {
			fmt.Fprint(w, hunks)
			fmt.Fprintln(w)
		}
	}
}

// resolveShelf answers a file spec @=N naming a shelved change: its
// shelved files matching the path; false when N is not a shelf.
func (e *emu) resolveShelf(s fileSpec) ([]*FileV, bool) {
	if !s.exact {
		return nil, false
	}
	c, ok := e.shelf(s.change)
	if !ok {
		return nil, false
	}
	var out []*FileV
	for _, f := range c.Files {
		if s.path == f.Path || (strings.Contains(s.path, "...") && match(s.path, f.Path)) {
			out = append(out, e.shelvedFileV(c, f))
		}
	}
	return out, true
}
