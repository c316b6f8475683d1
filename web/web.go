// Package web is the daemon's own web page of findings and runs: a
// finding with its code excerpt, history and actions, a run with its
// report, findings, deliveries and cost, and the lists of both. Chat
// platforms carry a signed link per finding and action (package
// weblink); those links work without an account, everything else needs
// the shop's reverse proxy with SSO ([web] auth = "proxy") or a bearer
// token (auth = "token").
//
// Pages are server-rendered from embedded html/template files with one
// embedded stylesheet and no script, under a CSP that allows nothing
// else. Every text on them (agent messages, committer names, paths, code)
// is hostile and reaches the page only through html/template's escaping,
// after the sanitizing reports use; no agent or committer text ever
// becomes a link. Every state change is a POST with a CSRF token.
package web

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/weblink"
)

// Store is what the pages read and the actions write: the findings and
// the runs with their dispatches. *audit.Store implements it.
type Store interface {
	findings.Store
	ListRuns(ctx context.Context, opts audit.ListOptions) ([]audit.RunSummary, error)
	GetRun(ctx context.Context, runID int64) (*audit.RunDetail, error)
	DispatchReport(ctx context.Context, dispatchID int64) (*im.Report, error)
}

// Options are New's dependencies.
type Options struct {
	Store Store
	// Config is the [web] table, validated and defaulted by package config.
	Config config.Web
	// Signer checks the report links and signs the ones a finding's page
	// offers; its key also keys the CSRF tokens and the login cookie.
	Signer weblink.Signer
	Logger *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// CSP is the Content-Security-Policy of every response: the page's own
// stylesheet and nothing else, no script, no framing, forms to itself.
const CSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// maxFormBytes bounds a POST body: a form holds an action, a token, a
// name and a short reason.
const maxFormBytes = 16 << 10

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static/style.css
var styleCSS []byte

type server struct {
	store   Store
	cfg     config.Web
	signer  weblink.Signer
	log     *slog.Logger
	now     func() time.Time
	proxies []netip.Prefix
	csrfKey []byte
	// prefix is base_url's path ("/aicr"; "" at the root): every link,
	// form and redirect starts with it, and a request that still carries
	// it (a proxy that does not strip it) is served as one that does not.
	prefix string
	// tokenErr is the last error reading the token, so it is logged once.
	tokenErr atomic.Pointer[string]
	pages    map[string]*template.Template
	secure   bool
}

// Validate reports what keeps o from serving the page: no store, a
// signer without a key (the links and CSRF tokens need one), a
// trusted_proxies entry that does not parse. The daemon calls it before
// New, so a bad [web] stops the start with the reason.
func (o Options) Validate() error {
	var errs []error
	if o.Store == nil {
		errs = append(errs, errors.New("web: no store"))
	}
	if len(o.Signer.Key) < weblink.MinKeyBytes {
		errs = append(errs, fmt.Errorf("web: %w: the page needs the link key for its links and CSRF tokens", weblink.ErrNoKey))
	}
	for _, p := range o.Config.TrustedProxies {
		if _, err := config.ParseTrustedProxy(p); err != nil {
			errs = append(errs, fmt.Errorf("web.trusted_proxies: %w", err))
		}
	}
	return errors.Join(errs...)
}

// New is the web page's handler. Options that do not Validate give a
// handler that answers every request with 503 and the reason (logged
// once), never a page without its protections.
func New(o Options) http.Handler {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := o.Validate(); err != nil {
		log.Error("web page not served", "err", err)
		return secureHeaders(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, o.Config.Language.T(im.KeyWebErrNotConfigured, err.Error()), http.StatusServiceUnavailable)
		}))
	}
	s := &server{store: o.Store, cfg: o.Config, signer: o.Signer, log: log, now: o.Now,
		secure: strings.HasPrefix(o.Config.BaseURL, "https://"), pages: pages}
	if s.now == nil {
		s.now = time.Now
	}
	if s.cfg.UserHeader == "" {
		s.cfg.UserHeader = config.DefaultUserHeader
	}
	for _, p := range o.Config.TrustedProxies {
		prefix, _ := config.ParseTrustedProxy(p) // checked by Validate
		s.proxies = append(s.proxies, prefix)
	}
	s.csrfKey = derive(o.Signer.Key, "aicr-web-csrf/v1")
	if u, err := url.Parse(o.Config.BaseURL); err == nil {
		s.prefix = strings.TrimRight(u.Path, "/")
	}
	return s.routes()
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, s.prefix+"/findings", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /static/style.css", serveStyle)
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.logout)
	mux.HandleFunc("GET /findings", s.authed(s.findingList))
	mux.HandleFunc("GET /findings/{id}", s.authed(s.findingPage))
	mux.HandleFunc("POST /findings/{id}/act", s.authed(s.findingAct))
	mux.HandleFunc("GET /runs", s.authed(s.runList))
	mux.HandleFunc("GET /runs/{id}", s.authed(s.runPage))
	mux.HandleFunc("GET /f/{id}/{action}", s.linkPage)
	mux.HandleFunc("POST /f/{id}/{action}", s.linkAct)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, s.t(r, im.KeyWebErrNotFound), s.t(r, im.KeyWebErrNoPage))
	})
	return secureHeaders(s.stripPrefix(s.language(mux)))
}

// langCookie keeps a reader's ?lang= choice for the pages they open
// next, so the page's links, forms and redirects need not carry it.
const langCookie = "aicr_lang"

type langKey struct{}

// language settles the request's language: ?lang= (remembered in a
// cookie), else the cookie, else [web] language. A value aicr does not
// write is ignored there, as a link someone mistyped should still
// open the page, in the configured language.
func (s *server) language(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := s.cfg.Language.Norm()
		if c, err := r.Cookie(langCookie); err == nil {
			if v, err := im.ParseLanguage(c.Value); err == nil && c.Value != "" {
				l = v
			}
		}
		if q := r.URL.Query().Get("lang"); q != "" {
			if v, err := im.ParseLanguage(q); err == nil {
				l = v
				http.SetCookie(w, &http.Cookie{Name: langCookie, Value: string(v), Path: s.prefix + "/", MaxAge: 365 * 24 * 3600,
					HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure || r.TLS != nil})
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), langKey{}, l)))
	})
}

// lang is the language of r's page.
func (s *server) lang(r *http.Request) im.Language {
	if l, ok := r.Context().Value(langKey{}).(im.Language); ok {
		return l
	}
	return s.cfg.Language.Norm()
}

// t is key in r's language.
func (s *server) t(r *http.Request, key im.Key, args ...any) string { return s.lang(r).T(key, args...) }

// stripPrefix serves base_url's path whether or not the reverse proxy
// strips it.
func (s *server) stripPrefix(next http.Handler) http.Handler {
	if s.prefix == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := strings.CutPrefix(r.URL.Path, s.prefix); ok && (p == "" || strings.HasPrefix(p, "/")) {
			r2 := r.Clone(r.Context())
			r2.URL.Path = cmp.Or(p, "/")
			r2.URL.RawPath = ""
			next.ServeHTTP(w, r2)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// secureHeaders sets what every response carries. Pages are never
// cached: a signed link's page holds further signed links, and the
// read pages are behind sign-in.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		}
		next.ServeHTTP(w, r)
	})
}

func serveStyle(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	// The stylesheet holds no secret; an hour's caching spares a reload.
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(styleCSS)
}

// pages are the page templates, each parsed with the shared layout
// once; they are embedded, so an error is a bug of this build.
var pages = parsePages()

func parsePages() map[string]*template.Template {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		out[base] = template.Must(template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n))
	}
	return out
}
