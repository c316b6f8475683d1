// Command benchintake drives scripts/bench-intake.sh: it posts signed
// events to a running daemon from 1, 8 and 64 concurrent clients, rounds
// alternating the client counts, and prints the median events/s of each
// against the 5,000 events/s goal, with the daemon's RSS. With -dump it
// instead writes an svn dump of small revisions for the daemon's workers
// to review while the intake is measured.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aicr-dev/aicr/triggers"
)

// goal is issue 14's intake target at 64 clients.
const goal = 5000.0

// options are the command line's flags.
type options struct {
	url, secretFile, repo, clients string
	rounds                         int
	per                            time.Duration
	firstRev, pid                  int
	refURL                         string
	refPID                         int
	refName                        string
	preload, dump                  int
}

func parseOptions() options {
	var o options
	flag.StringVar(&o.url, "url", "", "daemon intake base URL, e.g. http://127.0.0.1:8080")
	flag.StringVar(&o.secretFile, "secret-file", "", "file holding the shared secret")
	flag.StringVar(&o.repo, "repo", "bench", "repo name configured in the daemon")
	flag.StringVar(&o.clients, "clients", "1,8,64", "comma-separated concurrent client counts")
	flag.IntVar(&o.rounds, "rounds", 5, "rounds; each runs every client count once, in turn")
	flag.DurationVar(&o.per, "duration", 2*time.Second, "length of one measurement")
	flag.IntVar(&o.firstRev, "first-rev", 100000, "first revision number to report (each event is a new revision)")
	flag.IntVar(&o.pid, "pid", 0, "daemon pid, to read its RSS from /proc")
	flag.StringVar(&o.refURL, "ref-url", "", "a reference daemon (e.g. an older build) measured in the same rounds, alternating")
	flag.IntVar(&o.refPID, "ref-pid", 0, "the reference daemon's pid")
	flag.StringVar(&o.refName, "ref-name", "reference", "the reference's name in the table")
	flag.IntVar(&o.preload, "preload", 0, "post revisions 1..N once before measuring (work for the workers)")
	flag.IntVar(&o.dump, "dump", 0, "write an svn dump with N one-file revisions to stdout and exit")
	flag.Parse()
	return o
}

func main() {
	o := parseOptions()
	if o.dump > 0 {
		writeDump(os.Stdout, o.dump)
		return
	}
	secret, err := os.ReadFile(o.secretFile)
	if err != nil {
		fail("read secret: %v", err)
	}
	secret = bytes.TrimSpace(secret)
	counts := clientCounts(o.clients)
	maxClients := 0
	for _, n := range counts {
		maxClients = max(maxClients, n)
	}
	newPoster := func(base string) *poster {
		return &poster{
			url: strings.TrimRight(base, "/") + "/v1/events", secret: secret, repo: o.repo,
			http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: maxClients, MaxConnsPerHost: maxClients}},
		}
	}
	posters := []*poster{newPoster(o.url)}
	if o.refURL != "" {
		posters = append(posters, newPoster(o.refURL))
	}
	for _, p := range posters {
		p.preload(o.preload, maxClients)
	}
	posters[0].pid = o.pid
	if len(posters) == 2 {
		posters[1].pid = o.refPID
	}
	idleRSS, _ := rss(o.pid)
	rates, refRates := measureRounds(posters, counts, o)
	_, peak := rss(o.pid)
	printRates(counts, rates, refRates, len(posters) == 2, o.refName)
	printDaemonCost(posters, o, idleRSS, peak)
}

// clientCounts parses -clients.
func clientCounts(list string) []int {
	var counts []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fail("bad -clients entry %q", f)
		}
		counts = append(counts, n)
	}
	return counts
}

