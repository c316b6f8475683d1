package triggers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeRaw puts a file in the spool as someone other than aicr notify
// might.
func writeRaw(t *testing.T, s Spool, name string, body []byte) {
	t.Helper()
	must(t, os.MkdirAll(s.Dir, 0o770))
	must(t, os.WriteFile(filepath.Join(s.Dir, name), body, 0o640))
}

func signedEnvelope(t *testing.T, secret []byte, ts int64, ev Event) []byte {
	t.Helper()
	body, err := json.Marshal(ev)
	must(t, err)
	out, err := json.Marshal(spoolEnvelope{Timestamp: ts, Signature: Sign(secret, ts, body), Event: body})
	must(t, err)
	return out
}

func assertRejected(t *testing.T, s Spool, name, wantReason string) {
	t.Helper()
	_, _, err := s.Read(name)
	var rf *RejectedFileError
	if !errors.As(err, &rf) || !errors.Is(err, ErrCorruptSpoolFile) {
		t.Fatalf("Read(%s) = %v, want a RejectedFileError", name, err)
	}
	if !strings.Contains(rf.Reason, wantReason) {
		t.Fatalf("reason %q, want it to say %q", rf.Reason, wantReason)
	}
	reason, err := os.ReadFile(filepath.Join(s.Dir, RejectedDir, name+".reason"))
	if err != nil || !strings.Contains(string(reason), wantReason) {
		t.Fatalf("rejected/%s.reason = %q, %v", name, reason, err)
	}
	if names, _ := s.List(); len(names) != 0 {
		t.Fatalf("refused file still in the spool: %v", names)
	}
}

func TestSpoolVerifiesSignatureButNotAge(t *testing.T) {
	s := Spool{Dir: t.TempDir(), Secret: testSecret}
	// Spooled five hours ago, when the daemon was down: still good.
	old := time.Now().Add(-5 * time.Hour).Unix()
	writeRaw(t, s, "00000000000000000001-main-7.json", signedEnvelope(t, testSecret, old, testEvent("7")))
	ev, at, err := s.Read("00000000000000000001-main-7.json")
	if err != nil || ev.Revision != "7" || at.Unix() != old {
		t.Fatalf("Read of an old signed file = %+v, %v, %v; want revision 7 spooled at %d", ev, at, err, old)
	}
	// What Write produces round-trips and is signed.
	name, err := s.Write(testEvent("8"))
	must(t, err)
	raw, err := os.ReadFile(s.Path(name))
	must(t, err)
	if !bytes.Contains(raw, []byte(`"signature":"sha256=`)) {
		t.Fatalf("spool file is not signed: %s", raw)
	}
	if ev, _, err := s.Read(name); err != nil || ev.Revision != "8" {
		t.Fatalf("Read of written file = %+v, %v", ev, err)
	}
}

func TestSpoolRefusesUnsignedForgedAndOversizedFiles(t *testing.T) {
	legacy, _ := json.Marshal(testEvent("1"))
	tampered := signedEnvelope(t, testSecret, time.Now().Unix(), testEvent("2"))
	tampered = bytes.Replace(tampered, []byte(`"revision":"2"`), []byte(`"revision":"3"`), 1)
	huge := append([]byte(`{"timestamp":1,"event":{"v":1,"repo":"main","revision":"4","user":"`), bytes.Repeat([]byte("x"), 300<<10)...)
	huge = append(huge, []byte(`"}}`)...)
	cases := []struct {
		name, reason string
		body         []byte
	}{
		{"unsigned legacy event", "unsigned", legacy},
		{"unsigned envelope", "unsigned", mustJSON(t, spoolEnvelope{Timestamp: 1, Event: legacy})},
		{"other secret", "signature does not match", signedEnvelope(t, []byte("someone-else"), time.Now().Unix(), testEvent("5"))},
		{"tampered event", "signature does not match", tampered},
		{"oversized", "over the", huge},
		{"not json", "invalid JSON", []byte("{")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Spool{Dir: t.TempDir(), Secret: testSecret}
			writeRaw(t, s, "00000000000000000001-main-1.json", tc.body)
			assertRejected(t, s, "00000000000000000001-main-1.json", tc.reason)
		})
	}
}

