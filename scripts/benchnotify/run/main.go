// Command run is the driver of scripts/bench-notify.sh: it starts each
// hook client the way svn or p4d does (a bare environment, one process per
// commit), times it from start to exit, and prints medians with their ratio
// to the minimal signed client measured in the same rounds. Candidates
// take turns within each round, in a rotating order, so load from other
// processes falls on all of them alike.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"time"
)

type candidate struct {
	label string
	argv  func(rev int) []string
	// detached clients leave a child delivering after they exit; it is
	// given time to finish outside the measurement.
	detached bool
	times    []time.Duration
	// cpu is the process's user+system time: less disturbed by other
	// load on a shared machine than wall time, so it shows whether a
	// wall-time ratio is the client's own cost or the neighbours'.
	cpu []time.Duration
}

func main() {
	n := flag.Int("n", 40, "runs per candidate")
	phase := flag.String("phase", "daemon up", "label of this phase")
	base := flag.Int("rev", 1, "first revision/change number; each run gets a new one")
	minBin := flag.String("min", "", "minimal client binary")
	notifyBin := flag.String("notify", "", "aicr-notify binary")
	aicrBin := flag.String("aicr", "", "aicr binary")
	config := flag.String("config", "", "aicr.toml")
	url := flag.String("url", "", "daemon URL")
	secret := flag.String("secret", "", "secret file")
	minSpool := flag.String("min-spool", "", "the minimal client's spool dir")
	svnRepo := flag.String("svn-repo", "", "SVN repository path")
	svnName := flag.String("svn-name", "", "its [[repo]] name")
	p4Name := flag.String("p4-name", "", "p4 [[repo]] name")
	flag.Parse()

	svn := func(bin string, verb ...string) func(int) []string {
		return func(rev int) []string {
			return append(append([]string{bin}, verb...), "--config", *config, "--repo", *svnName, *svnRepo, strconv.Itoa(rev))
		}
	}
	p4 := func(bin string, extra []string, verb ...string) func(int) []string {
		return func(rev int) []string {
			a := append(append([]string{bin}, verb...), "--config", *config, "--repo", *p4Name, "--change", strconv.Itoa(rev), "--user", "bob")
			return append(a, extra...)
		}
	}
	cands := []*candidate{
		{label: "minimal signed Go client (reference)", argv: func(rev int) []string {
			return []string{*minBin, *url, *secret, *minSpool, "svn", *svnName, strconv.Itoa(rev)}
		}},
		{label: "aicr-notify svn (the hook)", argv: svn(*notifyBin, "svn")},
		{label: "aicr-notify p4 --foreground", argv: p4(*notifyBin, []string{"--foreground"}, "p4")},
		{label: "aicr-notify p4 (trigger, detaches)", argv: p4(*notifyBin, nil, "p4"), detached: true},
		{label: "aicr notify svn", argv: svn(*aicrBin, "notify", "svn")},
		{label: "aicr notify p4 --foreground", argv: p4(*aicrBin, []string{"--foreground"}, "notify", "p4")},
	}
	rev := *base
	for round := 0; round < *n; round++ {
		for i := range cands {
			c := cands[(round+i)%len(cands)]
			argv := c.argv(rev)
			rev++
			cmd := exec.CommandContext(context.Background(), argv[0], argv[1:]...)
			cmd.Env = []string{"LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin"}
			cmd.Dir = "/"
			start := time.Now()
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", c.label, err)
				os.Exit(1)
			}
			c.times = append(c.times, time.Since(start))
			c.cpu = append(c.cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
			if c.detached {
				time.Sleep(150 * time.Millisecond)
			}
		}
	}
	ref, refCPU := median(cands[0].times), median(cands[0].cpu)
	fmt.Printf("\n%s (%d runs each, medians; wall time is what the commit waits for):\n", *phase, *n)
	fmt.Printf("| %-38s | %9s | %9s | %9s | %9s | %9s |\n", "client", "wall ms", "p90 ms", "wall×ref", "CPU ms", "CPU×ref")
	fmt.Printf("|%s|%s|%s|%s|%s|%s|\n", dashes(40), dashes(11), dashes(11), dashes(11), dashes(11), dashes(11))
	for _, c := range cands {
		m, cpu := median(c.times), median(c.cpu)
		fmt.Printf("| %-38s | %9.2f | %9.2f | %8.2f× | %9.2f | %8.2f× |\n", c.label, ms(m), ms(pct(c.times, 0.9)),
			float64(m)/float64(ref), ms(cpu), float64(cpu)/float64(refCPU))
	}
}

func dashes(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = '-'
	}
	return string(b)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(ts []time.Duration) time.Duration { return pct(ts, 0.5) }

func pct(ts []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ts...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p)
	return s[i]
}
