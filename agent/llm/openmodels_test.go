package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
)

// simPass runs one pass of the llm agent against sim over the real SDK.
func simPass(t *testing.T, sim *modelsim.Server, stream bool) (rundir.Layout, error) {
	t.Helper()
	a, err := llm.New(llm.Options{Config: llm.Config{API: llm.APIOpenAIChat, BaseURL: sim.URL, Model: "qwen2.5-coder", Stream: stream}})
	if err != nil {
		t.Fatal(err)
	}
	run := newRun(t)
	_, err = a.Review(context.Background(), run, firstPass)
	return run, err
}

func loadState(t testing.TB, run rundir.Layout) *review.State {
	t.Helper()
	st, err := review.LoadState(run.StatePath())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

var (
	reportCall  = modelsim.ToolCall{Name: "aicr_report_problem", Arguments: reportLine5}
	summaryCall = modelsim.ToolCall{Name: "aicr_publish_summary", Arguments: summary}
)

// D13: "choices": [] is a transient turn failure; the turn is asked again
// and the pass goes on. Answers that stay empty fail the pass as
// transient (retried later), never as a refused request.
func TestAnswerWithNoChoicesIsAskedAgain(t *testing.T) {
	for _, stream := range []bool{false, true} {
		sim := modelsim.Start(t,
			modelsim.Step{NoChoices: true},
			modelsim.Step{ToolCalls: []modelsim.ToolCall{reportCall}},
			modelsim.Step{NoChoices: true},
			modelsim.Step{NoChoices: true},
			modelsim.Step{ToolCalls: []modelsim.ToolCall{summaryCall}},
		)
		run, err := simPass(t, sim, stream)
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		if st := loadState(t, run); len(st.Problems) != 1 || len(st.Summaries) != 1 {
			t.Errorf("stream=%v: %d problems, %d summaries", stream, len(st.Problems), len(st.Summaries))
		}
		if err := sim.Err(); err != nil {
			t.Error(err)
		}

		sim = modelsim.Start(t, modelsim.Step{NoChoices: true}, modelsim.Step{NoChoices: true}, modelsim.Step{NoChoices: true})
		_, err = simPass(t, sim, stream)
		if !errors.Is(err, llm.ErrTransient) || !errors.Is(err, llm.ErrEmptyAnswer) || errors.Is(err, llm.ErrBadRequest) {
			t.Errorf("stream=%v: three empty answers: %v, want ErrTransient (ErrEmptyAnswer)", stream, err)
		}
		if n := len(sim.Requests()); n != 3 {
			t.Errorf("stream=%v: %d requests, want 3 (one turn asked three times)", stream, n)
		}
	}
}

// D14: arguments as a JSON object, or as a string holding a fenced
// object, are the call the model meant, in the tool loop too.
func TestFencedAndObjectArgumentsAreAccepted(t *testing.T) {
	fenced := "```json\n" + `{"file":"svc/config.go","line":4,"severity":"high","category":"hard-coded-credential","message":"An AWS access key is committed."}` + "\n```"
	sim := modelsim.Start(t,
		modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "aicr_report_problem", Arguments: fenced}}},
		modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "aicr_report_problem", ObjectArguments: json.RawMessage(reportLine5)}}},
		modelsim.Step{ToolCalls: []modelsim.ToolCall{summaryCall}},
	)
	sim.VLLM(modelsim.VLLMOptions{})
	run, err := simPass(t, sim, false)
	if err != nil {
		t.Fatal(err)
	}
	st := loadState(t, run)
	if len(st.Problems) != 2 || st.RejectedTotal != 0 {
		t.Fatalf("%d problems, %d refused (%+v)", len(st.Problems), st.RejectedTotal, st.Rejected)
	}
	// The history replays the object the call meant, not the fence.
	reqs := sim.Requests()
	if got := reqs[1].Messages[1].ToolCalls[0].Arguments; !json.Valid([]byte(got)) || strings.Contains(got, "```") {
		t.Errorf("history replays %q", got)
	}
	if err := sim.Err(); err != nil {
		t.Error(err)
	}
}

