package projector

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// TestCheckpointPastAFileSizeLimit makes a checkpoint fail, with a file
// size limit under what it needs: the batches still apply (the live state
// is in memory), Checkpoint reports ErrWrite and the file keeps the
// checkpoint before it, which a restart would fold the log's tail onto;
// once the limit is lifted the next checkpoint writes the whole state.
func TestCheckpointPastAFileSizeLimit(t *testing.T) {
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
