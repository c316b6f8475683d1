//go:build !unix

package doctor

import (
	"os"
	"os/exec"
)

const (
	permRead = 4
	permExec = 1
)

// account is unknown off Unix: Windows servers run hooks as the service
// account, which doctor cannot switch to, so it checks as itself.
type account struct {
	user, group string
}

func ownerOf(string) account                   { return account{user: "USER", group: "GROUP"} }
func currentAccount() account                  { return account{user: "USER", group: "GROUP"} }
func (a account) who() string                  { return "the hook's account" }
func (a account) can(os.FileInfo, uint32) bool { return true }
func (a account) chown(string) error           { return nil }
func (a account) runAs(*exec.Cmd) string       { return "" }

func lookupUser(name string) (account, error) { return account{user: name, group: "GROUP"}, nil }
func (a account) home() string                { return "" }
func (a account) isCurrent() bool             { return true }
func (a account) switching() bool             { return false }
func groupOf(os.FileInfo) string              { return "" }
