package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// Exit codes shared by the subcommands.
const (
	exitOK     = 0
	exitFailed = 1 // denied, drift found, bad records reported
	exitError  = 2 // could not do the work at all
)

// exitError carries a process exit code out of a command.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string { return e.err.Error() }
func (e *codeError) Unwrap() error { return e.err }

// withCode marks err to exit with code (nil stays nil).
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &codeError{code: code, err: err}
}

// silentExit ends the process with code without printing anything more:
// the command has already said what happened.
type silentExit int

func (s silentExit) Error() string { return fmt.Sprintf("exit %d", int(s)) }

func main() {
	// In a container with a memory limit (a cgroup's), the Go runtime's
	// soft limit is set to 90% of it, so that the collector works harder
	// before the kernel would kill the process. GOMEMLIMIT set, or
	// AUTOMEMLIMIT=off, leaves the runtime as told; AUTOMEMLIMIT=0.8 sets
	// another share.
	if _, err := memlimit.Set(memlimit.WithProvider(memlimit.FromCgroup)); err != nil {
		fmt.Fprintln(os.Stderr, "quota: memory limit:", err)
	}
	ctx, cancel := signalContext()
	defer cancel()
	err := newRootCommand().ExecuteContext(ctx)
	os.Exit(exitCode(err))
}

func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var s silentExit
	if errors.As(err, &s) {
		return int(s)
	}
	fmt.Fprintln(os.Stderr, "quota:", err)
	var ce *codeError
	if errors.As(err, &ce) {
		return ce.code
	}
	return exitError
}

// signalEcho is how soon after the first signal another one counts as the
// same request: timeout(1), and supervisors that signal a process and then
// its process group, deliver one stop as two signals.
const signalEcho = 250 * time.Millisecond

// signalContext is cancelled by the first SIGINT or SIGTERM; a second one,
// later than signalEcho, exits at once.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ch
		first := time.Now()
		cancel()
		for range ch {
			if time.Since(first) >= signalEcho {
				break
			}
		}
		fmt.Fprintln(os.Stderr, "quota: second signal, exiting at once")
		os.Exit(130)
	}()
	return ctx, cancel
}