// measureRounds runs every client count once a round against the daemon
// and, with -ref-url, the reference: the events/s of each measurement by
// client count.
func measureRounds(posters []*poster, counts []int, o options) (rates, refRates map[int][]float64) {
	p := posters[0]
	next := int64(o.firstRev)
	rates = map[int][]float64{}
	refRates = map[int][]float64{}
	for r := 0; r < o.rounds; r++ {
		for _, n := range counts {
			// Alternate which goes first, so neither always meets the
			// machine in the same state.
			if len(posters) == 2 && r%2 == 1 {
				refRates[n] = append(refRates[n], posters[1].measure(n, o.per, &next))
				rates[n] = append(rates[n], p.measure(n, o.per, &next))
				continue
			}
			rates[n] = append(rates[n], p.measure(n, o.per, &next))
			if len(posters) == 2 {
				refRates[n] = append(refRates[n], posters[1].measure(n, o.per, &next))
			}
		}
	}
	return rates, refRates
}

// printRates is the table of events/s by client count, with the
// reference's and the ratio when there is one.
func printRates(counts []int, rates, refRates map[int][]float64, withRef bool, refName string) {
	fmt.Printf("%-8s %7s %10s %10s %10s", "clients", "rounds", "median/s", "min/s", "max/s")
	if withRef {
		fmt.Printf(" %14s %8s", refName+"/s", "ratio")
	}
	fmt.Println()
	for _, n := range counts {
		v := sorted(rates[n])
		fmt.Printf("%-8d %7d %10.0f %10.0f %10.0f", n, len(v), median(v), v[0], v[len(v)-1])
		if withRef {
			ref := median(sorted(refRates[n]))
			fmt.Printf(" %14.0f %7.2fx", ref, median(v)/ref)
		}
		fmt.Println()
	}
	if v, ok := rates[64]; ok {
		fmt.Printf("64 clients vs goal %.0f events/s: %.2fx\n", goal, median(sorted(v))/goal)
	}
}

// printDaemonCost is what the events cost the daemons: CPU per event,
// memory, and how many events were accepted.
func printDaemonCost(posters []*poster, o options, idleRSS, peak int64) {
	p := posters[0]
	// CPU per event does not depend on what else the machine runs the way
	// events/s does; it includes the daemon's 2 busy workers (not their
	// child processes).
	if o.pid > 0 {
		fmt.Printf("daemon CPU per accepted event: %.0f us", p.cpuPerEvent())
		if len(posters) == 2 && o.refPID > 0 {
			fmt.Printf(", %s %.0f us (%.2fx)", o.refName, posters[1].cpuPerEvent(), p.cpuPerEvent()/posters[1].cpuPerEvent())
		}
		fmt.Println()
	}
	if o.pid > 0 {
		fmt.Printf("daemon RSS: after preload %.1f MB, peak (VmHWM) %.1f MB\n", float64(idleRSS)/1024, float64(peak)/1024)
	}
	if o.refPID > 0 {
		_, refPeak := rss(o.refPID)
		fmt.Printf("%s daemon RSS: peak (VmHWM) %.1f MB\n", o.refName, float64(refPeak)/1024)
	}
	fmt.Printf("accepted events (202): %d\n", p.accepted.Load())
}

func sorted(v []float64) []float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s
}

// preload posts revisions 1..n once (work for the daemon's workers).
func (p *poster) preload(n, clients int) {
	if n > 0 {
		var rev atomic.Int64
		var wg sync.WaitGroup
		for c := 0; c < min(16, clients); c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := rev.Add(1); r <= int64(n); r = rev.Add(1) {
					if err := p.post(context.Background(), strconv.FormatInt(r, 10)); err != nil {
						fail("preload r%d: %v", r, err)
					}
				}
			}()
		}
		wg.Wait()
		p.accepted.Store(0)
	}
}

type poster struct {
	// pid is the daemon's, to charge it the CPU it spends while measured.
	pid      int
	cpuTicks int64
	measured int64
	url      string
	secret   []byte
	repo     string
	http     *http.Client
	accepted atomic.Int64
}

