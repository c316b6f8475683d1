package sandboxed

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aicr-dev/aicr/agent/llm"
)

// The model error a pass failed with in the container comes back to the
// host as the same sentinel: a refused key must fail the run at once, not
// be retried as an unknown exit.
func TestPassErrorClassCrossesTheSandbox(t *testing.T) {
	for _, sentinel := range []error{llm.ErrAuth, llm.ErrBadRequest, llm.ErrContextOverflow, llm.ErrTransient} {
		class := classOf(fmt.Errorf("model turn 1: %w", sentinel))
		if got := sentinelOf(class); !errors.Is(got, sentinel) {
			t.Errorf("%v: class %q comes back as %v", sentinel, class, got)
		}
	}
	if classOf(errors.New("disk full")) != "" || sentinelOf("made-up") != nil {
		t.Errorf("an unclassified error got a class")
	}
}
