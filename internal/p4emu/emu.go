package p4emu

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/vcs/p4"
)

// Environment variables the emulator reads besides p4's own.
const (
	EnvDepot = "P4EMU_DEPOT" // JSON depot file; the built-in Fixture when unset
	EnvLog   = "P4EMU_LOG"   // append one line per invocation (argv) here
)

// printChunk is the size of one text/binary record of print output; real
// servers also split file content over several records.
const printChunk = 4096

// Severities and generic codes of the errors emulated, from the Perforce
// message tables (msgs/msgserver.cc, errornum.h).
const (
	sevWarn     = 2
	sevFailed   = 3
	genUnknown  = 2
	genIllegal  = 4
	genEmpty    = 17
	genConfig   = 35
	genUsage    = 1
	msgExpired  = "Your session has expired, please login again."
	msgPassword = "Perforce password (P4PASSWD) invalid or unset."
)

type emu struct {
	d       *Depot
	mode    string // "G", "ztag" or "text"
	charset string
	user    string
	client  string
	getenv  func(string) string
	port    string    // -p, else P4PORT: ssl: ports are checked against P4TRUST
	stdin   io.Reader // p4 login reads the password here
	stdout  io.Writer
	stderr  io.Writer
	out     bytes.Buffer
	failed  bool
	save    func() error
}

// Main runs one p4 invocation and returns its exit status.
func Main(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	logInvocation(getenv, args)
	e := &emu{mode: "text", getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr, user: getenv("P4USER"), client: getenv("P4CLIENT"), port: getenv("P4PORT")}
	if cs := getenv("P4CHARSET"); cs != "" && cs != "none" {
		e.charset = cs
	}
	rest, argFile, status, done := e.globalOptions(args)
	if done {
		return status
	}
	if len(rest) == 0 {
		fmt.Fprintln(stderr, "p4 -h for usage.")
		return 1
	}
	cmd, cargs := rest[0], rest[1:]
	if argFile != "" {
		fromFile, err := readArgFile(argFile)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		cargs = append(cargs, fromFile...)
	}
	d, err := loadDepot(getenv)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	e.d = d
	if path := getenv(EnvDepot); path != "" {
		e.save = func() error { return d.Save(path) }
	}
	if e.user == "" {
		e.user = FixtureUser
	}
	if !e.clientSide(cmd, cargs) {
		e.run(cmd, cargs)
	}
	if e.mode != "text" {
		stdout.Write(e.out.Bytes())
	}
	if e.failed {
		return 1
	}
	return 0
}

// logInvocation appends argv to the EnvLog file, so tests can assert
// which p4 commands the adapter ran.
func logInvocation(getenv func(string) string, args []string) {
	logPath := getenv(EnvLog)
	if logPath == "" {
		return
	}
	if f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintln(f, strings.Join(args, " "))
		f.Close()
	}
}

// globalOptions reads p4's options before the command name into e and
// returns the command and its arguments. done is set, with the exit
// status, when an option ends the invocation itself (-V, or one p4 does
// not know).
func (e *emu) globalOptions(args []string) (rest []string, argFile string, status int, done bool) {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		next := func() string {
			i++
			if i < len(args) {
				return args[i]
			}
			return ""
		}
		switch a {
		case "-G":
			e.mode = "G"
		case "-ztag":
			e.mode = "ztag"
		case "-z":
			if next() == "tag" {
				e.mode = "ztag"
			}
		case "-V":
			e.printVersion()
			return nil, "", 0, true
		case "-p":
			e.port = next()
		case "-P", "-b", "-d", "-H", "-r":
			next()
		case "-u":
			e.user = next()
		case "-c":
			e.client = next()
		case "-C":
			if cs := next(); cs != "none" {
				e.charset = cs
			} else {
				e.charset = ""
			}
		case "-x":
			argFile = next()
		case "-s", "-q":
		default:
			fmt.Fprintf(e.stderr, "Invalid option: %s.\n", a)
			return nil, "", 1, true
		}
	}
	if i >= len(args) {
		return nil, argFile, 0, false
	}
	return args[i:], argFile, 0, false
}

// printVersion is `p4 -V`, with the depot's ClientRev when it sets one
// (tests of the adapter's minimum client version).
func (e *emu) printVersion() {
	rev := "2023.1/2468153 (2023/05/02)"
	if d, err := loadDepot(e.getenv); err == nil && d.ClientRev != "" {
		rev = d.ClientRev
	}
	fmt.Fprintf(e.stdout, "Perforce - The Fast Software Configuration Management System.\n"+
		"Copyright 1995-2023 Perforce Software.  All rights reserved.\n"+
		"Rev. P4/LINUX26X86_64/%s.\n", rev)
}

