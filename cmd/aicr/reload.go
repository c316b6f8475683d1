package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/triggers"
)

// ReloadOptions are the inputs of `aicr reload`.
type ReloadOptions struct {
	Factory *Factory
	URL     string
	Format  string
}

func newCmdReload(f *Factory, runF func(context.Context, *ReloadOptions) error) *cobra.Command {
	opts := &ReloadOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "reload",
		Short: "Make the running daemon re-read its config file",
		Long: `Make the running daemon re-read its config file, like SIGHUP, and print what
it did. The daemon checks the file first (parse, validation, secrets, every
channel and repo built); a bad file keeps the running config, and aicr reload
prints the reason and exits 1. Repos, channels, policy, the agent and workers
change live; [daemon] listen and data_dir are listed as needing a restart.

The request is signed with the daemon's operator secret, <data_dir>/admin-secret,
which the daemon creates at start readable only by its user (the hook's
trigger secret cannot reload), so run it as root or as the daemon's user
(runuser -u aicr -- aicr reload). It goes to the daemon's [daemon] listen
address on this host unless --url names another.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return reloadRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	addFormatFlag(cmd, &opts.Format)
	cmd.Flags().StringVar(&opts.URL, "url", "", "the daemon's base URL (default: http:// and [daemon] listen, on loopback when it listens on all addresses)")
	return cmd
}

func reloadRun(ctx context.Context, opts *ReloadOptions) error {
	cfg, err := config.Load(opts.Factory.ConfigPath)
	if errors.Is(err, config.ErrNotFound) {
		return asUsage(err)
	}
	if err != nil {
		// The daemon would refuse this file for the same reason; it is
		// not asked, and keeps its running config.
		return printReload(opts, daemon.ReloadResult{Status: "refused", ConfigPath: opts.Factory.ConfigPath,
			Error: err.Error() + " (not sent to the daemon)"})
	}
	secret, err := daemon.ReadAdminSecret(cfg.Daemon.DataDir)
	if err != nil {
		return fmt.Errorf("the reload request is signed with the daemon's operator secret, %s, which the daemon creates at start "+
			"readable only by its user: run aicr reload as root or as that user (runuser -u aicr -- aicr reload), or send SIGHUP (systemctl reload aicr): %w",
			daemon.AdminSecretPath(cfg.Daemon.DataDir), err)
	}
	base := opts.URL
	if base == "" {
		base = localDaemonURL(cfg.Daemon.Listen)
	}
	// The nonce makes two reloads within a second two requests, not a
	// replay of one.
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	body, _ := json.Marshal(map[string]any{"v": triggers.ProtocolVersion, "action": "reload", "nonce": hex.EncodeToString(nonce)})
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+daemon.ReloadPath, bytes.NewReader(body))
	if err != nil {
		return usageErrorf("--url %q: %v", base, err)
	}
	ts := opts.Factory.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(triggers.HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(triggers.HeaderSignature, triggers.Sign(secret, ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("no answer from the daemon at %s: %w (is it running? aicr reload talks to [daemon] listen; use --url for another address)", base, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var res daemon.ReloadResult
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("the daemon at %s refused the reload (%s): it is signed with the operator secret in %s, "+
			"and the daemon there has another one (another data_dir, or another host: use --url only for a daemon sharing this data_dir); reload with SIGHUP (systemctl reload aicr)",
			base, resp.Status, daemon.AdminSecretPath(cfg.Daemon.DataDir))
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnprocessableEntity {
		var eb triggers.ErrorBody
		if json.Unmarshal(raw, &eb) == nil && eb.Error != "" {
			return fmt.Errorf("the daemon at %s refused the reload (%s): %s", base, resp.Status, eb.Error)
		}
		return fmt.Errorf("the daemon at %s answered %s: %s", base, resp.Status, strings.TrimSpace(string(raw)))
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("the daemon at %s answered %s with %q: %w", base, resp.Status, raw, err)
	}
	return printReload(opts, res)
}

// printReload prints what the reload came to; a refusal exits 1.
func printReload(opts *ReloadOptions, res daemon.ReloadResult) error {
	werr := newExporter(opts.Factory.IOStreams, opts.Format).Write(res, func(w io.Writer) error {
		if res.Status != "reloaded" {
			_, err := fmt.Fprintf(w, "reload refused; the daemon keeps running with its current config:\n%s\n", res.Error)
			return err
		}
		fmt.Fprintf(w, "reloaded %s (sha256 %s, aicr %s)\n", res.ConfigPath, short(res.ConfigDigest), res.Version)
		for _, wmsg := range res.Warnings {
			fmt.Fprintf(w, "warning: %s\n", wmsg)
		}
		for _, k := range res.RestartNeeded {
			fmt.Fprintf(w, "restart needed: %s changed; the daemon keeps the old value until it restarts\n", k)
		}
		return nil
	})
	if werr != nil {
		return werr
	}
	if res.Status != "reloaded" {
		return errSilentFailure
	}
	return nil
}

// localDaemonURL is the daemon's base URL on this host: a listen address
// on all interfaces is reached on loopback.
func localDaemonURL(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "http://" + listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

func short(digest string) string {
	// The digest is "sha256:HEX"; the text already says sha256.
	digest = strings.TrimPrefix(digest, "sha256:")
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}
