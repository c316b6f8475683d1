package review

// The stdout fallback and the prose verdicts are the documented contract
// (docs/agent-contract.md, "The stdout fallback") for a pass that leaves
// no state file: agent CLIs whose MCP server never started, models served
// without a tool-call parser that print <tool_call> blocks, and the
// prose-only answers normalized to a skip. The review ladder applies
// ParseAgentOutput to a pass's last text (agent.Ladder); the llm loop
// reads tool calls from text with TextToolCalls and CallArguments.

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// FallbackKind says what ParseAgentOutput made of an agent's output.
type FallbackKind string

const (
	// FallbackToolCalls: the output held tool calls (Calls; may be empty
	// when the agent wrote an explicit empty list).
	FallbackToolCalls FallbackKind = "tool_calls"
	// FallbackLGTM: prose that only says there is nothing to report;
	// Calls holds the equivalent aicr.skip {"reason":"lgtm"}.
	FallbackLGTM FallbackKind = "lgtm"
	// FallbackNoReviewableCode: prose that only says there was nothing to
	// review; Calls holds aicr.skip {"reason":"no_reviewable_code"}.
	FallbackNoReviewableCode FallbackKind = "no_reviewable_code"
	// FallbackUnparsable: anything else. Nothing may be published from
	// it; Reason says why, for the run record.
	FallbackUnparsable FallbackKind = "unparsable"
)

// Skip reasons the fallback produces.
const (
	SkipReasonLGTM             = "lgtm"
	SkipReasonNoReviewableCode = "no_reviewable_code"
)

// FallbackResult is what ParseAgentOutput recovered. Apply Calls with
// ApplyCalls; they have not been validated.
type FallbackResult struct {
	Kind  FallbackKind `json:"kind"`
	Calls []ToolCall   `json:"calls"`
	// Reason explains an unparsable result, or which parts of a
	// tool_calls result could not be read.
	Reason string `json:"reason,omitempty"`
}

// maxFallbackScan bounds how many candidate JSON objects are tried, so a
// pathological output cannot make parsing quadratic without limit.
const maxFallbackScan = 256

// ParseAgentOutput recovers tool calls from what an agent printed, for
// agents that could not reach the MCP server (the orchestrator uses it
// only when the pass left no state file). It understands, after removing
// <think>…</think> blocks:
//
//   - {"toolCalls":[{"name":"aicr.report_problem","arguments":{…}}, …]},
//     bare or in a ``` fence, with prose around it ("tool_calls" too);
//   - <tool_call name="aicr.report_problem">{…arguments…}</tool_call>;
//   - <tool_call>{"name":"…","arguments":{…}}</tool_call>.
//
// Arguments given as a JSON string holding an object (OpenAI style) are
// unwrapped. Names are returned as CanonicalToolName maps them, or as
// written when they are not aicr tools (ApplyCalls refuses those).
//
// Output with no tool calls is classified conservatively: it becomes a
// skip only when, once the recognised "nothing to report" or "nothing to
// review" phrases are removed, nothing but filler words and punctuation is
// left. Anything else, including "no issues found, but line 3 leaks a
// key", is FallbackUnparsable.
func ParseAgentOutput(text string) FallbackResult {
	text = stripThink(text)
	calls, found, problem := extractToolCalls(text)
	if len(calls) > 0 || (found && problem == "") {
		if calls == nil {
			calls = []ToolCall{}
		}
		// The readable calls stand on their own (each is validated); what
		// could not be read is reported, not guessed at.
		return FallbackResult{Kind: FallbackToolCalls, Calls: calls, Reason: problem}
	}
	if found {
		return FallbackResult{Kind: FallbackUnparsable, Calls: []ToolCall{}, Reason: problem}
	}
	return classifyProse(text)
}

var (
	thinkBlock = regexp.MustCompile(`(?is)<think(?:ing)?>.*?</think(?:ing)?>`)
	thinkOpen  = regexp.MustCompile(`(?i)<think(?:ing)?>`)
	thinkClose = regexp.MustCompile(`(?i)</think(?:ing)?>`)
)

// stripThink removes reasoning blocks. Some chat templates put the opening
// tag in the prompt, so a closing tag without an opening one drops what
// precedes it; an unclosed opening tag drops the rest (the model never got
// to its answer).
func stripThink(text string) string {
	text = thinkBlock.ReplaceAllString(text, "")
	if loc := thinkClose.FindStringIndex(text); loc != nil {
		if open := thinkOpen.FindStringIndex(text); open == nil || open[0] > loc[0] {
			text = text[loc[1]:]
		}
	}
	if loc := thinkOpen.FindStringIndex(text); loc != nil {
		text = text[:loc[0]]
	}
	return text
}

