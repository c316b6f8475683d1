package imtest

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/aicr-dev/aicr/im"
)

// update is the -update flag of every channel test binary (they all
// import imtest): it rewrites testdata/*.golden.
var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// Updating reports whether the test run was asked to rewrite goldens.
func Updating() bool { return *update }

// Golden compares got with testdata/<name> of the package under test,
// rewriting it first under -update.
func Golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from golden:\n%s", path, got)
	}
}

// Answer is one platform answer and how a channel must classify it; a
// zero Reason means delivered. It is an unnamed struct type so that
// tables of answers can be written positionally.
type Answer = struct {
	Name      string
	Status    int
	Body      string
	Reason    im.Reason
	Retryable bool
}

// CheckClassify runs classify over answers.
func CheckClassify(t *testing.T, classify func(int, http.Header, []byte) *im.SendError, answers []Answer) {
	t.Helper()
	for _, a := range answers {
		t.Run(a.Name, func(t *testing.T) {
			se := classify(a.Status, http.Header{}, []byte(a.Body))
			if a.Reason == "" {
				if se != nil {
					t.Fatalf("Classify = %v, want success", se)
				}
				return
			}
			if se == nil || se.Reason != a.Reason || se.Retryable != a.Retryable {
				t.Fatalf("Classify = %+v, want %s retryable=%v", se, a.Reason, a.Retryable)
			}
		})
	}
}

// CheckPlatformLimit sends n reports through ch to a stand-in whose
// clock stands still (n is the platform's count for its window), then
// one more: the stand-in refuses it with the platform's code, which the
// channel must report as retryable rate limiting.
func CheckPlatformLimit(t *testing.T, ch im.Channel, n int, code string) {
	t.Helper()
	for i := range n {
		if _, err := ch.Send(context.Background(), EmptyMessage()); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	_, err := ch.Send(context.Background(), EmptyMessage())
	var se *im.SendError
	if !errors.As(err, &se) || se.Reason != im.ReasonRateLimited || !se.Retryable || se.PlatformCode != code {
		t.Fatalf("send %d within the platform's window: %v", n+1, err)
	}
}
