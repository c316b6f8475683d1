package daemon

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/triggers"
)

// postSignedReload posts a reload request signed with secret, as aicr
// reload does.
func postSignedReload(t *testing.T, addr string, secret []byte) (int, string) {
	t.Helper()
	body := []byte(`{"v":1,"action":"reload","nonce":"` + strconv.FormatInt(time.Now().UnixNano(), 16) + `"}`)
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+ReloadPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Now().Unix()
	req.Header.Set(triggers.HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(triggers.HeaderSignature, triggers.Sign(secret, ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// Issue 22 B7: the trigger secret, which the hook's account (svn, p4d)
// holds, could reload the daemon. Reload is the operator's: it takes the
// operator secret the daemon keeps in data_dir, readable only by its
// user; the hook's secret gets 403 with what to do instead.
func TestReloadRefusesTheHooksSecret(t *testing.T) {
	cfg, _ := newSVNConfig(t)
	d := startDaemon(t, cfg)

	status, body := postSignedReload(t, d.addr, testSecret)
	var eb triggers.ErrorBody
	_ = json.Unmarshal([]byte(body), &eb)
	if status != http.StatusForbidden || eb.Code != "not_operator" || !strings.Contains(eb.Error, "runuser") && !strings.Contains(eb.Error, "root") {
		t.Fatalf("reload signed with the trigger secret: %d %s; want 403 not_operator saying who may reload", status, body)
	}
	if status, body := postSignedReload(t, d.addr, []byte("a guess of a secret, any secret")); status != http.StatusUnauthorized {
		t.Fatalf("reload with a wrong secret: %d %s, want 401", status, body)
	}

	path := filepath.Join(cfg.Daemon.DataDir, "admin-secret")
	st, err := os.Lstat(path)
	if err != nil || st.Mode().Perm() != 0o600 || !st.Mode().IsRegular() {
		t.Fatalf("operator secret %s: %v, %v; want a regular file, 0600", path, st, err)
	}
	admin, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if status, body := postSignedReload(t, d.addr, bytes.TrimSpace(admin)); status != http.StatusOK || !strings.Contains(body, `"reloaded"`) {
		t.Fatalf("reload signed with the operator secret: %d %s, want 200 reloaded", status, body)
	}
}
