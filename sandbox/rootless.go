package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
)

// Rootless Podman on a cgroup v1 host cannot apply --memory, --pids-limit
// or --cpus: it prints "Resource limits are not supported and ignored on
// cgroups V1 rootless systems" and starts the container without them
// (measured on these machines: a 32m container allocated 256 MiB). The
// runner refuses that setup instead of running an agent unconfined.

// cgroupsChecked caches the host's answer per podman setup: the cgroup
// layout does not change without a reboot, and `podman info` costs a
// process start per run otherwise.
var cgroupsChecked sync.Map // key: binary, runtime, containers_conf → error (nil: fine)

func rootless() bool { return os.Geteuid() != 0 }

// checkRootlessLimits fails with ErrUnavailable when the runner is
// rootless and Podman reports cgroup v1.
func checkRootlessLimits(ctx context.Context, p PodmanConfig) error {
	if !rootless() {
		return nil
	}
	key := p.Binary + "\x00" + p.Runtime + "\x00" + p.ContainersConf
	if v, ok := cgroupsChecked.Load(key); ok {
		err, _ := v.(error)
		return err
	}
	var stdout, stderr bytes.Buffer
	cmd := podmanCommand(ctx, p, "info", "--format", "{{.Host.CgroupsVersion}}")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: podman info: %w: %s", ErrUnavailable, err, strings.TrimSpace(stderr.String()))
	}
	var err error
	if v := strings.TrimSpace(stdout.String()); v == "v1" {
		err = fmt.Errorf("%w: rootless Podman on a cgroup v1 host ignores the memory, pids and CPU limits ([sandbox.podman] memory, pids_limit, cpus), so the agent would run unconfined; boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1, with cgroup delegation for the service user) or run the daemon as root", ErrUnavailable)
	}
	cgroupsChecked.Store(key, err)
	return err
}
