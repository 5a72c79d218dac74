package benchmark

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
)

// The replay is measured as `quota replay` runs: in a process of its own,
// beside the server's. The harness starts its own executable (the test
// binary) with EnvReplayChild set; that process's TestMain calls
// ReplayChild, which connects to the server, replays through
// Hooks.Replay and prints a replayOutcome on its standard output.

// EnvReplayChild, set to a JSON replayJob, makes a test binary of this
// package run one replay and exit (ReplayChild).
const EnvReplayChild = "BENCH_REPLAY_CHILD"

// replayJob is what the child replays: from the server at URL into a new
// file at Path; ProfileDir, when set, gets the heap profile at its peak.
type replayJob struct {
	URL, Path, ProfileDir string
	Until                 uint64
}

// replayOutcome is the child's answer.
type replayOutcome struct {
	Applied uint64
	Elapsed time.Duration
	// PeakRSS is the child's VmHWM in bytes; Peak its largest sample.
	PeakRSS int64
	Peak    memSample
	Err     string
}

// ReplayChild runs the replay job in $BENCH_REPLAY_CHILD with hooks and
// writes its outcome to standard output; it returns the exit code.
func ReplayChild(hooks Hooks) int {
	var job replayJob
	if err := json.Unmarshal([]byte(os.Getenv(EnvReplayChild)), &job); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", EnvReplayChild, err)
		return 2
	}
	out := runReplayJob(job, hooks)
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return 1
	}
	return 0
}

func runReplayJob(job replayJob, hooks Hooks) replayOutcome {
	fail := func(err error) replayOutcome { return replayOutcome{Err: err.Error()} }
	nc, err := nats.Connect(job.URL, nats.Name("benchmark replay"))
	if err != nil {
		return fail(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), PhaseTimeout)
	defer cancel()
	stream, err := ledger.Open(ctx, js, ledger.Config{})
	if err != nil {
		return fail(err)
	}
	debug.FreeOSMemory()
	resetPeakRSS()
	mem := startMemSampler(FigureReplay, job.ProfileDir)
	start := time.Now()
	applied, err := hooks.Replay(ctx, stream, job.Path, job.Until)
	elapsed := time.Since(start)
	peak := mem.end()
	if err != nil {
		return fail(err)
	}
	hwm, err := peakRSS()
	if err != nil {
		return fail(err)
	}
	return replayOutcome{Applied: applied, Elapsed: elapsed, PeakRSS: hwm, Peak: peak}
}

// replayInChild runs the replay in a child process of the running
// executable and returns its outcome.
func (r *run) replayInChild(ctx context.Context) (replayOutcome, error) {
	exe, err := os.Executable()
	if err != nil {
		return replayOutcome{}, err
	}
	job, err := json.Marshal(replayJob{URL: r.url, Path: filepath.Join(r.cfg.Dir, "replay.db"), ProfileDir: r.cfg.ProfileDir, Until: r.workloadEnd})
	if err != nil {
		return replayOutcome{}, err
	}
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), EnvReplayChild+"="+string(job))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return replayOutcome{}, fmt.Errorf("replay process: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var out replayOutcome
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return replayOutcome{}, fmt.Errorf("replay process printed %q: %w", stdout.Bytes(), err)
	}
	if out.Err != "" {
		return out, fmt.Errorf("replay process: %s", out.Err)
	}
	return out, nil
}
