package review_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

func TestStateRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), review.StateFileName)
	want := review.NewState()
	want.Problems = append(want.Problems, review.Problem{File: "a.go", Line: 3, Severity: review.SeverityLow, Category: "style", Message: "m", Fingerprint: "fp"})
	want.Summaries = append(want.Summaries, review.Summary{Title: "t", Markdown: "# md"})
	want.Skip = &review.Skip{Reason: "lgtm"}
	want.ContextRequests = append(want.ContextRequests, review.ContextRequest{Path: "b.go", Range: &vcs.LineRange{Start: 1, End: 2}, Reason: "r"})
	want.AttributionRequests = append(want.AttributionRequests, review.AttributionRequest{Path: "c.go", Reason: "r"})
	want.Rejected = append(want.Rejected, review.Rejection{Tool: "aicr.skip", Arguments: []byte(`{"reason":""}`),
		ToolError: review.ToolError{Code: review.CodeInvalidInput, Message: "m", Remedy: "r"}})
	want.RejectedTotal = 3

	if err := review.SaveState(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := review.LoadState(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("roundtrip mismatch:\n got %+v\nwant %+v", got, want)
	}
}

func TestSaveStateWritesEmptyArrays(t *testing.T) {
	path := filepath.Join(t.TempDir(), review.StateFileName)
	if err := review.SaveState(path, &review.State{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, key := range []string{"problems", "summaries", "contextRequests", "attributionRequests", "rejected"} {
		if !strings.Contains(text, `"`+key+`":[]`) {
			t.Errorf("%s not written as []: %s", key, text)
		}
	}
	if !strings.Contains(text, `"version":1`) || !strings.Contains(text, `"skip":null`) {
		t.Errorf("unexpected file: %s", text)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, %v", fi.Mode(), err)
	}
}

func TestLoadStateErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, review.StateFileName)

	_, err := review.LoadState(path)
	if !errors.Is(err, review.ErrNoState) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	for name, content := range map[string]string{
		"empty": "",
		"torn":  `{"version":1,"problems":[{"file":"a`,
	} {
		writeFile(t, path, content)
		if _, err := review.LoadState(path); !errors.Is(err, review.ErrCorruptState) {
			t.Errorf("%s: want ErrCorruptState, got %v", name, err)
		}
	}
	writeFile(t, path, `{"version":99}`)
	if _, err := review.LoadState(path); !errors.Is(err, review.ErrStateVersion) {
		t.Errorf("want ErrStateVersion, got %v", err)
	}
}

func TestLeftoverTempFileAndClear(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, review.StateFileName)
	st := review.NewState()
	st.Skip = &review.Skip{Reason: "lgtm"}
	if err := review.SaveState(path, st); err != nil {
		t.Fatal(err)
	}
	// A crash between create and rename leaves a partial temp file behind.
	leftover := path + ".tmp-123456"
	writeFile(t, leftover, `{"version":1,"skip":{"rea`)

	got, err := review.LoadState(path)
	if err != nil || got.Skip == nil || got.Skip.Reason != "lgtm" {
		t.Fatalf("load with leftover temp: %+v %v", got, err)
	}
	if err := review.SaveState(path, review.NewState()); err != nil {
		t.Fatalf("save with leftover temp: %v", err)
	}

	if err := review.ClearState(path); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, leftover} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s survived ClearState: %v", p, err)
		}
	}
	if err := review.ClearState(path); err != nil {
		t.Errorf("clearing again: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("dir not empty: %v", entries)
	}
}