// measure runs n clients posting new revisions for d and returns 202s/s.
func (p *poster) measure(n int, d time.Duration, next *int64) float64 {
	ctx := context.Background()
	var count atomic.Int64
	var wg sync.WaitGroup
	cpu0 := cpuTicks(p.pid)
	start := time.Now()
	deadline := start.Add(d)
	for c := 0; c < n; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				rev := atomic.AddInt64(next, 1)
				if err := p.post(ctx, strconv.FormatInt(rev, 10)); err != nil {
					fail("r%d: %v", rev, err)
				}
				count.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	p.cpuTicks += cpuTicks(p.pid) - cpu0
	p.measured += count.Load()
	return float64(count.Load()) / elapsed.Seconds()
}

func (p *poster) post(ctx context.Context, rev string) error {
	body, err := json.Marshal(triggers.Event{V: triggers.ProtocolVersion, VCS: "svn", Repo: p.repo, Revision: rev, User: "bench", SentAt: time.Now().UTC()})
	if err != nil {
		return err
	}
	ts := time.Now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(triggers.HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(triggers.HeaderSignature, triggers.Sign(p.secret, ts, body))
	resp, err := p.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	p.accepted.Add(1)
	return nil
}

func (p *poster) cpuPerEvent() float64 {
	if p.measured == 0 {
		return 0
	}
	return float64(p.cpuTicks) * 1e6 / clockTicks / float64(p.measured)
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux).
const clockTicks = 100

// cpuTicks is the process's user+system CPU time so far, in clock ticks.
func cpuTicks(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; count from after it.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return utime + stime
}

// rss returns the process's current and peak resident set in KiB.
func rss(pid int) (cur, peak int64) {
	if pid <= 0 {
		return 0, 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			cur = v
		case "VmHWM:":
			peak = v
		}
	}
	return cur, peak
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// writeDump writes an svn dump (format 2) in which revision i adds
// src/fileI.go with a few lines, so every revision is a 1-file review.
func writeDump(w io.Writer, n int) {
	var b bytes.Buffer
	b.WriteString("SVN-fs-dump-format-version: 2\n\n")
	date := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	props := func(kv ...string) string {
		var p strings.Builder
		for i := 0; i < len(kv); i += 2 {
			fmt.Fprintf(&p, "K %d\n%s\nV %d\n%s\n", len(kv[i]), kv[i], len(kv[i+1]), kv[i+1])
		}
		p.WriteString("PROPS-END\n")
		return p.String()
	}
	for i := 1; i <= n; i++ {
		rp := props("svn:author", "bench", "svn:date", date.Add(time.Duration(i)*time.Second).Format("2006-01-02T15:04:05.000000Z"), "svn:log", fmt.Sprintf("add file %d", i))
		fmt.Fprintf(&b, "Revision-number: %d\nProp-content-length: %d\nContent-length: %d\n\n%s\n", i, len(rp), len(rp), rp)
		if i == 1 {
			np := props()
			fmt.Fprintf(&b, "Node-path: src\nNode-kind: dir\nNode-action: add\nProp-content-length: %d\nContent-length: %d\n\n%s\n\n", len(np), len(np), np)
		}
		text := fmt.Sprintf("package src\n\n// F%d is generated.\nfunc F%d() int {\n\tpassword := \"hunter2\"\n\t_ = password\n\treturn %d\n}\n", i, i, i)
		np := props()
		fmt.Fprintf(&b, "Node-path: src/file%d.go\nNode-kind: file\nNode-action: add\nProp-content-length: %d\nText-content-length: %d\nContent-length: %d\n\n%s%s\n\n",
			i, len(np), len(text), len(np)+len(text), np, text)
		if b.Len() > 1<<16 {
			w.Write(b.Bytes())
			b.Reset()
		}
	}
	w.Write(b.Bytes())
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchintake: "+format+"\n", args...)
	os.Exit(1)
}
