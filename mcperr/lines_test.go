package mcperr

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestLimitLinesPassesLinesUpToTheLimit(t *testing.T) {
	in := strings.Repeat("a", 10) + "\n" + strings.Repeat("b", 9) + "\n" + "tail"
	got, err := io.ReadAll(LimitLines(strings.NewReader(in), 10))
	if err != nil || string(got) != in {
		t.Fatalf("got %q, %v", got, err)
	}
	r := bufio.NewReader(LimitLines(strings.NewReader(strings.Repeat("c", 11)+"\n"), 10))
	if _, err := r.ReadString('\n'); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err %v, want ErrLineTooLong", err)
	}
}
