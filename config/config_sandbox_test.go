package config

import (
	"strings"
	"testing"
	"time"
)

const sandboxBase = `[daemon]
secret_env = "AICR_TEST_SECRET"

[agent]
timeout = "4m"

[[repo]]
name = "main"
kind = "svn"
url = "file:///srv/svn/main"
`

func TestSandboxAbsentMeansNone(t *testing.T) {
	cfg, err := Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(sandboxBase))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Sandbox.Kind != "none" || cfg.Sandbox.Network != "none" {
		t.Errorf("absent [sandbox]: %+v", cfg.Sandbox)
	}
}

func TestSandboxPodmanDecodedAndDefaulted(t *testing.T) {
	cfg, err := Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(sandboxBase+`
[sandbox]
kind = "podman"
network = "llm-only"

[sandbox.podman]
runtime = "runc"
memory = "2g"
containers_conf = "containers.conf"
extra_args = ["--security-opt", "label=disable"]
`))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Sandbox.Podman
	if cfg.Sandbox.Kind != "podman" || cfg.Sandbox.Network != "llm-only" || p.Runtime != "runc" || p.Memory != "2g" || p.Binary != "podman" || p.PidsLimit != 256 || len(p.ExtraArgs) != 2 {
		t.Errorf("decoded %+v", cfg.Sandbox)
	}
	if p.Timeout != 4*time.Minute {
		t.Errorf("timeout should default to the agent's 4m, got %s", p.Timeout)
	}
	if p.ContainersConf != "/etc/aicr/containers.conf" {
		t.Errorf("containers_conf not resolved against the config's dir: %s", p.ContainersConf)
	}
}

// A [sandbox] table is validated at file:line under the key at fault, and
// one that forgets kind never falls back to running agents natively.
func TestSandboxErrorsNameKeyAndLine(t *testing.T) {
	_, err := Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(sandboxBase+`
[sandbox]
network = "internet"

[sandbox.podman]
memory = "lots"
pids_limit = 2
`))
	if err == nil {
		t.Fatal("bad [sandbox] accepted")
	}
	for _, want := range []string{
		"aicr.toml:12: sandbox.kind: missing",
		`aicr.toml:13: sandbox.network: unknown network "internet"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "sandbox.podman.memory") {
		t.Errorf("podman keys are checked only for kind podman:\n%v", err)
	}
	_, err = Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(sandboxBase+`
[sandbox]
kind = "podman"

[sandbox.podman]
memory = "lots"
pids_limit = 2
`))
	for _, want := range []string{"aicr.toml:16: sandbox.podman.memory: must be a size", "aicr.toml:17: sandbox.podman.pids_limit: must be at least 8"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
