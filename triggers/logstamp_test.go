package triggers

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestStampLogPrefixesLinesInAFileOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify.log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	w := StampLog(f)
	fmt.Fprint(w, "aicr notify: first ")
	fmt.Fprint(w, "line\naicr notify: second line\n")
	fmt.Fprintln(w, "aicr notify: third")
	f.Close()
	got, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ aicr notify: `)
	if len(lines) != 3 {
		t.Fatalf("want 3 lines, got %q", got)
	}
	for _, l := range lines {
		if !stamp.MatchString(l) {
			t.Errorf("line %q has no UTC time prefix", l)
		}
		if ts, err := time.Parse(time.RFC3339, strings.Fields(l)[0]); err != nil || time.Since(ts) > time.Hour {
			t.Errorf("line %q: stamp %v, %v", l, ts, err)
		}
	}
	if !strings.Contains(lines[0], "aicr notify: first line") {
		t.Errorf("a line written in two parts was stamped twice or split: %q", lines[0])
	}

	var buf bytes.Buffer
	if StampLog(&buf) != &buf {
		t.Error("a buffer (not a file) was wrapped")
	}
	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer pw.Close()
	if StampLog(pw) != pw {
		t.Error("a pipe was wrapped: p4d and people read those lines unchanged")
	}
}
