package wecom

import (
	"testing"

	"github.com/aicr-dev/aicr/im/internal/imtest"
)

func BenchmarkRender300(b *testing.B) {
	msg := imtest.BigMessage(300)
	for b.Loop() {
		if _, err := Render(msg, 0); err != nil {
			b.Fatal(err)
		}
	}
}