func TestSpoolReadWithoutSecretLeavesFile(t *testing.T) {
	s := Spool{Dir: t.TempDir(), Secret: testSecret}
	name, err := s.Write(testEvent("1"))
	must(t, err)
	if _, _, err := (Spool{Dir: s.Dir}).Read(name); !errors.Is(err, ErrNoSecret) {
		t.Fatalf("Read without secret = %v, want ErrNoSecret", err)
	}
	if names, _ := s.List(); len(names) != 1 {
		t.Fatalf("file moved although nothing could be verified: %v", names)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return b
}

// A hook run as root must leave files the daemon (the spool dir's owner or
// group) can read.
func TestSpoolFilesBelongToTheSpoolDirOwnerAndGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to write as another user; the mode is checked in TestSpoolFileMode")
	}
	const daemonUID, daemonGID = 54321, 54322
	parent := t.TempDir()
	must(t, os.Chown(parent, daemonUID, daemonGID))
	must(t, os.Chmod(parent, 0o770))
	s := Spool{Dir: filepath.Join(parent, "spool"), Secret: testSecret} // created by the hook
	name, err := s.Write(testEvent("1"))
	must(t, err)
	for _, p := range []string{s.Dir, s.Path(name)} {
		st, err := os.Stat(p)
		must(t, err)
		sys := st.Sys().(*syscall.Stat_t)
		if sys.Uid != daemonUID || sys.Gid != daemonGID {
			t.Fatalf("%s owned by %d:%d, want the spool's %d:%d", p, sys.Uid, sys.Gid, daemonUID, daemonGID)
		}
	}
	must(t, s.Reject(name, "test"))
	for _, p := range []string{filepath.Join(s.Dir, RejectedDir), filepath.Join(s.Dir, RejectedDir, name), filepath.Join(s.Dir, RejectedDir, name+".reason")} {
		st, err := os.Stat(p)
		must(t, err)
		if sys := st.Sys().(*syscall.Stat_t); sys.Uid != daemonUID || sys.Gid != daemonGID {
			t.Fatalf("%s owned by %d:%d, want %d:%d", p, sys.Uid, sys.Gid, daemonUID, daemonGID)
		}
	}
}

func TestSpoolFileMode(t *testing.T) {
	s := Spool{Dir: filepath.Join(t.TempDir(), "spool"), Secret: testSecret}
	name, err := s.Write(testEvent("1"))
	must(t, err)
	st, err := os.Stat(s.Path(name))
	must(t, err)
	if st.Mode().Perm() != 0o640 {
		t.Fatalf("spool file mode %v, want 0640 (group-readable, private to others)", st.Mode().Perm())
	}
	dir, err := os.Stat(s.Dir)
	must(t, err)
	if dir.Mode()&os.ModeSetgid == 0 || dir.Mode().Perm() != 0o770 {
		t.Fatalf("spool dir mode %v, want setgid 0770 so files keep the dir's group", dir.Mode())
	}
	if fs, ds := st.Sys().(*syscall.Stat_t), dir.Sys().(*syscall.Stat_t); fs.Gid != ds.Gid {
		t.Fatalf("spool file group %d, want the dir's %d", fs.Gid, ds.Gid)
	}
}

func TestCanonicalRevision(t *testing.T) {
	for in, want := range map[string]string{"1": "1", "+1": "1", "01": "1", "000042": "42", "9223372036854775807": "9223372036854775807"} {
		if got, err := CanonicalRevision(in); err != nil || got != want {
			t.Errorf("CanonicalRevision(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "00", "-1", "+", "++1", " 1", "1 ", "1e3", "0x10", "HEAD", "9223372036854775808", "١"} {
		if got, err := CanonicalRevision(in); err == nil || !strings.Contains(err.Error(), in) {
			t.Errorf("CanonicalRevision(%q) = %q, %v; want an error naming it", in, got, err)
		}
	}
}

func TestNotifyResendKeepsUnknownRepoEventsUntilTheWindowCloses(t *testing.T) {
	d := newFakeDaemon(t, func(ev Event) (int, any) {
		if ev.Repo == "newrepo" {
			return 422, ErrorBody{Error: `the running daemon does not know repo "newrepo": reload it`, Code: CodeUnknownRepo}
		}
		return 202, Accepted{EventID: 1}
	})
	spool := Spool{Dir: t.TempDir(), Secret: testSecret}
	ev := testEvent("11")
	ev.Repo = "newrepo"
	// Spooled two hours ago: inside the default window, outside 1h.
	kept := "00000000000000000001-newrepo-11.json"
	writeRaw(t, spool, kept, signedEnvelope(t, testSecret, time.Now().Add(-2*time.Hour).Unix(), ev))
	spoolOlder(t, spool, "12")
	var stderr bytes.Buffer
	out := Notify(context.Background(), clientConfig(d.srv.URL, spool.Dir), Event{VCS: "svn", Repo: "main", Revision: "13"}, &stderr)
	if out.Resent != 1 || out.Rejected != 0 {
		t.Fatalf("Outcome %+v, want r12 re-sent past the unknown repo's event and nothing rejected", out)
	}
	if names, _ := spool.List(); len(names) != 1 || names[0] != kept {
		t.Fatalf("spool %v, want the unknown repo's event kept for retry", names)
	}
	if !strings.Contains(stderr.String(), "reload") {
		t.Fatalf("stderr %q does not say to reload the daemon", stderr.String())
	}
	// Once the window has passed, it is moved aside for an operator.
	cfg := clientConfig(d.srv.URL, spool.Dir)
	cfg.UnknownRepoRetry = time.Hour
	// The re-send may fall in the same second as the first one, which the
	// fake's replay guard would flag (see TestDeliverClassifiesStatus/409).
	d.guard = ReplayGuard{}
	out = Notify(context.Background(), cfg, Event{VCS: "svn", Repo: "main", Revision: "14"}, &stderr)
	if out.Rejected != 1 {
		t.Fatalf("Outcome %+v, want the stale unknown-repo event rejected", out)
	}
	if _, err := os.Stat(filepath.Join(spool.Dir, RejectedDir, kept+".reason")); err != nil {
		t.Fatal(err)
	}
}