var (
	toolCallBlock = regexp.MustCompile(`(?is)<tool_call\b([^>]*)>(.*?)</tool_call\s*>`)
	toolCallAttr  = regexp.MustCompile(`(?is)\bname\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))`)
	toolCallsKey  = regexp.MustCompile(`(?i)"tool_?calls"\s*:`)
	toolCallTag   = regexp.MustCompile(`(?i)<tool_call\b`)
	fenceLine     = regexp.MustCompile("(?m)^\\s*```[A-Za-z0-9_-]*\\s*$")
)

type positioned struct {
	pos   int
	calls []ToolCall
}

// extractToolCalls returns the calls in text in order of appearance. found
// says whether text tried to make tool calls at all; problem, when set,
// says why some of that could not be read.
func extractToolCalls(text string) (calls []ToolCall, found bool, problem string) {
	var parts []positioned
	var problems []string
	masked := []byte(text)

	for _, m := range toolCallBlock.FindAllStringSubmatchIndex(text, -1) {
		found = true
		attrs, body := text[m[2]:m[3]], text[m[4]:m[5]]
		c, err := parseToolCallBlock(attrs, body)
		if err != "" {
			problems = append(problems, err)
		} else {
			parts = append(parts, positioned{m[0], []ToolCall{c}})
		}
		// The block's JSON must not be read a second time as a bare object.
		for i := m[0]; i < m[1]; i++ {
			masked[i] = ' '
		}
	}
	if toolCallTag.Match(masked) {
		found = true
		problems = append(problems, "unterminated <tool_call> block")
	}

	end := 0
	tries := 0
	for _, m := range toolCallsKey.FindAllIndex(masked, -1) {
		if m[0] < end {
			continue // inside an object already read
		}
		found = true
		ok := false
		// The key usually opens its object; look back over a few braces
		// for the one whose object contains it.
		for j, seen := m[0]-1, 0; j >= end && seen < 8 && tries < maxFallbackScan; j-- {
			if masked[j] != '{' {
				continue
			}
			seen++
			tries++
			cs, objEnd, perr := decodeToolCallsObject(masked[j:])
			if objEnd == 0 || j+objEnd <= m[0] {
				continue
			}
			if perr != "" {
				problems = append(problems, perr)
			} else {
				parts = append(parts, positioned{j, cs})
			}
			end = j + objEnd
			ok = true
			break
		}
		if !ok {
			problems = append(problems, "a toolCalls object is not valid JSON")
		}
	}

	sort.SliceStable(parts, func(i, k int) bool { return parts[i].pos < parts[k].pos })
	for _, p := range parts {
		calls = append(calls, p.calls...)
	}
	if len(problems) > 0 {
		problem = joinProblems(problems)
	}
	return calls, found, problem
}

// decodeToolCallsObject decodes the JSON object at the start of b. end is
// 0 when b does not start with a complete object.
func decodeToolCallsObject(b []byte) (calls []ToolCall, end int, problem string) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		return nil, 0, ""
	}
	end = int(dec.InputOffset())
	var list json.RawMessage
	for k, v := range obj {
		if strings.EqualFold(k, "toolCalls") || strings.EqualFold(k, "tool_calls") {
			list = v
		}
	}
	if list == nil {
		return nil, 0, "" // the key belonged to a nested object
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(list, &raw); err != nil {
		return nil, end, "toolCalls is not a list"
	}
	calls = []ToolCall{}
	for i, r := range raw {
		c, perr := decodeCallObject(r)
		if perr != "" {
			return nil, end, "toolCalls[" + strconv.Itoa(i) + "]: " + perr
		}
		calls = append(calls, c)
	}
	return calls, end, ""
}

// decodeCallObject reads {"name":…, "arguments":…}, also accepting the
// spellings agent CLIs use for the arguments.
func decodeCallObject(r json.RawMessage) (ToolCall, string) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(r, &obj); err != nil {
		return ToolCall{}, "not an object"
	}
	var name string
	if err := json.Unmarshal(obj["name"], &name); err != nil || strings.TrimSpace(name) == "" {
		return ToolCall{}, "no tool name"
	}
	var args json.RawMessage
	for _, k := range []string{"arguments", "args", "input", "parameters"} {
		if v, ok := obj[k]; ok {
			args = v
			break
		}
	}
	return makeCall(name, args), ""
}

