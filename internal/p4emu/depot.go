// Package p4emu is aicr's emulator of the `p4` command-line client, used
// by tests and benchmarks because no Perforce server can run here. It
// serves a depot defined in Go (Fixture) or loaded from a JSON file, and
// prints exactly the formats the real client prints. Every format is
// taken from real output: the -G and -ztag captures in
// ../shared/fixtures/p4 (reproduced byte for byte by the tests), the -G
// encoder of the Perforce client source (client/clientusermsh.cc: only
// '{' 's' 'i' '0'; text/binary/info/error records), the server's message
// table (msgs/msgserver.cc: error texts, severities and generic codes),
// and the published examples quoted in the fixtures' README (describe
// -du text layout, print headers, changes lines, -V).
package p4emu

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Depot is the whole server state the emulator serves.
type Depot struct {
	// Unicode makes the server a unicode server: every command but info
	// needs -C (P4CHARSET), and info reports "unicode enabled".
	Unicode bool `json:"unicode,omitempty"`
	// ClientRev is what `p4 -V` reports, e.g. "2023.1/2468153 (2023/05/02)".
	ClientRev string `json:"client_rev,omitempty"`
	// Password and Ticket, when set, are what P4PASSWD (or a P4TICKETS
	// file line) must hold. TicketExpired makes every command fail the
	// way p4d does when a ticket times out.
	Password      string            `json:"password,omitempty"`
	Ticket        string            `json:"ticket,omitempty"`
	TicketExpired bool              `json:"ticket_expired,omitempty"`
	Users         map[string]User   `json:"users,omitempty"`
	Changes       []*Change         `json:"changes"`
	Counters      map[string]string `json:"counters,omitempty"`
	// Info, when set, is the exact key/value list `p4 info` prints.
	Info []string `json:"info,omitempty"`
	// SSLFingerprint, when set, is the key fingerprint an ssl: port
	// presents; the client refuses it until P4TRUST lists it (trust.go).
	SSLFingerprint string `json:"ssl_fingerprint,omitempty"`
	// ExpiredTickets are tickets p4d issued once and no longer accepts:
	// a tickets file holding one gets "Your session has expired", and
	// `p4 login` with Password writes Ticket in its place.
	ExpiredTickets []string `json:"expired_tickets,omitempty"`

	byNum   map[int]*Change     `json:"-"`
	history map[string][]*FileV `json:"-"`
}

// User is a user spec.
type User struct {
	Email    string `json:"email"`
	FullName string `json:"full_name"`
	Update   int64  `json:"update"`
	Access   int64  `json:"access"`
}

// Change is a submitted (or pending) changelist.
type Change struct {
	Num    int     `json:"num"`
	User   string  `json:"user"`
	Client string  `json:"client"`
	Time   int64   `json:"time"`
	Desc   string  `json:"desc"`
	Status string  `json:"status,omitempty"` // default "submitted"
	Files  []*File `json:"files"`

	// Shelved: a pending change whose Files are shelved (see Shelve).
	Shelved bool `json:"shelved,omitempty"`
}

// File is one revision a change submitted. Path is the real name
// (unescaped); the emulator escapes it wherever p4 prints names.
type File struct {
	Path    string `json:"path"`
	Action  string `json:"action"`
	Type    string `json:"type"`
	Content []byte `json:"content,omitempty"`
	// From is the source of branch/integrate/move/add.
	From string `json:"from,omitempty"`
	rev  int
}

// FileV is one revision in a file's history.
type FileV struct {
	Change *Change
	File   *File
	Rev    int
}

// Load reads a depot saved with Save.
func Load(path string) (*Depot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d Depot
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("depot %s: %w", path, err)
	}
	d.index()
	return &d, nil
}

// Save writes the depot as JSON for the emulator process to load.
func (d *Depot) Save(path string) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Submit appends a change numbered after the last one and returns it.
func (d *Depot) Submit(c *Change) *Change {
	if c.Num == 0 {
		c.Num = 1
		if n := len(d.Changes); n > 0 {
			c.Num = d.Changes[n-1].Num + 1
		}
	}
	if c.Time == 0 {
		c.Time = 1700000000 + int64(c.Num)*60
	}
	d.Changes = append(d.Changes, c)
	d.index()
	return c
}

// index numbers revisions and builds per-file histories.
func (d *Depot) index() {
	sort.SliceStable(d.Changes, func(i, j int) bool { return d.Changes[i].Num < d.Changes[j].Num })
	d.byNum = map[int]*Change{}
	d.history = map[string][]*FileV{}
	for _, c := range d.Changes {
		d.byNum[c.Num] = c
		if c.status() != "submitted" {
			continue
		}
		for _, f := range c.Files {
			h := d.history[f.Path]
			f.rev = len(h) + 1
			d.history[f.Path] = append(h, &FileV{Change: c, File: f, Rev: f.rev})
		}
	}
}

func (c *Change) status() string {
	if c.Status == "" {
		return "submitted"
	}
	return c.Status
}

// at returns the newest revision of path at or before change n, or nil.
func (d *Depot) at(path string, n int) *FileV {
	var out *FileV
	for _, v := range d.history[path] {
		if v.Change.Num <= n {
			out = v
		}
	}
	return out
}

// maxCommit is the highest submitted change.
func (d *Depot) maxCommit() int {
	m := 0
	for _, c := range d.Changes {
		if c.status() == "submitted" && c.Num > m {
			m = c.Num
		}
	}
	return m
}

func isDeleted(action string) bool {
	return action == "delete" || action == "move/delete" || action == "purge" || action == "archive"
}

// content is what a revision holds, following branches that carry no
// content of their own back to their source.
func (d *Depot) content(v *FileV) []byte {
	if v.File.Content == nil && v.File.From != "" {
		if src := d.at(v.File.From, v.Change.Num); src != nil && src.File != v.File {
			return d.content(src)
		}
	}
	return v.File.Content
}

// baseType strips modifiers: "text+k" → "text".
func baseType(t string) string {
	b, _, _ := strings.Cut(t, "+")
	return b
}

func isTextType(t string) bool {
	switch baseType(t) {
	case "text", "unicode", "utf8", "utf16", "ktext":
		return true
	}
	return false
}
