package web

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/weblink"
)

// maxReasonLen bounds the reason a person gives with an action.
const maxReasonLen = 500

// findingAct is a signed-in user's action from the finding page.
func (s *server) findingAct(w http.ResponseWriter, r *http.Request) {
	f, ok := s.loadFinding(w, r)
	if !ok {
		return
	}
	user := viewer(r)
	if !s.formOK(w, r, userBinding(user, f.ID)) {
		return
	}
	a := findings.Action(r.PostFormValue("action"))
	if !a.Valid() {
		s.fail(w, r, http.StatusBadRequest, s.t(r, im.KeyWebErrUnknownAction), s.t(r, im.KeyWebErrUnknownActionMsg, strconv.Quote(text(string(a)))))
		return
	}
	if !s.act(w, r, f, a, user, "web") {
		return
	}
	http.Redirect(w, r, s.prefix+"/findings/"+strconv.FormatInt(f.ID, 10)+"?done="+url.QueryEscape(string(a)), http.StatusSeeOther)
}

// act records a person's action with where it came from, and answers
// the request itself when the store refuses it.
func (s *server) act(w http.ResponseWriter, r *http.Request, f findings.Finding, a findings.Action, actor, how string) bool {
	reason := im.Sanitize(strings.TrimSpace(r.PostFormValue("reason")))
	if rs := []rune(reason); len(rs) > maxReasonLen {
		reason = string(rs[:maxReasonLen])
	}
	where := how + " from " + s.clientAddr(r)
	note := where
	if reason != "" {
		note = reason + " (" + where + ")"
	}
	_, err := s.store.ActOnFinding(r.Context(), f.ID, findings.Act{Action: a, Actor: actor, Via: findings.ViaWeb, Note: note, At: s.now()})
	switch {
	case errors.Is(err, findings.ErrConflict):
		l := s.lang(r)
		s.fail(w, r, http.StatusConflict, l.T(im.KeyWebErrNothingToDo),
			l.T(im.KeyWebErrNotApplicable, actLabel(l, a), strings.ToLower(stateLabel(l, f.State))))
		return false
	case errors.Is(err, findings.ErrNotFound):
		s.fail(w, r, http.StatusNotFound, s.t(r, im.KeyWebErrNoFinding), s.t(r, im.KeyWebErrRemoved))
		return false
	case err != nil:
		s.storeFailed(w, r, err)
		return false
	}
	s.log.Info("finding action", "finding", f.ID, "repo", f.Repo, "action", string(a), "actor", actor, "via", how, "remote", s.clientAddr(r))
	return true
}

// linkParams are a signed link's parts, checked.
type linkParams struct {
	finding findings.Finding
	action  string
	// binding ties a form's CSRF token to this very link.
	binding string
}

// checkLink verifies the signed link the request is for and loads its
// finding; it answers the request itself (403, 404) when it may not.
func (s *server) checkLink(w http.ResponseWriter, r *http.Request) (linkParams, bool) {
	action := r.PathValue("action")
	if action != weblink.ActionView && !findings.Action(action).Valid() {
		s.fail(w, r, http.StatusNotFound, s.t(r, im.KeyWebErrNotFound), s.t(r, im.KeyWebErrNoAction))
		return linkParams{}, false
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.fail(w, r, http.StatusNotFound, s.t(r, im.KeyWebErrNotFound), s.t(r, im.KeyWebErrLinkNumber))
		return linkParams{}, false
	}
	q := r.URL.Query()
	exp, sig := q.Get("exp"), q.Get("sig")
	switch err := s.signer.Verify(id, action, exp, sig, s.now()); {
	case errors.Is(err, weblink.ErrExpired):
		s.fail(w, r, http.StatusForbidden, s.t(r, im.KeyWebErrLinkExpired), s.t(r, im.KeyWebErrLinkExpiredMsg))
		return linkParams{}, false
	case err != nil:
		s.fail(w, r, http.StatusForbidden, s.t(r, im.KeyWebErrLinkInvalid), s.t(r, im.KeyWebErrLinkInvalidMsg))
		return linkParams{}, false
	}
	f, ok := s.loadFinding(w, r)
	if !ok {
		return linkParams{}, false
	}
	return linkParams{finding: f, action: action, binding: "link\n" + r.URL.Path + "\n" + exp + "\n" + sig}, true
}

// linkPage is a signed link's GET: the finding, and for an action link a
// form to confirm it; a GET never changes anything.
func (s *server) linkPage(w http.ResponseWriter, r *http.Request) {
	lp, ok := s.checkLink(w, r)
	if !ok {
		return
	}
	f := lp.finding
	v, err := s.findingView(r.Context(), s.lang(r), f)
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	v.Link = true
	v.Done = doneText(s.lang(r), r.URL.Query().Get("done"))
	if lp.action == weblink.ActionView {
		// The view link's holder may take the actions a report offers:
		// sign their links now, relative, so the forms post to this host.
		for _, a := range applicable(f.State) {
			if u := s.relativeLink(f.ID, string(a)); u != "" {
				v.LinkActions = append(v.LinkActions, linkAction{Action: a, URL: u})
			}
		}
	} else if a := findings.Action(lp.action); applies(f.State, a) {
		v.Confirm = &confirmView{Action: a, URL: s.prefix + r.URL.Path + "?" + url.Values{"exp": {r.URL.Query().Get("exp")}, "sig": {r.URL.Query().Get("sig")}}.Encode(),
			CSRF: s.csrfToken(lp.binding)}
	} else if v.Done == "" {
		l := s.lang(r)
		v.Notice = l.T(im.KeyWebNoticeNotApplicable, actLabel(l, a), strings.ToLower(stateLabel(l, f.State)))
	}
	s.render(w, r, http.StatusOK, "finding", page{Title: s.t(r, im.KeyWebTitleFinding, strconv.FormatInt(f.ID, 10)), Data: v})
}

// linkAct is a signed action link's POST: the action, by "link" and the
// name the form was given, then the finding's page.
func (s *server) linkAct(w http.ResponseWriter, r *http.Request) {
	lp, ok := s.checkLink(w, r)
	if !ok {
		return
	}
	if lp.action == weblink.ActionView {
		s.fail(w, r, http.StatusMethodNotAllowed, s.t(r, im.KeyWebErrNothingToSend), s.t(r, im.KeyWebErrViewLinkPost))
		return
	}
	if !s.formOK(w, r, lp.binding) {
		return
	}
	actor := "link"
	if name := cleanName(r.PostFormValue("name")); name != "" {
		actor = "link:" + name
	}
	a := findings.Action(lp.action)
	if !s.act(w, r, lp.finding, a, actor, "web link") {
		return
	}
	back := s.relativeLink(lp.finding.ID, weblink.ActionView)
	if back == "" {
		back = s.prefix + r.URL.RequestURI()
	}
	sep := "?"
	if strings.Contains(back, "?") {
		sep = "&"
	}
	http.Redirect(w, r, back+sep+"done="+url.QueryEscape(string(a)), http.StatusSeeOther)
}

// relativeLink is a freshly signed link without base_url's origin: the
// page's forms and links stay on the host the reader reached.
func (s *server) relativeLink(id int64, action string) string {
	signer := s.signer
	if signer.BaseURL == "" {
		signer.BaseURL = "http://localhost"
	}
	u, err := url.Parse(signer.Link(id, action, s.now()))
	if err != nil || u.Path == "" {
		return ""
	}
	return s.prefix + weblink.Path(id, action) + "?" + u.RawQuery
}