func parseToolCallBlock(attrs, body string) (ToolCall, string) {
	body = strings.TrimSpace(fenceLine.ReplaceAllString(body, ""))
	if m := toolCallAttr.FindStringSubmatch(attrs); m != nil {
		name := m[1] + m[2] + m[3]
		if body == "" {
			body = "{}"
		}
		if !json.Valid([]byte(body)) {
			return ToolCall{}, "<tool_call name=" + strings.TrimSpace(name) + "> arguments are not valid JSON"
		}
		return makeCall(name, json.RawMessage(body)), ""
	}
	if !json.Valid([]byte(body)) {
		return ToolCall{}, "<tool_call> body is not valid JSON"
	}
	c, perr := decodeCallObject(json.RawMessage(body))
	if perr != "" {
		return ToolCall{}, "<tool_call>: " + perr
	}
	return c, ""
}

func makeCall(name string, args json.RawMessage) ToolCall {
	if canonical, ok := CanonicalToolName(name); ok {
		name = canonical
	} else {
		name = strings.TrimSpace(name)
	}
	if a, ok := CallArguments(args); ok {
		args = a
	} else {
		args = json.RawMessage(bytes.TrimSpace(args))
	}
	return ToolCall{Name: name, Arguments: append(json.RawMessage(nil), args...)}
}

// CallArguments reads a tool call's arguments in the forms models send
// them: a JSON object, a JSON string holding one (OpenAI style), either
// wrapped in a Markdown code fence (```json … ```), or nothing at all
// (no arguments, {}). ok is false when what is left is not a JSON object;
// the caller refuses the call rather than guess.
func CallArguments(raw json.RawMessage) (json.RawMessage, bool) {
	b := bytes.TrimSpace(raw)
	for range 2 { // a string, then its fence, or a fenced string
		var s string
		if len(b) > 0 && b[0] == '"' && json.Unmarshal(b, &s) == nil {
			b = bytes.TrimSpace([]byte(s))
		}
		b = unfence(b)
	}
	if len(b) == 0 || string(b) == "null" {
		return json.RawMessage("{}"), true
	}
	if b[0] != '{' || !json.Valid(b) {
		return nil, false
	}
	return json.RawMessage(b), true
}

// unfence removes one Markdown code fence around b, if b is exactly one.
func unfence(b []byte) []byte {
	if !bytes.HasPrefix(b, []byte("```")) || !bytes.HasSuffix(b, []byte("```")) || len(b) < 6 {
		return b
	}
	inner := b[3 : len(b)-3]
	// The info string ("json") runs to the end of the opening line.
	if nl := bytes.IndexByte(inner, '\n'); nl >= 0 && !bytes.ContainsAny(bytes.TrimSpace(inner[:nl]), "{[\"") {
		inner = inner[nl+1:]
	}
	return bytes.TrimSpace(inner)
}

// TextToolCalls reads the <tool_call> blocks (Hermes and Qwen style,
// written by a model whose server has no tool-call parser) out of a
// model's answer text, ignoring reasoning blocks. prose is the text
// without them; problem, when set, says what could not be read. The tool
// loop of a model client uses it to execute such calls in the turn they
// arrive instead of after a wasted repair pass.
func TextToolCalls(text string) (calls []ToolCall, prose string, problem string) {
	if !toolCallTag.MatchString(text) {
		return nil, text, ""
	}
	t := stripThink(text)
	var problems []string
	for _, m := range toolCallBlock.FindAllStringSubmatch(t, -1) {
		c, err := parseToolCallBlock(m[1], m[2])
		if err != "" {
			problems = append(problems, err)
			continue
		}
		calls = append(calls, c)
	}
	prose = strings.TrimSpace(toolCallBlock.ReplaceAllString(t, ""))
	if toolCallTag.MatchString(prose) {
		problems = append(problems, "unterminated <tool_call> block")
	}
	if len(problems) > 0 {
		problem = joinProblems(problems)
	}
	return calls, prose, problem
}

