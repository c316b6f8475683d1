package config

import (
	"strings"
	"testing"
)

const budgetBase = `[daemon]
secret_env = "X"
[[repo]]
name = "main"
kind = "svn"
url = "file:///x"
[agent]
kind = "llm"
[agent.llm]
api = "openai-chat"
base_url = "http://127.0.0.1:1/v1"
model = "big"
api_key_env = "K"
price_per_mtok_in = 1.0
price_per_mtok_out = 10.0
`

func TestBudgetTablesAreDecoded(t *testing.T) {
	cfg, err := Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(budgetBase+`
[[budget]]
name = "daily"
period = "day"
max_cost_usd = 5.0
action = "builtin-only"
warn_at = 0.8

[[budget]]
name = "main-month"
repos = ["main"]
period = "month"
max_input_tokens = 1000000
action = "fallback"
fallback_model = "small"
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Budgets) != 2 {
		t.Fatalf("budgets = %+v", cfg.Budgets)
	}
	b := cfg.Budgets[1]
	if b.Name != "main-month" || b.Period != BudgetMonth || b.MaxInputTokens != 1000000 || b.FallbackModel != "small" || !b.Covers("main") || b.Covers("docs") {
		t.Errorf("budget = %+v", b)
	}
	if !cfg.Budgets[0].Covers("anything") || cfg.Budgets[0].WarnAt != 0.8 {
		t.Errorf("a budget without repos covers every repo: %+v", cfg.Budgets[0])
	}
}

// Every mistake is reported at its line with its remedy, all in one error.
func TestBudgetMistakesAreLocated(t *testing.T) {
	_, err := Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(budgetBase+`
[[budget]]
name = "daily"
repos = ["mian"]
period = "week"
max_cost_usd = 5.0
action = "fallback"

[[budget]]
name = "daily"
max_cost_usd = -1.0
action = "skip"
fallback_model = "small"

[[budget]]
name = "none"
period = "day"
action = "stop"
warn_at = 1.5

[[budget]]
name = "same"
period = "month"
max_input_tokens = 10
action = "fallback"
fallback_model = "big"
`))
	if err == nil {
		t.Fatal("a bad [[budget]] was accepted")
	}
	for _, want := range []string{
		`aicr.toml:19: budget[0].repos: names repo "mian", which no [[repo]] defines (repos: main)`,
		`aicr.toml:20: budget[0].period: must be "day" or "month", got "week"`,
		`aicr.toml:17: budget[0].fallback_model: missing; action = "fallback" needs the model`,
		`aicr.toml:25: budget[1].name: duplicate budget name "daily"`,
		`budget[1].period: missing; set period = "day" or "month"`,
		`aicr.toml:26: budget[1].max_cost_usd: must not be negative, got -1`,
		`aicr.toml:28: budget[1].fallback_model: is used only with action = "fallback"`,
		`budget[2]: has no limit; set max_cost_usd (USD) or max_input_tokens, or both`,
		`aicr.toml:33: budget[2].action: must be "builtin-only", "skip" or "fallback", got "stop"`,
		`aicr.toml:34: budget[2].warn_at: must be a fraction between 0 and 1`,
		`aicr.toml:41: budget[3].fallback_model: "big" is [agent.llm] model itself`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

// A cost limit without prices could never run out, and a budget on the
// builtin agent limits nothing: both are refused with what to do.
func TestBudgetNeedsPricesAndAModel(t *testing.T) {
	noPrices := strings.Replace(strings.Replace(budgetBase, "price_per_mtok_in = 1.0\n", "", 1), "price_per_mtok_out = 10.0\n", "", 1)
	_, err := Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(noPrices+`
[[budget]]
name = "daily"
period = "day"
max_cost_usd = 5.0
action = "skip"
`))
	if err == nil || !strings.Contains(err.Error(), "budget[0].max_cost_usd: needs the model's prices to measure spend: set [agent.llm] price_per_mtok_in") {
		t.Errorf("err = %v", err)
	}
	// The token limit needs no price.
	if _, err := Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(noPrices+`
[[budget]]
name = "daily"
period = "day"
max_input_tokens = 5000000
action = "skip"
`)); err != nil {
		t.Errorf("token budget without prices: %v", err)
	}
	_, err = Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(digestBase+`
[[budget]]
name = "daily"
period = "day"
max_input_tokens = 5
action = "skip"
`))
	if err == nil || !strings.Contains(err.Error(), `budget[0]: limits model reviews, but [agent] kind = "builtin" uses no model`) {
		t.Errorf("err = %v", err)
	}
}
