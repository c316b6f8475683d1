package p4emu

import (
	"os"
	"path/filepath"
	"testing"
)

// `p4 login -s` answers each way in as p4d words it, and refuses an
// expired or wrong ticket with p4d's messages and exit status 1.
func TestLoginStatus(t *testing.T) {
	tickets := filepath.Join(t.TempDir(), "tickets")
	if err := os.WriteFile(tickets, []byte("p4:1666=aicr:T1CKET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := Fixture()
	withPassword := Fixture()
	withPassword.Password = "pw"
	withTicket := Fixture()
	withTicket.Ticket = "T1CKET"
	expired := Fixture()
	expired.Ticket, expired.TicketExpired = "T1CKET", true
	cases := []struct {
		name           string
		d              *Depot
		env            map[string]string
		stdout, stderr string
		code           int
	}{
		{"no password on the server", open, nil, "'login' not necessary, no password set for this user.\n", "", 0},
		{"password", withPassword, map[string]string{"P4PASSWD": "pw"}, "User aicr was authenticated by password not ticket.\n", "", 0},
		{"ticket file", withTicket, map[string]string{"P4TICKETS": tickets}, "User aicr ticket expires in 11 hours 59 minutes.\n", "", 0},
		{"wrong password", withPassword, map[string]string{"P4PASSWD": "nope"}, "", "Perforce password (P4PASSWD) invalid or unset.\n", 1},
		{"expired ticket", expired, map[string]string{"P4TICKETS": tickets}, "", "Your session has expired, please login again.\n", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := run(t, tc.d, tc.env, "-u", "aicr", "login", "-s")
			if out != tc.stdout || errOut != tc.stderr || code != tc.code {
				t.Errorf("got %q / %q / exit %d, want %q / %q / exit %d", out, errOut, code, tc.stdout, tc.stderr, tc.code)
			}
		})
	}
}
