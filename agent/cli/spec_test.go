package cli_test

import (
	"testing"

	"github.com/Masterminds/semver/v3"

	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/llm"
)

// Every adapter's Spec is complete: an exact pinned version at or above
// its proven minimum, a program, an API aicr's config accepts, and the
// manifest's capability matrix filled in, model metadata included.
func TestEverySpecIsComplete(t *testing.T) {
	valid := map[string]bool{"injected": true, "delegated": true, "not_applicable": true}
	kinds := cli.Kinds()
	if len(kinds) != 6 {
		t.Fatalf("kinds = %v, want the six CLIs", kinds)
	}
	for _, kind := range kinds {
		a, _ := cli.Lookup(kind)
		s := a.Spec()
		if s.Kind != kind || s.Package == "" || s.Bin == "" || s.Limits == "" {
			t.Errorf("%s: incomplete spec %+v", kind, s)
		}
		v, err := semver.StrictNewVersion(s.Version)
		if err != nil {
			t.Errorf("%s: pinned version %q: %v", kind, s.Version, err)
			continue
		}
		if m := semver.MustParse(s.MinVersion); v.LessThan(m) {
			t.Errorf("%s: pinned %s below its minimum %s", kind, s.Version, s.MinVersion)
		}
		for _, api := range s.APIs {
			if err := (llm.Config{API: api, Model: "m"}).Validate(); err != nil {
				t.Errorf("%s: API %q: %v", kind, api, err)
			}
		}
		c := s.Capabilities
		if !c.MCP || !c.IsolatedHome || !valid[c.ModelConfig] || !valid[c.ContextCompaction] {
			t.Errorf("%s: capabilities %+v", kind, c)
		}
		for _, key := range []string{"context_window", "max_output_tokens", "prices"} {
			if !valid[c.ModelMetadata[key]] {
				t.Errorf("%s: model_metadata[%s] = %q", kind, key, c.ModelMetadata[key])
			}
		}
	}
}
