package p4emu

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// What the real client does before and instead of talking to the server:
// the P4TRUST check of ssl: ports (p4 trust), and `p4 login` reading a
// password. Texts are the client's (msgs/msgrpc.cc, msgclient.cc) as
// quoted by the Perforce manuals and the tools that match on them.

const (
	msgTrustAllow = "To allow connection use the 'p4 trust' command."
	msgLoggedIn   = "User %s logged in."
	msgBadLogin   = "Password invalid."
)

// clientSide runs what the client handles itself and reports whether the
// invocation is over: an untrusted ssl: port stops every command but
// trust; trust and a password login never reach run.
func (e *emu) clientSide(cmd string, args []string) bool {
	if cmd == "trust" {
		e.trust(args)
		return true
	}
	if msg := e.trustError(); msg != "" {
		// The client refuses before any server message exists, so it
		// prints on stderr whatever -G/-ztag asked for.
		fmt.Fprintln(e.stderr, msg)
		e.failed = true
		return true
	}
	if cmd == "login" && !hasArg(args, "-s") {
		e.loginWithPassword()
		return true
	}
	return false
}

func hasArg(args []string, a string) bool {
	for _, x := range args {
		if x == a {
			return true
		}
	}
	return false
}

// sslHostPort is the address an ssl: port names ("" for tcp), as the
// trust file keys it.
func (e *emu) sslHostPort() string {
	p := e.port
	for _, pre := range []string{"ssl64:", "ssl46:", "ssl4:", "ssl6:", "ssl:"} {
		if strings.HasPrefix(p, pre) {
			return strings.TrimPrefix(p, pre)
		}
	}
	return ""
}

func (e *emu) trustFile() string {
	if f := e.getenv("P4TRUST"); f != "" {
		return f
	}
	return filepath.Join(e.getenv("HOME"), ".p4trust")
}

// trusted is the fingerprint the trust file holds for this port.
func (e *emu) trusted() string {
	f, err := os.Open(e.trustFile())
	if err != nil {
		return ""
	}
	defer f.Close()
	hp := e.sslHostPort()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, fp, ok := strings.Cut(strings.TrimSpace(sc.Text()), " "); ok && k == hp {
			return strings.TrimSpace(fp)
		}
	}
	return ""
}

// trustError is the client's refusal of an ssl: server whose key the
// trust file does not hold, or holds a different one of.
func (e *emu) trustError() string {
	hp := e.sslHostPort()
	if hp == "" || e.d.SSLFingerprint == "" {
		return ""
	}
	switch got := e.trusted(); got {
	case e.d.SSLFingerprint:
		return ""
	case "":
		return "The authenticity of '" + hp + "' can't be established,\n" +
			"this may be your first attempt to connect to this P4PORT.\n" +
			"The fingerprint for the key sent to your client is\n" +
			e.d.SSLFingerprint + "\n" + msgTrustAllow
	default:
		return "******* WARNING P4PORT IDENTIFICATION HAS CHANGED! *******\n" +
			"It is possible that someone is intercepting your connection\n" +
			"to the Perforce P4PORT '" + hp + "'\n" +
			"If this is not a scheduled key change, then you should contact\n" +
			"your Perforce administrator.\n" +
			"The fingerprint for the mismatched key sent to your client is\n" +
			e.d.SSLFingerprint + "\n" + msgTrustAllow
	}
}

// trust is `p4 trust [-l] [-y] [-f] [-i fingerprint]`.
func (e *emu) trust(args []string) {
	hp := e.sslHostPort()
	if hp == "" {
		fmt.Fprintln(e.stderr, "Only ssl connections may be trusted.")
		e.failed = true
		return
	}
	var install string
	force, yes, list := false, false, false
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-l":
			list = true
		case "-y":
			yes = true
		case "-f":
			force = true
		case "-i":
			if i+1 < len(args) {
				i++
				install = args[i]
			}
		}
	}
	have := e.trusted()
	switch {
	case list:
		if have != "" {
			fmt.Fprintf(e.stdout, "%s %s\n", hp, have)
		}
		return
	case install != "":
	case have == e.d.SSLFingerprint:
		fmt.Fprintln(e.stdout, "Trust already established.")
		return
	case !yes || (have != "" && !force):
		fmt.Fprintln(e.stderr, e.trustError())
		e.failed = true
		return
	default:
		install = e.d.SSLFingerprint
	}
	if err := e.writeTrust(hp, install); err != nil {
		fmt.Fprintln(e.stderr, err)
		e.failed = true
		return
	}
	fmt.Fprintf(e.stdout, "Added trust for P4PORT '%s' (%s)\n", e.port, hp)
}

// writeTrust sets the trust file's line for hp, keeping the others.
func (e *emu) writeTrust(hp, fp string) error {
	path := e.trustFile()
	b, _ := os.ReadFile(path)
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, _, _ := strings.Cut(l, " "); l != "" && k != hp {
			keep = append(keep, l)
		}
	}
	keep = append(keep, hp+" "+fp)
	return os.WriteFile(path, []byte(strings.Join(keep, "\n")+"\n"), 0o600)
}

// ticketsFile is P4TICKETS, else ~/.p4tickets.
func (e *emu) ticketsFile() string {
	if f := e.getenv("P4TICKETS"); f != "" {
		return f
	}
	return filepath.Join(e.getenv("HOME"), ".p4tickets")
}

// holdsExpiredTicket: the tickets file has a ticket p4d issued once and
// has since expired.
func (e *emu) holdsExpiredTicket() bool {
	b, err := os.ReadFile(e.ticketsFile())
	if err != nil {
		return false
	}
	for _, t := range e.d.ExpiredTickets {
		if strings.Contains(string(b), ":"+t) {
			return true
		}
	}
	return false
}

// loginWithPassword is `p4 login` with the password on stdin: it writes
// the depot's current Ticket into the tickets file, replacing this
// user's line for this server.
func (e *emu) loginWithPassword() {
	line, _ := bufio.NewReader(e.stdin).ReadString('\n')
	pw := strings.TrimRight(line, "\r\n")
	if e.mode == "text" {
		fmt.Fprintln(e.stdout, "Enter password: ")
	}
	if e.d.Password == "" || pw != e.d.Password || e.d.Ticket == "" {
		e.err(msgBadLogin, sevFailed, genConfig)
		return
	}
	path := e.ticketsFile()
	key := e.port + "=" + e.user + ":"
	b, _ := os.ReadFile(path)
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" && !strings.HasPrefix(l, key) {
			keep = append(keep, l)
		}
	}
	keep = append(keep, key+e.d.Ticket)
	if err := os.WriteFile(path, []byte(strings.Join(keep, "\n")+"\n"), 0o600); err != nil {
		e.err(fmt.Sprintf("Can't update ticket file %s: %v", path, err), sevFailed, genConfig)
		return
	}
	e.infoMsg(fmt.Sprintf(msgLoggedIn, e.user))
}
