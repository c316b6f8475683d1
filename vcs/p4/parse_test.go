package p4

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fixtures = "../../../shared/fixtures/p4"

func readFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		tb.Skipf("capture not available: %v", err)
	}
	return b
}

func TestDecodeMarshalCaptures(t *testing.T) {
	recs, err := DecodeMarshal(bytes.NewReader(readFixture(t, "marshal/changes-l.bin")))
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	if r := recs[0]; r.Get("change") != "3" || r.Get("desc") != "Multi line change description\nSecond line\nThird line\n" ||
		r.Keys[0] != "code" || r.Keys[len(r.Keys)-1] != "desc" {
		t.Errorf("record 0: %+v", r)
	}
	recs, err = DecodeMarshal(bytes.NewReader(readFixture(t, "marshal/job_failed.bin")))
	if err != nil || len(recs) != 2 || recs[0].Code() != "error" || recs[0].Get("severity") != "3" || recs[0].Get("generic") != "34" {
		t.Errorf("job_failed: %+v %v", recs, err)
	}
	recs, _ = DecodeMarshal(bytes.NewReader(readFixture(t, "marshal/protects.bin")))
	if !recs[2].Has("unmap") || recs[2].Get("unmap") != "" {
		t.Errorf("empty value: %+v", recs[2])
	}
	recs, _ = DecodeMarshal(bytes.NewReader(readFixture(t, "marshal/info.bin")))
	if recs[0].Get("serverVersion") != "P4D/MACOSX1010X86_64/2019.1/1796703 (2019/04/30)" {
		t.Errorf("info: %+v", recs[0])
	}
	b := readFixture(t, "marshal/changes.bin")
	if _, err := DecodeMarshal(bytes.NewReader(b[:len(b)-3])); err == nil {
		t.Error("truncated input accepted")
	}
}

func TestParseZtagCaptures(t *testing.T) {
	recs, _ := ParseZtag(readFixture(t, "ztag/p4_describe__new_record_at_change_key.ztag"))
	if len(recs) < 2 || recs[0].Get("change") != "450282" || recs[1].Get("change") != "313170" {
		t.Fatalf("describe: %d records", len(recs))
	}
	if !strings.HasSuffix(recs[0].Get("desc"), "rm\n") || recs[0].Get("depotFile2") == "" || recs[0].Get("oldChange") != "464434" {
		t.Errorf("describe record: desc %q", recs[0].Get("desc"))
	}
	recs, _ = ParseZtag(readFixture(t, "ztag/annotate_output.ztag"))
	if recs[0].Get("depotFile") == "" || recs[1].Get("lower") != "337527" || recs[1].Get("data") != "//-----------------------------------------------------------------------------\n" {
		t.Errorf("annotate: %+v / %q", recs[0], recs[1].Get("data"))
	}
	recs, _ = ParseZtag(readFixture(t, "ztag/multi_line_desc.ztag"))
	if len(recs) != 1 || strings.Count(recs[0].Get("desc1"), "\n") != 4 {
		t.Errorf("multi-line: %q", recs[0].Get("desc1"))
	}
	recs, _ = ParseZtag(readFixture(t, "ztag/boolean_keys.ztag"))
	if !recs[0].Has("ourLock") || recs[0].Get("ourLock") != "" {
		t.Errorf("boolean key: %+v", recs[0].Keys)
	}
	recs, _ = ParseZtag(readFixture(t, "ztag/trailing_blank_line.ztag"))
	if len(recs) != 3 || recs[2].Get("action") != "abandoned" {
		t.Errorf("trailing blank: %d records", len(recs))
	}
	recs, msgs := ParseZtag(readFixture(t, "ztag/ztag_header2.ztag"))
	if len(recs) != 1 || len(msgs) != 2 {
		t.Errorf("header: %d records %d messages", len(recs), len(msgs))
	}
	recs, msgs = ParseZtag(readFixture(t, "ztag/no_valid_record.ztag"))
	if len(recs) != 0 || len(msgs) != 1 {
		t.Errorf("no record: %v %v", recs, msgs)
	}
	recs, _ = ParseZtag(readFixture(t, "ztag/consecutive_records_same_fields.ztag"))
	if len(recs) != 2 || recs[1].Get("mno") != "456.789" {
		t.Errorf("consecutive: %+v", recs)
	}
	recs, _ = ParseZtag(readFixture(t, "ztag/p4_filelog_long_desc.ztag"))
	found := false
	for _, r := range recs {
		for _, k := range r.Keys {
			if strings.HasPrefix(k, "desc") && strings.Contains(r.Get(k), "\n\nLlkr") {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("filelog: a description continued after a blank line was cut (%d records)", len(recs))
	}
}

func TestEscapeRoundTrip(t *testing.T) {
	for real, esc := range map[string]string{
		"//depot/a@b.txt": "//depot/a%40b.txt", "//depot/c#d": "//depot/c%23d",
		"//depot/e*f": "//depot/e%2Af", "//depot/100%.txt": "//depot/100%25.txt",
		"//depot/with space": "//depot/with space", "//depot/%41": "//depot/%2541",
	} {
		if got := EscapePath(real); got != esc {
			t.Errorf("escape %q = %q, want %q", real, got, esc)
		}
		if got := UnescapePath(esc); got != real {
			t.Errorf("unescape %q = %q, want %q", esc, got, real)
		}
	}
}

func TestParseDescribeDiff(t *testing.T) {
	// The published example from the fixtures' README, plus a content
	// line that looks like a section header.
	out := "Change 3224912 by automation@ws on 2022/11/22 00:40:20\n\n\tcommit 0724c61762f8\n\nAffected files ...\n\n" +
		"... //depot/fw/kasan.h#1 add\n... //depot/fw/pgalloc.h#2 edit\n\nDifferences ...\n\n" +
		"==== //depot/fw/pgalloc.h#2 (text) ====\n\n@@ -27,2 +27,3 @@\n #define _PAGE_KERNEL_TABLE\t(...)\n+==== //x#1 (text) ====\n \n\n"
	h, err := parseDescribeDiff([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || !strings.Contains(string(h["//depot/fw/pgalloc.h"]), "+==== //x#1") {
		t.Errorf("%q", h)
	}
	if _, err := parseDescribeDiff([]byte("Differences ...\n\n==== //a#2 (text) ====\n\n@@ -1,3 +1,3 @@\n x\n")); err == nil {
		t.Error("truncated hunk accepted")
	}
}

func FuzzParseZtag(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtures, "ztag", "*.ztag"))
	for _, n := range files {
		if b, err := os.ReadFile(n); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, _ := ParseZtag(b)
		for _, r := range recs {
			if len(r.Keys) != len(r.Values) {
				t.Fatalf("keys %d values %d", len(r.Keys), len(r.Values))
			}
		}
	})
}

func FuzzEscapePath(f *testing.F) {
	for _, s := range []string{"//depot/a@b#c*d%e", "%25%40", "//depot/ünï cödé", "%2", "%%%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := UnescapePath(EscapePath(s)); got != s {
			t.Fatalf("round trip %q -> %q", s, got)
		}
		if strings.ContainsAny(EscapePath(s), "@#*") {
			t.Fatalf("reserved character left in %q", EscapePath(s))
		}
	})
}
