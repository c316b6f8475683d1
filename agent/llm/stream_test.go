package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/review"
)

// streamScript reports two problems and one the review server refuses,
// then publishes a summary: everything a pass can record.
func streamScript() []modelsim.Step {
	report := func(line int, msg string) modelsim.ToolCall {
		return modelsim.ToolCall{Name: "aicr_report_problem", Arguments: fmt.Sprintf(
			`{"file":"svc/config.go","line":%d,"severity":"high","category":"hard-coded-credential","message":%q}`, line, msg)}
	}
	return []modelsim.Step{
		{ToolCalls: []modelsim.ToolCall{report(4, "An AWS access key is committed in source."), report(40, "Past the end.")},
			Text: "Looking at the credentials first.", Usage: modelsim.Usage{Input: 1500, Output: 90}},
		{ToolCalls: []modelsim.ToolCall{report(5, "A production password is committed in source.")}, Usage: modelsim.Usage{Input: 1700, Output: 40}},
		{ToolCalls: []modelsim.ToolCall{{Name: "aicr_publish_summary", Arguments: `{"title":"2 problems","markdown":"Two committed credentials."}`}},
			Usage: modelsim.Usage{Input: 1900, Output: 30}},
	}
}

// [agent.llm] stream = true changes how the answers travel, not what the
// review records: for each API a streamed pass leaves the same problems,
// summary and refusals in the state file, and the same turns and tokens,
// as a non-streamed one, and every request asked for the mode configured.
func TestStreamedReviewRecordsTheSameAsNonStreamed(t *testing.T) {
	for _, api := range llm.APIs {
		t.Run(api, func(t *testing.T) {
			type outcome struct {
				state string
				stats string
			}
			var got [2]outcome
			for i, stream := range []bool{false, true} {
				sim := modelsim.Start(t, streamScript()...)
				a, err := llm.New(llm.Options{Config: llm.Config{API: api, BaseURL: sim.URL, Model: "scripted", Stream: stream}})
				if err != nil {
					t.Fatal(err)
				}
				run := newRun(t)
				stats, err := a.Review(context.Background(), run, firstPass)
				if err != nil {
					t.Fatalf("stream=%v: %v", stream, err)
				}
				if err := sim.Err(); err != nil {
					t.Fatalf("stream=%v: model server: %v", stream, err)
				}
				reqs := sim.Requests()
				if len(reqs) != 3 {
					t.Fatalf("stream=%v: %d requests, want 3", stream, len(reqs))
				}
				for _, r := range reqs {
					if r.Stream != stream {
						t.Fatalf("stream=%v: a request asked for stream=%v", stream, r.Stream)
					}
				}
				st, err := review.LoadState(run.StatePath())
				if err != nil {
					t.Fatal(err)
				}
				if len(st.Problems) != 2 || len(st.Summaries) != 1 || st.RejectedTotal != 1 {
					t.Fatalf("stream=%v: state: %d problems, %d summaries, %d refused", stream, len(st.Problems), len(st.Summaries), st.RejectedTotal)
				}
				js, _ := json.Marshal(struct {
					P any
					S any
					R any
				}{st.Problems, st.Summaries, st.Rejected})
				got[i] = outcome{state: string(js), stats: fmt.Sprintf("turns=%d in=%d out=%d", stats.Turns, stats.InputTokens, stats.OutputTokens)}
			}
			if got[0] != got[1] {
				t.Errorf("streamed review differs:\nplain:    %+v\nstreamed: %+v", got[0], got[1])
			}
			if got[0].stats != "turns=3 in=5100 out=160" {
				t.Errorf("stats: %s", got[0].stats)
			}
		})
	}
}
