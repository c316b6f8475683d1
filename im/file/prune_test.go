package file

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Prune drops the lines sent before the cutoff and keeps the rest, lines
// it cannot date, and the file's mode.
func TestPruneDropsOldLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reports.jsonl")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 6 {
		at := t0.Add(time.Duration(i) * 24 * time.Hour)
		if _, err := New("archive", path, func() time.Time { return at }).Send(context.Background(), message(int64(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("not json\n")
	f.Close()
	if err := os.Chmod(path, 0o604); err != nil {
		t.Fatal(err)
	}

	n, err := Prune(path, t0.Add(3*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("pruned %d lines, want 3", n)
	}
	data, _ := os.ReadFile(path)
	recs := 0
	for _, rec := range splitLines(data) {
		if rec == "not json" {
			continue
		}
		recs++
	}
	if recs != 3 || !containsLine(data, "not json") {
		t.Errorf("after prune: %d records and the undatable line kept = %v:\n%s", recs, containsLine(data, "not json"), data)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o604 {
		t.Errorf("mode after prune: %v %v", st.Mode(), err)
	}
	if n, err := Prune(path, t0.Add(3*24*time.Hour)); err != nil || n != 0 {
		t.Errorf("second prune: %d, %v", n, err)
	}
	if n, err := Prune(filepath.Join(t.TempDir(), "absent"), t0); err != nil || n != 0 {
		t.Errorf("missing file: %d, %v", n, err)
	}
}

// Reports appended while Prune rewrites the file are never lost: Send
// waits for the file's lock and appends to the file that stays.
func TestPruneLosesNoConcurrentLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reports.jsonl")
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 200 {
		if _, err := New("archive", path, func() time.Time { return old }).Send(context.Background(), message(int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	recent := New("archive", path, func() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) })
	var sent atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if _, err := recent.Send(context.Background(), message(int64(1000+w*100+i))); err != nil {
					t.Error(err)
					return
				}
				sent.Add(1)
			}
		}()
	}
	pruned := 0
	for range 20 {
		n, err := Prune(path, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		pruned += n
	}
	wg.Wait()
	if pruned != 200 {
		t.Errorf("pruned %d old lines, want 200", pruned)
	}
	data, _ := os.ReadFile(path)
	if got := len(splitLines(data)); int64(got) != sent.Load() {
		t.Fatalf("%d lines in the file, %d sent: Prune lost appended lines", got, sent.Load())
	}
}

func splitLines(data []byte) []string {
	var out []string
	start := 0
	for i, b := range data {
		if b == '\n' {
			out = append(out, string(data[start:i]))
			start = i + 1
		}
	}
	return out
}

func containsLine(data []byte, line string) bool {
	for _, l := range splitLines(data) {
		if l == line {
			return true
		}
	}
	return false
}
