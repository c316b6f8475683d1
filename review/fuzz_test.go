package review_test

import (
	"encoding/json"
	"testing"

	"github.com/aicr-dev/aicr/review"
)

var fallbackKinds = map[review.FallbackKind]bool{
	review.FallbackToolCalls: true, review.FallbackLGTM: true,
	review.FallbackNoReviewableCode: true, review.FallbackUnparsable: true,
}

var toolCodes = map[string]bool{
	review.CodeInvalidInput: true, review.CodeLineNotInDiff: true, review.CodeFileNotInChange: true,
	review.CodePathOutOfScope: true, review.CodeLimitExceeded: true,
}

// FuzzParseAgentOutput: whatever an agent prints, the parser returns a
// well-formed result, and applying it never records anything the
// validator would refuse. Seeds: testdata/fuzz/FuzzParseAgentOutput.
func FuzzParseAgentOutput(f *testing.F) {
	fx := newFixture(f)
	v := review.NewValidator(fx.change, fx.srcDir, review.Limits{})
	f.Fuzz(func(t *testing.T, text string) {
		res := review.ParseAgentOutput(text)
		if !fallbackKinds[res.Kind] {
			t.Fatalf("kind %q", res.Kind)
		}
		switch res.Kind {
		case review.FallbackUnparsable:
			if res.Reason == "" || len(res.Calls) != 0 {
				t.Fatalf("unparsable result %+v", res)
			}
		case review.FallbackLGTM, review.FallbackNoReviewableCode:
			if len(res.Calls) != 1 || res.Calls[0].Name != review.ToolSkip {
				t.Fatalf("skip result %+v", res)
			}
		}
		for _, c := range res.Calls {
			if !json.Valid(c.Arguments) {
				t.Fatalf("call %s arguments %q are not JSON", c.Name, c.Arguments)
			}
		}
		st := review.NewState()
		out := review.ApplyCalls(v, st, res.Calls)
		if len(out) != len(res.Calls) {
			t.Fatalf("%d outcomes for %d calls", len(out), len(res.Calls))
		}
		for _, p := range st.Problems {
			if _, terr := v.Problem(p, nil); terr != nil {
				t.Fatalf("recorded an invalid problem %+v: %v", p, terr)
			}
		}
		checkSaves(t, st)
	})
}

// FuzzDecodeToolInput drives the tool-input decoder and the validators
// behind it with arbitrary argument bytes for any tool name: a call is
// either recorded or refused with a complete envelope, never both, never a
// panic, and the state stays saveable. Seeds: testdata/fuzz/FuzzDecodeToolInput.
func FuzzDecodeToolInput(f *testing.F) {
	fx := newFixture(f)
	v := review.NewValidator(fx.change, fx.srcDir, review.Limits{MaxProblems: 2, MaxContextRequests: 2, MaxAttributionRequests: 2, MaxSummaries: 2})
	f.Fuzz(func(t *testing.T, name string, raw []byte) {
		st := review.NewState()
		// Twice: the second call meets the first one's item (duplicates,
		// limits) as a real pass would.
		for i := 0; i < 2; i++ {
			before := len(st.Rejected)
			items := len(st.Problems) + len(st.Summaries) + len(st.ContextRequests) + len(st.AttributionRequests)
			out := review.ApplyCalls(v, st, []review.ToolCall{{Name: name, Arguments: raw}})
			if len(out) != 1 {
				t.Fatalf("%d outcomes", len(out))
			}
			o := out[0]
			if o.Err != nil {
				if !toolCodes[o.Err.Code] || o.Err.Message == "" || o.Err.Remedy == "" {
					t.Fatalf("incomplete envelope %+v", o.Err)
				}
				if len(st.Rejected) != before+1 || st.Rejected[before].ToolError != *o.Err {
					t.Fatalf("refusal not recorded: %+v", st.Rejected)
				}
				if after := len(st.Problems) + len(st.Summaries) + len(st.ContextRequests) + len(st.AttributionRequests); after != items {
					t.Fatalf("refused call recorded an item")
				}
			} else {
				if o.Text == "" || len(st.Rejected) != before {
					t.Fatalf("accepted call: text %q, rejections %d", o.Text, len(st.Rejected))
				}
				if _, ok := review.CanonicalToolName(name); !ok {
					t.Fatalf("unknown tool %q accepted", name)
				}
			}
		}
		for _, p := range st.Problems {
			if _, terr := v.Problem(p, nil); terr != nil {
				t.Fatalf("recorded an invalid problem %+v: %v", p, terr)
			}
		}
		checkSaves(t, st)
	})
}

// checkSaves: the state, with whatever arguments were stored, encodes
// and decodes as the state file would (in memory: fsync per input would
// starve the fuzzer).
func checkSaves(t *testing.T, st *review.State) {
	t.Helper()
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatalf("encode state: %v", err)
	}
	var got review.State
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("decode state: %v", err)
	}
	if len(got.Problems) != len(st.Problems) || len(got.Rejected) != len(st.Rejected) {
		t.Fatalf("round trip lost items")
	}
}