// readArgFile is -x FILE: one argument a line, appended to the command's.
func readArgFile(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("open for read: %s: %w", path, err)
	}
	var args []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if l != "" {
			args = append(args, l)
		}
	}
	return args, nil
}

func loadDepot(getenv func(string) string) (*Depot, error) {
	if path := getenv(EnvDepot); path != "" {
		return Load(path)
	}
	d := Fixture()
	return d, nil
}

func (e *emu) run(cmd string, args []string) {
	if cmd != "info" {
		if msg, gen := e.authError(); msg != "" {
			e.err(msg, sevFailed, gen)
			return
		}
	}
	if e.d.Unicode && e.charset == "" && cmd != "info" {
		e.err("Unicode server permits only unicode enabled clients.", sevFailed, genConfig)
		return
	}
	if !e.d.Unicode && e.charset != "" {
		e.err("Unicode clients require a unicode enabled server.", sevFailed, genConfig)
		return
	}
	switch cmd {
	case "info":
		e.info()
	case "describe":
		e.describe(args)
	case "print":
		e.print(args)
	case "annotate":
		e.annotate(args)
	case "changes":
		e.changes(args)
	case "counter":
		e.counter(args)
	case "user":
		e.userSpec(args)
	case "login":
		e.login(args)
	case "files":
		e.files(args)
	case "dirs":
		e.dirs(args)
	case "filelog":
		e.filelog(args)
	default:
		e.err("Unknown command.  Try 'p4 help' for info.", sevFailed, genUsage)
	}
}

func (e *emu) authError() (string, int) {
	d := e.d
	if d.TicketExpired {
		return msgExpired, genIllegal
	}
	if d.Password == "" && d.Ticket == "" {
		return "", 0
	}
	if pw := e.getenv("P4PASSWD"); pw != "" && (pw == d.Password || pw == d.Ticket) {
		return "", 0
	}
	if tf := e.getenv("P4TICKETS"); tf != "" && d.Ticket != "" {
		if b, err := os.ReadFile(tf); err == nil && bytes.Contains(b, []byte(":"+d.Ticket)) {
			return "", 0
		}
	}
	if e.holdsExpiredTicket() {
		return msgExpired, genIllegal
	}
	return msgPassword, genConfig
}

// Output helpers. In -G mode everything is a dictionary on stdout; in
// text modes errors and warnings go to stderr as p4 prints them.

func (e *emu) stat(rec p4.Record) {
	switch e.mode {
	case "G":
		e.out.Write(AppendMarshal(nil, withCode("stat", rec)))
	case "ztag":
		e.stdout.Write(AppendZtag(nil, rec))
	}
}

func (e *emu) err(msg string, severity, generic int) {
	if severity >= sevFailed {
		e.failed = true
	}
	if e.mode == "G" {
		var r p4.Record
		r.Set("code", []byte("error"))
		r.Set("data", []byte(msg+"\n"))
		r.Set("severity", []byte(strconv.Itoa(severity)))
		r.Set("generic", []byte(strconv.Itoa(generic)))
		e.out.Write(AppendMarshal(nil, r, "severity", "generic"))
		return
	}
	fmt.Fprintln(e.stderr, msg)
}

func (e *emu) infoMsg(msg string) {
	if e.mode == "G" {
		var r p4.Record
		r.Set("code", []byte("info"))
		r.Set("level", []byte("0"))
		r.Set("data", []byte(msg))
		e.out.Write(AppendMarshal(nil, r, "level"))
		return
	}
	fmt.Fprintln(e.stdout, msg)
}

func (e *emu) data(code string, b []byte) {
	if e.mode != "G" {
		e.stdout.Write(b)
		return
	}
	for len(b) > 0 {
		n := min(len(b), printChunk)
		var r p4.Record
		r.Set("code", []byte(code))
		r.Set("data", b[:n])
		e.out.Write(AppendMarshal(nil, r))
		b = b[n:]
	}
}

func withCode(code string, rec p4.Record) p4.Record {
	var r p4.Record
	r.Set("code", []byte(code))
	for _, k := range rec.Keys {
		r.Set(k, rec.Values[k])
	}
	return r
}

func kv(pairs ...string) p4.Record {
	var r p4.Record
	for i := 0; i+1 < len(pairs); i += 2 {
		r.Set(pairs[i], []byte(pairs[i+1]))
	}
	return r
}
