package web

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/redact"
)

// page is what the layout renders around a page's own Data.
type page struct {
	Title string
	// User is the signed-in viewer ("" on a signed link's page, which
	// shows no navigation: its holder may see nothing else).
	User string
	// Logout is the sign-out form's token, for token sign-ins.
	Logout string
	// Base is base_url's path, which every link and form starts with.
	Base string
	Data any
}

func (s *server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	p.User, p.Base = viewer(r), s.prefix
	if p.User != "" && s.cfg.Auth == "token" {
		p.Logout = s.csrfToken("logout")
	}
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		s.log.Error("web: render page", "page", name, "err", err)
		http.Error(w, "the page could not be rendered; see the daemon's log", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail answers with a page that says what went wrong and what to do.
func (s *server) fail(w http.ResponseWriter, r *http.Request, status int, title, msg string) {
	s.render(w, r, status, "error", page{Title: title, Data: map[string]any{"Status": status, "Message": msg}})
}

var funcs = template.FuncMap{
	"text":       text,
	"when":       when,
	"ago":        ago,
	"stateLabel": stateLabel,
	"actLabel":   func(a findings.Action) string { return actionLabels[a] },
	"eventLabel": eventLabel,
	"lower":      strings.ToLower,
	"add":        func(a, b int) int { return a + b },
	"usd":        func(v *float64) string { return fmt.Sprintf("$%.4f", *v) },
	"fenced":     fenced,
	"httpURL":    httpURL,
	"rev":        func(kind, rev string) string { return revName(kind)(rev) },
}

// httpURL is u when it is an absolute http(s) URL with a host, else "":
// the change link comes from the operator's config template, but it is
// filled with a revision, and nothing else may become a link.
func httpURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || strings.ContainsAny(u, " \t\r\n\"'<>") {
		return ""
	}
	return u
}

// snippet is a suggestion that is one fenced code block, shown as code
// without its fences.
type snippet struct {
	Code bool
	Text string
}

func fenced(s string) snippet {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return snippet{Text: s}
	}
	body := strings.TrimSuffix(t, "```")
	_, body, ok := strings.Cut(body, "\n")
	if !ok || strings.Contains(body, "```") {
		return snippet{Text: s}
	}
	return snippet{Code: true, Text: strings.TrimRight(body, "\n")}
}

// text is hostile text (an agent's message, a committer's name, a path)
// as the page shows it: sanitized as reports are, credentials redacted,
// and then only ever escaped by html/template.
func text(s string) string { return redact.Text(im.Sanitize(s)) }

func when(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}

var actionLabels = map[findings.Action]string{
	findings.ActionUseful:        "Useful",
	findings.ActionFalsePositive: "False positive",
	findings.ActionWontFix:       "Won't fix",
	findings.ActionAcceptedRisk:  "Accepted risk",
	findings.ActionReopen:        "Reopen",
}

// actionDone is what a confirmation says an action did.
var actionDone = map[findings.Action]string{
	findings.ActionUseful:        "Thanks: counted as useful.",
	findings.ActionFalsePositive: "Dismissed as a false positive. It will not be reported again in this repository.",
	findings.ActionWontFix:       "Dismissed as won't fix. It will not be reported again in this repository.",
	findings.ActionAcceptedRisk:  "Dismissed as an accepted risk. It will not be reported again in this repository.",
	findings.ActionReopen:        "Reopened.",
}

func stateLabel(st findings.State) string {
	switch st {
	case findings.StateOpen:
		return "Open"
	case findings.StateReopened:
		return "Reopened"
	case findings.StateResolved:
		return "Resolved"
	case findings.StateDismissed:
		return "Dismissed"
	}
	return string(st)
}

func eventLabel(k findings.EventKind) string {
	switch k {
	case findings.EventReported:
		return "First reported"
	case findings.EventSeen:
		return "Reported again"
	case findings.EventResolved:
		return "Resolved"
	case findings.EventReopened:
		return "Reopened"
	case findings.EventDismissed:
		return "Dismissed"
	case findings.EventUseful:
		return "Marked useful"
	case findings.EventMoved:
		return "File moved"
	}
	return string(k)
}

// applicable lists the actions that apply to a finding in st, in the
// order the page offers them; the store has the last word (ErrConflict).
func applicable(st findings.State) []findings.Action {
	switch {
	case st.Active():
		return []findings.Action{findings.ActionUseful, findings.ActionFalsePositive, findings.ActionWontFix, findings.ActionAcceptedRisk}
	case st == findings.StateResolved:
		return []findings.Action{findings.ActionUseful, findings.ActionReopen}
	case st == findings.StateDismissed:
		return []findings.Action{findings.ActionReopen}
	}
	return nil
}

func applies(st findings.State, a findings.Action) bool {
	for _, v := range applicable(st) {
		if v == a {
			return true
		}
	}
	return false
}

// codeLine is one line of a code excerpt. Characters that are invisible
// or reorder text (controls, bidirectional overrides: "trojan source")
// are shown as their code point, so the page shows what the file holds.
type codeLine struct {
	N      int
	Text   string
	Anchor bool
}

func visibleCode(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteString("    ")
		case unicode.IsControl(r) || isBidi(r) || r == '\u200B' || r == '\uFEFF':
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isBidi(r rune) bool {
	return (r >= '\u202A' && r <= '\u202E') || (r >= '\u2066' && r <= '\u2069') ||
		r == '\u200E' || r == '\u200F' || r == '\u061C'
}
