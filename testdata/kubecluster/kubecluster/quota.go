package kubecluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger/ledgertest"
)

// Limits of the quota subprocesses.
const (
	// ServeStartTimeout bounds how long Serve waits for `quota serve` to
	// serve.
	ServeStartTimeout = 60 * time.Second
	// StopTimeout bounds how long Stop waits after SIGTERM.
	StopTimeout = 30 * time.Second
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Quota returns the path of the project's `quota` binary: $QUOTA_BIN when
// set, otherwise one built once per process from the repository this
// module sits in.
func Quota(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("QUOTA_BIN"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..", "..")
		dir, err := os.MkdirTemp("", "kubecluster-quota-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "quota")
		cmd := exec.Command("go", "build", "-o", buildPath, "./cmd/quota")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/quota in %s: %v\n%s", root, err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// Proc is a running quota subprocess.
type Proc struct {
	t    testing.TB
	Cmd  *exec.Cmd
	Logs *ledgertest.LogBuffer
	done chan struct{}
	err  error
}

// StartQuota runs the quota binary with args, its output collected in
// Logs, and sends it SIGKILL when t ends if it still runs. lines, when not
// nil, receives every line the process writes.
func StartQuota(t testing.TB, lines func(string), args ...string) *Proc {
	t.Helper()
	return startProc(t, lines, args...)
}

// QuotaCPUs, when set to a CPU list taskset(1) reads ("1", "2-3"), runs
// every quota subprocess on those CPUs only: a benchmark's way to keep the
// ledger off the API server's CPUs, as separate nodes would. taskset
// execs the binary, so the process is still Cmd.Process.
var QuotaCPUs string

func startProc(t testing.TB, lines func(string), args ...string) *Proc {
	t.Helper()
	name := Quota(t)
	if QuotaCPUs != "" {
		name, args = "taskset", append([]string{"-c", QuotaCPUs, name}, args...)
	}
	cmd := exec.Command(name, args...)
	p := &Proc{t: t, Cmd: cmd, Logs: &ledgertest.LogBuffer{}, done: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("start quota %s: %v", strings.Join(args, " "), err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		// Lines of any length: a process's output is kept whole.
		br := bufio.NewReaderSize(pr, 64<<10)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				p.Logs.Write([]byte(line))
				if lines != nil {
					lines(strings.TrimSuffix(line, "\n"))
				}
			}
			if err != nil {
				break
			}
		}
	}()
	go func() {
		p.err = cmd.Wait()
		pw.Close()
		<-copied
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		// A binary built with -race (QUOTA_BIN) reports here.
		if strings.Contains(p.Logs.String(), "WARNING: DATA RACE") {
			t.Errorf("quota %s: the race detector found a data race\n%s", strings.Join(args, " "), p.Logs)
		}
	})
	return p
}

// Kill ends the process with SIGKILL, as a crash would, and waits for it.
func (p *Proc) Kill() {
	if p.Exited() {
		return
	}
	_ = p.Cmd.Process.Kill()
	<-p.done
}

// Stop ends the process with SIGTERM and returns its exit error (nil for a
// clean exit); after StopTimeout it kills it.
func (p *Proc) Stop() error {
	if p.Exited() {
		return p.err
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(StopTimeout):
		p.Kill()
		return fmt.Errorf("did not stop within %s of SIGTERM", StopTimeout)
	}
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed when the process has ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Ledger is a running `quota serve`.
type Ledger struct {
	*Proc
	// URL is its NATS URL, for --server.
	URL string
	// Data is its --data directory.
	Data string
}

var servingLine = regexp.MustCompile(`quota ledger serving.* nats=(\S+)`)

// Serve starts `quota serve` on a free port of 127.0.0.1 with its data in
// a TempDir of t, plus extra flags, and waits until it serves.
func Serve(t testing.TB, extra ...string) *Ledger {
	t.Helper()
	data := t.TempDir()
	urls := make(chan string, 1)
	args := append([]string{"serve", "--data", data, "--listen", "127.0.0.1:0"}, extra...)
	p := startProc(t, func(line string) {
		if m := servingLine.FindStringSubmatch(line); m != nil {
			select {
			case urls <- m[1]:
			default:
			}
		}
	}, args...)
	l := &Ledger{Proc: p, Data: data}
	select {
	case l.URL = <-urls:
	case <-p.done:
		t.Fatalf("quota serve exited before serving: %v\n%s", p.err, p.Logs)
	case <-time.After(ServeStartTimeout):
		p.Kill()
		t.Fatalf("quota serve did not serve within %s\n%s", ServeStartTimeout, p.Logs)
	}
	t.Cleanup(func() {
		if err := l.Stop(); err != nil {
			t.Errorf("quota serve did not stop cleanly: %v\n%s", err, l.Logs)
		}
	})
	return l
}

// Restart stops the ledger (SIGTERM), waits while between() runs, then
// starts it again on the same address with the same data, as an outage of
// the ledger's NATS would look to its clients.
func (l *Ledger) Restart(t testing.TB, between func()) {
	t.Helper()
	if err := l.Stop(); err != nil {
		t.Fatalf("quota serve did not stop cleanly: %v\n%s", err, l.Logs)
	}
	if between != nil {
		between()
	}
	u, err := url.Parse(l.URL)
	if err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	p := startProc(t, func(line string) {
		if m := servingLine.FindStringSubmatch(line); m != nil {
			select {
			case urls <- m[1]:
			default:
			}
		}
	}, "serve", "--data", l.Data, "--listen", u.Host)
	select {
	case <-urls:
	case <-p.done:
		t.Fatalf("quota serve exited before serving again: %v\n%s", p.err, p.Logs)
	case <-time.After(ServeStartTimeout):
		p.Kill()
		t.Fatalf("quota serve did not serve again within %s\n%s", ServeStartTimeout, p.Logs)
	}
	l.Proc = p
	// Registered after startProc's kill, so it runs before it.
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("quota serve did not stop cleanly: %v\n%s", err, p.Logs)
		}
	})
}

// Run runs a quota client subcommand against the ledger and returns its
// stdout, stderr and exit code.
func (l *Ledger) Run(args ...string) (stdout, stderr string, code int) {
	l.t.Helper()
	cmd := exec.Command(Quota(l.t), append(args, "--server", l.URL)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			l.t.Fatalf("run quota %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return out.String(), errOut.String(), code
}

// MustRun runs a quota client subcommand that must succeed and returns its
// stdout.
func (l *Ledger) MustRun(args ...string) string {
	l.t.Helper()
	out, errOut, code := l.Run(args...)
	if code != 0 {
		l.t.Fatalf("quota %s: exit %d\nstdout: %s\nstderr: %s\nserver log:\n%s", strings.Join(args, " "), code, out, errOut, l.Logs)
	}
	return out
}
