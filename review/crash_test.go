package review_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aicr-dev/aicr/review"
)

// A server killed with SIGKILL while calls are in flight leaves a state
// file LoadState reads, holding at least every call it had answered.
// The kill point moves from round to round; it is chosen by counting
// answers, not by timing, so the test behaves the same on a loaded machine.
func TestServerKilledMidStream(t *testing.T) {
	const rounds, callsPerRound = 12, 80
	for round := 0; round < rounds; round++ {
		answered := killMidStream(t, callsPerRound, 1+(round*17)%(callsPerRound-10))
		t.Logf("round %d: killed after %d answers", round, answered)
	}
}

func killMidStream(t *testing.T, calls, killAfter int) int {
	t.Helper()
	f := newFixture(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), serveEnv+"=1",
		"AICR_TEST_STATE="+f.statePath, "AICR_TEST_CHANGE="+f.changePath,
		"AICR_TEST_MAX_PROBLEMS=1000")
	cmd.Stderr = io.Discard
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
		}
		cmd.Wait()
	}()

	// Every request is written up front, so when the kill lands the
	// server is in the middle of a stream of calls, some mid-write.
	var reqs strings.Builder
	write := func(v any) {
		b, _ := json.Marshal(v)
		reqs.Write(b)
		reqs.WriteByte('\n')
	}
	write(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "crash-test", "version": "1"}}})
	write(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	anchors := []int{2, 3, 5, 6, 7, 8, 9, 11, 12, 17, 20, 23}
	for i := 1; i <= calls; i++ {
		args := map[string]any{"file": "app/main.go", "line": anchors[i%len(anchors)], "severity": "low",
			"category": fmt.Sprintf("c%d", i), "message": strings.Repeat("m", 1+i*37%2000)}
		if i%5 == 0 {
			args["line"] = 15 // off the diff: rejected, also written
		}
		write(map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call",
			"params": map[string]any{"name": "aicr.report_problem", "arguments": args}})
	}
	go func() {
		io.WriteString(stdin, reqs.String())
	}()

	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	answered := 0
	for answered < killAfter && sc.Scan() {
		var msg struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			t.Fatalf("server wrote %q: %v", sc.Text(), err)
		}
		if msg.ID != nil && *msg.ID > 0 && msg.Result != nil {
			answered++
		}
	}
	if answered < killAfter {
		t.Fatalf("server stopped after %d answers: %v", answered, sc.Err())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = true
	cmd.Wait()

	st, err := review.LoadState(f.statePath)
	if err != nil {
		entries, _ := os.ReadDir(filepath.Dir(f.statePath))
		t.Fatalf("after SIGKILL with %d answers: %v (dir: %v)", answered, err, entries)
	}
	if got := len(st.Problems) + len(st.Rejected); got < answered {
		t.Fatalf("state holds %d calls, but %d were answered", got, answered)
	}
	// Whatever temp file the kill left behind, clearing the pass removes it.
	if err := review.ClearState(f.statePath); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(f.statePath)); len(entries) != 0 {
		t.Fatalf("ClearState left %v", entries)
	}
	return answered
}
