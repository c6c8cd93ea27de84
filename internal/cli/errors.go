package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/oxypipe/oxypipe/internal/redact"
)

// Exit codes of oxy: a script tells a complete run (0) from one with
// payloads to recover (1) and from input refused before anything billed (2).
const (
	// ExitOK: every payload done; faulted jobs alone are reported, not an
	// error.
	ExitOK = 0
	// ExitIncomplete: something was rejected, unsubmitted or unfetched, or
	// the command failed after it started sending requests.
	ExitIncomplete = 1
	// ExitUsage: invalid input (flags, payload lines, credentials, a
	// destination or run log that cannot be written), before any request.
	ExitUsage = 2
	// ExitSIGINT and ExitSIGTERM: the run was stopped by a signal (128 + its
	// number), after finishing what was in flight.
	ExitSIGINT  = 130
	ExitSIGTERM = 143
)

// ExitError ends a command with Code. Err, when set, is printed as an
// "error:" line; nil means the command reported everything already.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns the reported error.
func (e *ExitError) Unwrap() error { return e.Err }

// usageErrorf is invalid input found before any request: exit 2.
func usageErrorf(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// usageError wraps err as invalid input before any request: exit 2.
func usageError(err error) error {
	return &ExitError{Code: ExitUsage, Err: err}
}

// errIncomplete ends a command with exit 1 after it reported why.
var errIncomplete = &ExitError{Code: ExitIncomplete}

// Interrupted is the cancellation cause of a command's context when the
// process got SIGINT or SIGTERM. A command that stopped because of it returns
// it, and the process exits with 128 + the signal's number.
type Interrupted struct {
	Signal os.Signal
}

func (e *Interrupted) Error() string { return "stopped by " + signalName(e.Signal) }

// ExitCode is 130 for SIGINT and 143 for SIGTERM.
func (e *Interrupted) ExitCode() int {
	if e.Signal == syscall.SIGTERM {
		return ExitSIGTERM
	}
	return ExitSIGINT
}

func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case os.Interrupt, nil:
		return "Ctrl+C"
	}
	return s.String()
}

// printError writes err as an "error:" line with any URL credentials redacted.
func printError(w io.Writer, err error) {
	writeLine(w, "error: "+err.Error())
}

// warnf writes a "warning:" line.
func warnf(w io.Writer, format string, args ...any) {
	writeLine(w, "warning: "+fmt.Sprintf(format, args...))
}

// hintf writes a "hint:" line.
func hintf(w io.Writer, format string, args ...any) {
	writeLine(w, "hint: "+fmt.Sprintf(format, args...))
}

// writeLine writes one stderr line, redacted, in one write so that lines of
// concurrent goroutines do not interleave.
func writeLine(w io.Writer, line string) {
	line = redact.String(strings.TrimRight(line, "\n")) + "\n"
	_, _ = io.WriteString(w, line) // stderr that cannot be written has no one to tell
}
