package ingest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

const (
	podWeb   = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: ns}\nspec: {containers: [{name: app, image: app}]}\n"
	quota10  = "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: ns}\nspec: {hard: {pods: \"10\"}}\n"
	quota4   = "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: ns}\nspec: {hard: {pods: \"4\"}}\n"
	webGone  = `{"type":"DELETED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"ns"}}}` + "\n"
	yamlNext = "---\n"
)

// TestPlainManifestsAreJudgedAgainstTheLog holds the unchanged rule of
// plain manifests to the object's state now in the log, in one input or
// across inputs and Ingesters: a state that comes back after a change
// lands, and only a state the object has now is skipped.
func TestPlainManifestsAreJudgedAgainstTheLog(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inputs []string // each ingested by an Ingester of its own, in turn
		want   []string // the stream's events
		// unchanged is the number of manifests skipped in all.
		unchanged int
	}{
		{
			name:   "create, delete, create across inputs",
			inputs: []string{podWeb, webGone, podWeb},
			want:   []string{"in0:1 upsert pods ns/web", "in1:1 delete pods ns/web", "in2:1 upsert pods ns/web"},
		},
		{
			name:   "create, delete, create in one batch",
			inputs: []string{`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"ns"}}` + "\n" + webGone + `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"ns"}}` + "\n"},
			want:   []string{"in0:1 upsert pods ns/web", "in0:2 delete pods ns/web", "in0:3 upsert pods ns/web"},
		},
		{
			name:   "edit and revert across inputs",
			inputs: []string{quota10, quota4, quota10},
			want:   []string{"in0:1 upsert resourcequotas ns/q", "in1:1 upsert resourcequotas ns/q", "in2:1 upsert resourcequotas ns/q"},
		},
		{
			name:   "edit and revert in one input",
			inputs: []string{quota10 + yamlNext + quota4 + yamlNext + quota10},
			want:   []string{"in0:1 upsert resourcequotas ns/q", "in0:6 upsert resourcequotas ns/q", "in0:11 upsert resourcequotas ns/q"},
		},
		{
			name:      "the same state twice in one input",
			inputs:    []string{quota10 + yamlNext + quota10},
			want:      []string{"in0:1 upsert resourcequotas ns/q"},
			unchanged: 1,
		},
		{
			name:      "an unchanged file again",
			inputs:    []string{quota10 + yamlNext + podWeb, quota10 + yamlNext + podWeb},
			want:      []string{"in0:1 upsert resourcequotas ns/q", "in0:6 upsert pods ns/web"},
			unchanged: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, js := ledgertest.StartServer(t)
			s := ledgertest.OpenStream(t, js)
			states := projectionStates(t, s)
			unchanged := 0
			for i, text := range tc.inputs {
				in, err := ingest.New(s, ingest.Options{States: states, BatchSize: 2})
				if err != nil {
					t.Fatal(err)
				}
				rep := ingestString(t, in, "in"+string(rune('0'+i)), text)
				if rep.Rejected != 0 || rep.Duplicates != 0 {
					t.Fatalf("input %d: %+v, want nothing rejected or taken for a duplicate", i, rep)
				}
				unchanged += rep.Unchanged
			}
			checkStream(t, s, tc.want)
			if unchanged != tc.unchanged {
				t.Errorf("unchanged: got %d, want %d", unchanged, tc.unchanged)
			}
		})
	}
}

// TestTwoClientsMakingOneChangeAppendItOnce: two Ingesters that read the
// same state of an object and append the same new state give it one
// message ID, so that the stream keeps one event; the lookup is made once
// per batch, so the second sees the first's change, or the ID takes care
// of a lookup made before it.
func TestTwoClientsMakingOneChangeAppendItOnce(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStream(t, js)
	states := projectionStates(t, s)
	a, _ := ingest.New(s, ingest.Options{States: states})
	b, _ := ingest.New(s, ingest.Options{States: states})
	ingestString(t, a, "a", quota10)
	done := make(chan ingest.Report, 2)
	for _, in := range []*ingest.Ingester{a, b} {
		go func() {
			rep, err := in.IngestFile(context.Background(), "edit", strings.NewReader(quota4))
			if err != nil {
				rep.Rejected = -1 // reported below
			}
			done <- rep
		}()
	}
	total := ingest.Report{}
	total.Add(<-done)
	total.Add(<-done)
	if total.Rejected != 0 {
		t.Fatalf("an ingest failed: %+v", total)
	}
	if total.Appended != 1 || total.Duplicates+total.Unchanged != 1 {
		t.Fatalf("two clients making one edit: %+v, want 1 appended and the other a duplicate or unchanged", total)
	}
	got := sources(ledgertest.ReadAll(t, s, 1))
	if len(got) != 2 || !strings.HasPrefix(got[1], "edit:1 upsert resourcequotas ns/q") {
		t.Fatalf("stream: %v, want the create and one edit", got)
	}
}
