package projector

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// TestApplyAfterAFailedCommit makes bbolt's commit of a batch fail, with
// a file size limit under what the batch needs: Apply reports ErrWrite,
// and the same batch applied again once the limit is lifted is counted
// once (openTemp's cleanup recounts every quota from its objects). The
// fold's cache of the quotas, charged by the batch that did not commit,
// must not outlive it.
func TestApplyAfterAFailedCommit(t *testing.T) {
	p := openTemp(t)
	records := benchRecords(t, 2, 300)
	const opening = 6 // the quotas
	applyAll(t, p, records[:opening], opening)
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
	err = p.Apply(t.Context(), records[opening:])
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, ErrWrite) {
		t.Fatalf("Apply past the file size limit: %v, want ErrWrite", err)
	}
	if got := p.Applied(); got != opening {
		t.Fatalf("applied seq %d after the failed commit, want %d", got, opening)
	}
	applyAll(t, p, records[opening:], len(records))
	if got, want := p.Applied(), records[len(records)-1].Seq; got != want {
		t.Fatalf("applied seq %d, want %d", got, want)
	}
}