// joinProblems lists distinct problems, a few at most: the reason goes
// into the run record, not a transcript of a runaway output.
func joinProblems(problems []string) string {
	const max = 5
	seen := map[string]bool{}
	var out []string
	for _, p := range problems {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if len(out) > max {
		out = append(out[:max], "and "+strconv.Itoa(len(out)-max)+" more")
	}
	return strings.Join(out, "; ")
}

// Phrases of prose-only answers. Each is matched against the normalized
// text (lower case, Markdown marks removed, ’ as ', single spaces).
var (
	noReviewablePhrases = regexp.MustCompile(`\bno (reviewable|reviewable source) (code|changes?|files?|content)\b|` +
		`\bnothing (reviewable|to review)\b|` +
		`\bno (source )?code (changes? )?to review\b|` +
		`\b(contains|has|there are|changes?|touches|includes) only (binary|generated|deleted|vendored)( or (binary|generated|deleted|vendored))* files\b|` +
		`\bonly (binary|generated|deleted|vendored)( or (binary|generated|deleted|vendored))* files\b|` +
		`\bonly (deletions|file deletions|binary changes)\b|` +
		`没有可(审查|审核|评审|检查)的(代码|内容|文件|变更)|没有需要(审查|审核|评审)的(代码|内容|文件|变更)|无可(审查|审核|评审)的(代码|内容|文件|变更)|` +
		`(只|仅)(有|包含|包括|涉及)?(二进制|生成的?|删除的?)文件`)
	lgtmPhrases = regexp.MustCompile(`\blgtm\b|` +
		`\blooks? (good|fine|great|ok|okay|correct|clean)( to me)?\b|` +
		`\bno (actionable |significant |obvious |major |real |apparent )?(issues?|problems?|bugs?|findings?|concerns?|defects?)( (were|was|have been|has been))?( (found|detected|identified|spotted|to report))?\b|` +
		`\b(found|detected|identified|spotted|see) no (actionable |significant |obvious |major )?(issues?|problems?|bugs?|findings?|concerns?|defects?)\b|` +
		`\b(did not|didn't|could not|couldn't|do not|don't) (find|detect|identify|spot|see) any (actionable |significant |obvious |major )?(issues?|problems?|bugs?|findings?|concerns?|defects?)\b|` +
		`\bnothing (actionable|worth reporting|to report|to flag|to comment on)\b|` +
		`(未|没有|没)发现(任何)?(明显的?)?(问题|缺陷|bug|错误)|代码没有问题|没有(任何)?问题|没问题|无问题|` +
		`看起来(不错|很好|没问题|没有问题)|一切正常`)
	// Words that may stand next to those phrases without changing their
	// meaning. "but", "not", numbers, file names and every other word are
	// absent on purpose: they turn the text into something to read.
	fillerWords = toSet(`the a an this that these those change changes changeset changelist commit revision code diff patch ` +
		`review reviewed reviewing i i've ive i have has had we it it's its is are was were be been there here overall ` +
		`all everything ok okay fine good great nice clean so far and also in with of for to me my from on after ` +
		`thanks thank you seems seem appears to be looks look correct contains contain only job work done well`)
	fillerHan = []string{"整体", "总体", "本次", "这次", "此次", "该", "这个", "此", "提交", "变更", "修改", "改动", "代码",
		"经过", "审查", "审核", "评审", "检查", "后", "的", "了", "我", "已经", "已", "在", "中", "里", "都", "均", "以上", "啊", "呢", "吧"}
	markdownMarks = strings.NewReplacer("*", " ", "_", " ", "`", " ", "#", " ", ">", " ", "~", " ", "’", "'", "‘", "'")
)

func toSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

func classifyProse(text string) FallbackResult {
	norm := strings.Join(strings.Fields(strings.ToLower(markdownMarks.Replace(text))), " ")
	if norm == "" {
		return FallbackResult{Kind: FallbackUnparsable, Calls: []ToolCall{}, Reason: "the agent printed nothing"}
	}
	noReview := noReviewablePhrases.MatchString(norm)
	lgtm := lgtmPhrases.MatchString(norm)
	if !noReview && !lgtm {
		return FallbackResult{Kind: FallbackUnparsable, Calls: []ToolCall{}, Reason: "no tool calls and no recognised verdict in the output"}
	}
	rest := lgtmPhrases.ReplaceAllString(noReviewablePhrases.ReplaceAllString(norm, " "), " ")
	if word := unexplainedWord(rest); word != "" {
		return FallbackResult{Kind: FallbackUnparsable, Calls: []ToolCall{},
			Reason: "prose verdict qualified by other text (" + word + "); not taken as a verdict"}
	}
	reason, kind := SkipReasonLGTM, FallbackLGTM
	if noReview {
		reason, kind = SkipReasonNoReviewableCode, FallbackNoReviewableCode
	}
	args, _ := json.Marshal(map[string]string{"reason": reason})
	return FallbackResult{Kind: kind, Calls: []ToolCall{{Name: ToolSkip, Arguments: args}}}
}

// unexplainedWord returns the first word of rest that is neither filler
// nor punctuation, or "".
func unexplainedWord(rest string) string {
	for _, h := range fillerHan {
		rest = strings.ReplaceAll(rest, h, " ")
	}
	words := strings.FieldsFunc(rest, func(r rune) bool {
		return unicode.IsSpace(r) || (unicode.IsPunct(r) && r != '\'') || unicode.IsSymbol(r)
	})
	for _, w := range words {
		w = strings.Trim(w, "'")
		if w == "" || fillerWords[w] {
			continue
		}
		return w
	}
	return ""
}