// D15: tool calls a model wrote in its text (no tool-call parser on the
// server) are executed in the turn they arrive: one request, no repair.
func TestToolCallsInTextAreReadInTheirTurn(t *testing.T) {
	text := "<think>The password on line 5 is real.</think>I found one problem.\n<tool_call>\n" +
		`{"name": "aicr_report_problem", "arguments": ` + reportLine5 + "}\n</tool_call>\n" +
		`<tool_call>{"name": "aicr.publish_summary", "arguments": ` + summary + `}</tool_call>`
	sim := modelsim.Start(t, modelsim.Step{Text: text})
	run, err := simPass(t, sim, false)
	if err != nil {
		t.Fatal(err)
	}
	st := loadState(t, run)
	if len(st.Problems) != 1 || st.Problems[0].Line != 5 || len(st.Summaries) != 1 {
		t.Fatalf("%d problems, %d summaries: %+v", len(st.Problems), len(st.Summaries), st)
	}
	if n := len(sim.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// D16: arguments that are not JSON (a call cut by finish_reason "length")
// are refused and replayed as {}, so a server that parses the history, as
// vLLM does, takes the next request.
func TestUnreadableArgumentsAreNotReplayed(t *testing.T) {
	cut := `{"file":"svc/config.go","line":5,"severity":"high","message":"A production pass`
	sim := modelsim.Start(t,
		modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "aicr_report_problem", Arguments: cut}}},
		modelsim.Step{ToolCalls: []modelsim.ToolCall{reportCall}, Check: func(r modelsim.Request) error {
			if got := r.Messages[1].ToolCalls[0].Arguments; got != "{}" {
				return errors.New("history replays " + got)
			}
			if tr := r.Messages[2]; tr.Role != "tool" || !strings.Contains(tr.Text, "INVALID_INPUT") {
				return errors.New("the tool result is not the refusal: " + tr.Text)
			}
			return nil
		}},
		modelsim.Step{ToolCalls: []modelsim.ToolCall{summaryCall}},
	)
	sim.VLLM(modelsim.VLLMOptions{})
	run, err := simPass(t, sim, false)
	if err != nil {
		t.Fatal(err)
	}
	st := loadState(t, run)
	if len(st.Problems) != 1 || st.RejectedTotal != 1 || len(st.Summaries) != 1 {
		t.Fatalf("%d problems, %d refused, %d summaries", len(st.Problems), st.RejectedTotal, len(st.Summaries))
	}
	if err := sim.Err(); err != nil {
		t.Error(err)
	}
}

// modelsim's vLLM refuses a history whose arguments are not JSON with
// vLLM's own body, so the test above can fail.
func TestModelsimVLLMRefusesNonJSONHistoryArguments(t *testing.T) {
	sim := modelsim.Start(t, modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "aicr_report_problem", Arguments: "```json\n{}\n```"}}})
	sim.VLLM(modelsim.VLLMOptions{})
	m, err := llm.NewModel(llm.ModelOptions{API: llm.APIOpenAIChat, BaseURL: sim.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Turn(context.Background(), llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "review"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "aicr_skip", Arguments: json.RawMessage("```json\n{}\n```")}}},
		{Role: llm.RoleTool, ToolResult: &llm.ToolResult{CallID: "call_1", Name: "aicr_skip", Content: "ok"}},
	}})
	if !errors.Is(err, llm.ErrBadRequest) || !strings.Contains(err.Error(), "Expecting value: line 1 column 1 (char 0) None") {
		t.Fatalf("err = %v", err)
	}
}

// D17: a server without tool calling says so, and the remedy says how to
// turn it on for each server, not to check api, base_url and model.
func TestServerWithoutToolCallingNamesTheRemedy(t *testing.T) {
	sim := modelsim.Start(t)
	sim.VLLM(modelsim.VLLMOptions{NoToolParser: true})
	_, err := simPass(t, sim, false)
	if !errors.Is(err, llm.ErrToolsOff) || !errors.Is(err, llm.ErrBadRequest) {
		t.Fatalf("err = %v, want ErrToolsOff", err)
	}
	msg := err.Error()
	for _, want := range []string{`"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`,
		"--enable-auto-tool-choice --tool-call-parser <name>", "Ollama", "--jinja", "no substitute"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "check agent.llm.api") {
		t.Errorf("error still sends the operator to api/base_url/model:\n%s", msg)
	}
}

// C11: an answer of hundreds of MB (streamed or not) is cut at
// MaxResponseBytes with an error naming the limit, and costs memory in
// proportion to the limit, not to the answer.
func TestHugeAnswerIsRefusedAtTheLimit(t *testing.T) {
	for _, stream := range []bool{false, true} {
		sim := modelsim.Start(t, modelsim.Step{Text: "Reviewing.", PadBytes: 300 << 20})
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := simPass(t, sim, stream)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, llm.ErrResponseTooLarge) {
			t.Fatalf("stream=%v: err = %v, want ErrResponseTooLarge", stream, err)
		}
		if !strings.Contains(err.Error(), "32 MiB") {
			t.Errorf("stream=%v: error does not name the limit: %v", stream, err)
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		if alloc > 512<<20 {
			t.Errorf("stream=%v: allocated %d MiB for the answer", stream, alloc>>20)
		}
		t.Logf("stream=%v: a 300 MiB answer cost %d MiB of allocation", stream, alloc>>20)
	}
}
