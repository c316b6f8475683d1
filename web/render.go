package web

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/redact"
	"github.com/aicr-dev/aicr/review"
)

// page is what the layout renders around a page's own Data. Its
// methods give the templates the words of its language.
type page struct {
	Title string
	// User is the signed-in viewer ("" on a signed link's page, which
	// shows no navigation: its holder may see nothing else).
	User string
	// Logout is the sign-out form's token, for token sign-ins.
	Logout string
	// Base is base_url's path, which every link and form starts with.
	Base string
	// Lang is the language of every word aicr writes on the page.
	Lang im.Language
	Data any
}

func (s *server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	p.User, p.Base, p.Lang = viewer(r), s.prefix, s.lang(r)
	if p.User != "" && s.cfg.Auth == "token" {
		p.Logout = s.csrfToken("logout")
	}
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		s.log.Error("web: render page", "page", name, "err", err)
		http.Error(w, p.Lang.T(im.KeyWebErrRender), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail answers with a page that says what went wrong and what to do;
// title and msg are in the request's language.
func (s *server) fail(w http.ResponseWriter, r *http.Request, status int, title, msg string) {
	s.render(w, r, status, "error", page{Title: title, Data: map[string]any{"Status": strconv.Itoa(status), "Message": msg}})
}

// T is the catalogue's key in the page's language. Templates name keys
// by their string; TestTemplateKeysExist checks every one is there.
func (p page) T(key string, args ...any) string { return p.Lang.T(im.Key(key), args...) }

// HTMLLang is the page's language as <html lang> takes it.
func (p page) HTMLLang() string { return string(p.Lang.Norm()) }

// Enum is the word of an enumerated value (a state, a status) in the
// page's language: key "web.<kind>.<value>", else the value as stored,
// so a value a newer aicr wrote still shows.
func (p page) Enum(kind string, v any) string {
	return enumWord(p.Lang, kind, fmt.Sprint(v))
}

func enumWord(l im.Language, kind, v string) string {
	key := im.Key("web." + kind + "." + v)
	if _, ok := im.CatalogueFormat(im.LangEnglish, key); ok {
		return l.T(key)
	}
	return v
}

// State, Event, Act and Sev are the words of a finding's state, a
// history event, an action and a severity.
func (p page) State(st findings.State) string    { return stateLabel(p.Lang, st) }
func (p page) Event(k findings.EventKind) string { return enumWord(p.Lang, "event", string(k)) }
func (p page) Act(a findings.Action) string      { return actLabel(p.Lang, a) }
func (p page) Sev(sev review.Severity) string    { return sevLabel(p.Lang, sev) }
func (p page) When(t time.Time) string           { return when(p.Lang, t) }
func (p page) Ago(now, t time.Time) string       { return ago(p.Lang, now, t) }
func (p page) LeftOut(files []string, more int) string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = text(f)
	}
	list := strings.Join(names, p.Lang.T(im.KeyListSep))
	if more > 0 {
		return p.Lang.T(im.KeyLeftOutMore, list, more)
	}
	return p.Lang.T(im.KeyLeftOut, list)
}

// Cost is an agent's work on a run: its passes, turns and tokens.
func (p page) Cost(passes, turns, in, out int) string {
	if passes == 1 {
		return p.Lang.T(im.KeyWebCost1, turns, in, out)
	}
	return p.Lang.T(im.KeyWebCostN, passes, turns, in, out)
}

var funcs = template.FuncMap{
	"text":    text,
	"lower":   strings.ToLower,
	"add":     func(a, b int) int { return a + b },
	"usd":     func(v *float64) string { return fmt.Sprintf("$%.4f", *v) },
	"fenced":  fenced,
	"httpURL": httpURL,
	"rev":     func(kind, rev string) string { return revName(kind)(rev) },
	"id":      func(id int64) string { return strconv.FormatInt(id, 10) },
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

// when is t in UTC as l writes a date and time, marked UTC since
// readers sit in different zones.
func when(l im.Language, t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return l.DateTime(t.UTC()) + " UTC"
}

func ago(l im.Language, now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return l.T(im.KeyWebJustNow)
	case d < time.Hour:
		return l.T(im.KeyWebMinAgo, int(d.Minutes()))
	case d < 48*time.Hour:
		return l.T(im.KeyWebHAgo, int(d.Hours()))
	}
	return l.T(im.KeyWebDaysAgo, int(d.Hours()/24))
}

var actionKeys = map[findings.Action]im.Key{
	findings.ActionUseful:        im.KeyActUseful,
	findings.ActionFalsePositive: im.KeyActFalsePos,
	findings.ActionWontFix:       im.KeyActWontFix,
	findings.ActionAcceptedRisk:  im.KeyActAcceptedRisk,
	findings.ActionReopen:        im.KeyActReopen,
}

func actLabel(l im.Language, a findings.Action) string {
	if k, ok := actionKeys[a]; ok {
		return l.T(k)
	}
	return string(a)
}

// actionDone is what a confirmation says an action did.
var actionDone = map[findings.Action]im.Key{
	findings.ActionUseful:        im.KeyWebDoneUseful,
	findings.ActionFalsePositive: im.KeyWebDoneFalsePositive,
	findings.ActionWontFix:       im.KeyWebDoneWontFix,
	findings.ActionAcceptedRisk:  im.KeyWebDoneAcceptedRisk,
	findings.ActionReopen:        im.KeyWebDoneReopen,
}

func doneText(l im.Language, a string) string {
	if k, ok := actionDone[findings.Action(a)]; ok {
		return l.T(k)
	}
	return ""
}

func stateLabel(l im.Language, st findings.State) string { return enumWord(l, "state", string(st)) }

var sevKeys = map[review.Severity]im.Key{
	review.SeverityCritical: im.KeySevCritical, review.SeverityHigh: im.KeySevHigh, review.SeverityMedium: im.KeySevMedium,
	review.SeverityLow: im.KeySevLow, review.SeverityInfo: im.KeySevInfo,
}

func sevLabel(l im.Language, sev review.Severity) string {
	if k, ok := sevKeys[sev]; ok {
		return l.T(k)
	}
	return string(sev)
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
