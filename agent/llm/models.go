package llm

// PLACEHOLDER (h-llmloop): h-modelapi owns this file and replaces it with
// the SDK-backed clients. It exists only so the tool loop and agent.New
// compile before that branch merges; on a merge conflict take theirs.

import (
	"fmt"
	"net/http"
	"time"
)

// ModelOptions configure one provider client.
type ModelOptions struct {
	API, BaseURL, Model, APIKey string
	Headers                     map[string]string
	Timeout                     time.Duration
	HTTPClient                  *http.Client
}

// NewModel returns the client for o.API.
func NewModel(o ModelOptions) (Model, error) {
	return nil, fmt.Errorf("%w: the %s client is not built into this aicr yet", ErrBadRequest, o.API)
}
