package p4emu

import (
	"bytes"
	"os"
)

// loginStatus answers `p4 login -s` for a caller run() already let past
// authError (an expired ticket or a wrong password never gets here; it
// gets p4d's "Your session has expired, please login again." or
// "Perforce password (P4PASSWD) invalid or unset."), the way p4d words
// each way in: a ticket (the fixtures' README quotes the line), a
// password given as P4PASSWD, or a server with no password at all.
func (e *emu) loginStatus() {
	d := e.d
	switch {
	case d.Password == "" && d.Ticket == "":
		e.infoMsg("'login' not necessary, no password set for this user.")
	case d.Ticket != "" && e.hasTicket():
		e.infoMsg("User " + e.user + " ticket expires in 11 hours 59 minutes.")
	default:
		e.infoMsg("User " + e.user + " was authenticated by password not ticket.")
	}
}

// hasTicket reports whether the caller presents the depot's ticket, as
// P4PASSWD or in its P4TICKETS file.
func (e *emu) hasTicket() bool {
	if e.getenv("P4PASSWD") == e.d.Ticket {
		return true
	}
	tf := e.getenv("P4TICKETS")
	if tf == "" {
		return false
	}
	b, err := os.ReadFile(tf)
	return err == nil && bytes.Contains(b, []byte(":"+e.d.Ticket))
}
