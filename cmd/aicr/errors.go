package main

import (
	"errors"
	"fmt"
	"io"
)

// Exit codes. Scripts and the README rely on them; nothing outside
// exitCode (the one mapping) spells a number.
// There are three, and aicr eval's exitGate (eval.go), so a script needs
// no table: a program a command needs that is not installed is a failure
// (1) like any other, with the install line in the message.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed, or something it checks failed
	exitUsage = 2 // bad flags, arguments, --format or config: nothing was done
)

// usageError is bad input the operator must fix before anything runs:
// an unknown flag, a wrong argument, a bad --format or an unreadable
// config. It exits exitUsage.
type usageError struct {
	err error
	// hint names the help to read ("aicr audit show --help"), when the
	// mistake is in how the command was called.
	hint string
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// asUsage marks err as bad input, keeping a usageError it already is.
func asUsage(err error) error {
	var ue *usageError
	if err == nil || errors.As(err, &ue) {
		return err
	}
	return &usageError{err: err}
}

// silentError ends a command that already said why on its streams (a
// failed check list, the platform's answer) with the given code.
type silentError struct{ code int }

func (e *silentError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

var (
	// errSilentFailure: the output already shows what failed.
	errSilentFailure = &silentError{code: exitError}
	// errSilentUsage: the output already lists the problems with the input.
	errSilentUsage = &silentError{code: exitUsage}
	// errSilentOK: the hook client said what was wrong and must still exit 0.
	errSilentOK = &silentError{code: exitOK}
)

// exitCode maps what a command returned to the process's exit status and
// prints the reason on errOut: the one place exit codes are decided.
func exitCode(err error, errOut io.Writer) int {
	if err == nil {
		return exitOK
	}
	var silent *silentError
	if errors.As(err, &silent) {
		return silent.code
	}
	fmt.Fprintln(errOut, "aicr:", termText(err.Error()))
	var usage *usageError
	if errors.As(err, &usage) {
		if usage.hint != "" {
			fmt.Fprintf(errOut, "Run '%s' for usage.\n", usage.hint)
		}
		return exitUsage
	}
	return exitError
}
