package projector

import (
	"path/filepath"
	"testing"

	"github.com/quotaledger/quota/projector/buckets"

	"github.com/quotaledger/quota/ledger"
)

// TestSubjectSeqsFromMemoryMatchTheFile applies the recorded samples in
// small batches and after each compares SubjectSeqs, answered from memory
// once a subject is known, with the file's own subject sequences. It
// asks about every namespace before its first event too, so the memory
// must pick up subjects it was first asked about while they were empty.
func TestSubjectSeqsFromMemoryMatchTheFile(t *testing.T) {
	var records []ledger.Record
	dirs, _ := filepath.Glob(filepath.Join(samplesDir, "sample-*"))
	for _, dir := range dirs {
		more := sampleRecords(t, dir)
		for i := range more {
			more[i].Seq = uint64(len(records) + 1)
			records = append(records, more[i])
		}
	}
	namespaces := []string{"", "never-used"}
	seen := map[string]bool{}
	for _, r := range records {
		if !seen[r.Event.Namespace] {
			seen[r.Event.Namespace] = true
			namespaces = append(namespaces, r.Event.Namespace)
		}
	}
	if len(namespaces) < 4 {
		t.Fatalf("the samples name only %v; the check is too weak", namespaces)
	}
	p := openTemp(t)
	check := func() {
		t.Helper()
		for _, ns := range namespaces {
			gotNS, gotCluster, err := p.SubjectSeqs(ns)
			if err != nil {
				t.Fatal(err)
			}
			var wantNS, wantCluster uint64
			if err := p.read(func(tx *buckets.Set) error {
				wantNS, wantCluster = subjectSeq(tx, ns), subjectSeq(tx, "")
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if gotNS != wantNS || gotCluster != wantCluster {
				t.Fatalf("after seq %d, SubjectSeqs(%q) = %d, %d; the file holds %d, %d",
					p.Applied(), ns, gotNS, gotCluster, wantNS, wantCluster)
			}
		}
	}
	check()
	for len(records) > 0 {
		n := min(3, len(records))
		applyAll(t, p, records[:n], n)
		records = records[n:]
		check()
	}
	if len(p.subjects.seqs) == 0 {
		t.Fatal("no subject is answered from memory")
	}
	if _, ok := p.subjects.seqs["never-used"]; ok {
		t.Fatal("a namespace without events is kept in memory")
	}
	// A projection without cluster-scoped events answers for its cluster
	// subject from memory too, after the first read.
	empty := openTemp(t)
	for range 2 {
		if _, _, err := empty.SubjectSeqs("team"); err != nil {
			t.Fatal(err)
		}
	}
	if seq, ok := empty.subjects.seqs[""]; !ok || seq != 0 {
		t.Fatalf("cluster subject in memory: %d, %v; want 0, kept", seq, ok)
	}
}
