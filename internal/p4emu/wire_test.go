package p4emu

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/aicr-dev/aicr/vcs/p4"
)

func FuzzMarshalRoundTrip(f *testing.F) {
	for _, n := range []string{"changes.bin", "changes-l.bin", "info.bin", "job_failed.bin", "protects.bin", "change-o.bin"} {
		if b, err := os.ReadFile(filepath.Join("../../../shared/fixtures/p4", "marshal", n)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := p4.DecodeMarshal(bytes.NewReader(b))
		if err != nil {
			return
		}
		// Whatever decodes must re-encode to a stream that decodes the same.
		var out []byte
		for _, r := range recs {
			out = AppendMarshal(out, r)
		}
		again, err := p4.DecodeMarshal(bytes.NewReader(out))
		if err != nil || len(again) != len(recs) {
			t.Fatalf("re-decode: %v, %d vs %d", err, len(again), len(recs))
		}
	})
}
