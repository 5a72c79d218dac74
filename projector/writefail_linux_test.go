package projector

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestCheckpointPastAFileSizeLimit makes a checkpoint fail, with a file
// size limit under what it needs: the batches still apply (the live state
// is in memory), Checkpoint reports ErrWrite and the file keeps the
// checkpoint before it, which a restart would fold the log's tail onto;
// once the limit is lifted the next checkpoint writes the whole state.
//
// The limit is the process's, and the test binary writes files of its own
// meanwhile (go test's log of what a test opens): the test runs in a child
// process of its own.
func TestCheckpointPastAFileSizeLimit(t *testing.T) {
	if os.Getenv(fileSizeChildEnv) == "" {
		runInChild(t, "^TestCheckpointPastAFileSizeLimit$")
		return
	}
	p := openTemp(t)
	records := benchRecords(t, 2, 300)
	const opening = 6 // the quotas
	applyAll(t, p, records[:opening], opening)
	if err := p.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p.cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	limit := old
	limit.Cur = uint64(st.Size())
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Skipf("cannot limit the file size: %v", err)
	}
	applyErr := p.Apply(t.Context(), records[opening:])
	err = p.Checkpoint()
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if applyErr != nil {
		t.Fatalf("Apply under the file size limit: %v; the live state is in memory", applyErr)
	}
	if !errors.Is(err, ErrWrite) {
		t.Fatalf("a checkpoint past the file size limit: %v, want ErrWrite", err)
	}
	if got, want := p.Applied(), records[len(records)-1].Seq; got != want {
		t.Fatalf("applied seq %d, want %d", got, want)
	}
	if got := p.checkpointed.Load(); got != opening {
		t.Fatalf("checkpointed seq %d after the failed checkpoint, want %d", got, opening)
	}
	if err := p.Checkpoint(); err != nil {
		t.Fatalf("a checkpoint once the limit is lifted: %v", err)
	}
	if got, want := p.checkpointed.Load(), records[len(records)-1].Seq; got != want {
		t.Fatalf("checkpointed seq %d, want %d", got, want)
	}
}

// fileSizeChildEnv marks the child process of a test that limits the
// process's file size.
const fileSizeChildEnv = "QUOTA_TEST_FILE_SIZE_CHILD"

// runInChild runs the tests matching pattern in a child process of the
// test binary, with fileSizeChildEnv set, and fails t with its output
// unless they pass.
func runInChild(t *testing.T, pattern string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", pattern, "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), fileSizeChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("the child process: %v\n%s", err, out)
	}
}
