package ledger_test

import (
	"context"
	"slices"
	"testing"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

// TestSubjectRecordsReadsOneNamespaceInARange appends events of two
// namespaces and an undecodable message, and reads one namespace's events
// in ranges: only its own, in order, the undecodable one with its error,
// and complete false when there are more than asked for.
func TestSubjectRecordsReadsOneNamespaceInARange(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStream(t, js)
	ctx := context.Background()
	appendIn := func(ns, name string) uint64 {
		t.Helper()
		res, err := s.Append(ctx, ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Upsert, Resource: "configmaps", Namespace: ns, Name: name,
			Object: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"` + ns + `"}}`)}, ledger.AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Seq
	}
	a1 := appendIn("a", "one")
	appendIn("b", "one")
	a2 := appendIn("a", "two")
	bad, err := js.Publish(ctx, ledger.Subject("a"), []byte(`{"v":1,"type":`))
	if err != nil {
		t.Fatal(err)
	}
	appendIn("b", "two")
	a3 := appendIn("a", "three")

	seqs := func(recs []ledger.Record) []uint64 {
		var out []uint64
		for _, r := range recs {
			out = append(out, r.Seq)
		}
		return out
	}
	recs, complete, err := s.SubjectRecords(ctx, "a", a1, a3, 10)
	if err != nil || !complete {
		t.Fatalf("after %d up to %d: complete %v, %v", a1, a3, complete, err)
	}
	if got, want := seqs(recs), []uint64{a2, bad.Sequence, a3}; !slices.Equal(got, want) {
		t.Fatalf("after %d up to %d: sequences %v, want %v", a1, a3, got, want)
	}
	if recs[0].Event.Name != "two" || recs[0].Err != nil || recs[1].Err == nil || recs[2].Event.Name != "three" {
		t.Errorf("records: %+v", recs)
	}
	if recs, complete, err = s.SubjectRecords(ctx, "a", 0, a2, 10); err != nil || !complete || !slices.Equal(seqs(recs), []uint64{a1, a2}) {
		t.Errorf("up to %d: %v complete %v, %v; want [%d %d]", a2, seqs(recs), complete, err, a1, a2)
	}
	if recs, complete, err = s.SubjectRecords(ctx, "a", 0, a3, 2); err != nil || complete || !slices.Equal(seqs(recs), []uint64{a1, a2}) {
		t.Errorf("at most 2: %v complete %v, %v; want [%d %d] and not complete", seqs(recs), complete, err, a1, a2)
	}
	if recs, complete, err = s.SubjectRecords(ctx, "a", a3, a3+10, 10); err != nil || !complete || len(recs) != 0 {
		t.Errorf("after the last: %v complete %v, %v; want none", seqs(recs), complete, err)
	}
	if _, _, err := s.SubjectRecords(ctx, "A.b", 0, 1, 1); err == nil {
		t.Error("an invalid namespace was read")
	}
}
