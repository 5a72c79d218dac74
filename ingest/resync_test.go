package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

const podList = `{
  "apiVersion": "v1",
  "kind": "List",
  "items": [
    {"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"team-a","uid":"u1"},"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"500m"}}}]},"status":{"phase":"Running"}},
    {"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-2","namespace":"team-a","uid":"u2"},"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"1"}}}]},"status":{"phase":"Running"}},
    {"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"team-a"},"spec":{"type":"ClusterIP"}}
  ]
}
`

func TestResync(t *testing.T) {
	cases := []struct {
		name   string
		input  string
		opts   ingest.ResyncOptions
		groups []ingest.ResyncGroup // Seq is checked only for being set
		// rejected counts rejections (records and refused groups).
		rejected int
		wantErr  error
	}{
		{
			name:   "one event per namespace and resource",
			input:  podList,
			groups: []ingest.ResyncGroup{{Namespace: "team-a", Resource: "pods", Items: 2}, {Namespace: "team-a", Resource: "services", Items: 1}},
		},
		{
			name:   "an empty list with a namespace and a resource removes everything of it",
			input:  `{"apiVersion":"v1","kind":"List","items":[]}`,
			opts:   ingest.ResyncOptions{Namespace: "team-a", Resource: "pods"},
			groups: []ingest.ResyncGroup{{Namespace: "team-a", Resource: "pods", Items: 0}},
		},
		{
			name:     "an object of another namespace refuses its group",
			input:    podList,
			opts:     ingest.ResyncOptions{Namespace: "team-b", Resource: "pods"},
			groups:   []ingest.ResyncGroup{{Namespace: "team-a", Resource: "pods", Items: 0}, {Namespace: "team-a", Resource: "services", Items: 0}, {Namespace: "team-b", Resource: "pods", Items: 0}},
			rejected: 6, // three records, three refused groups
		},
		{
			name:     "a watch event other than ADDED is not a list item",
			input:    `{"type":"DELETED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"team-a"}}}`,
			rejected: 1,
		},
		{
			name:    "a resource needs a namespace",
			input:   podList,
			opts:    ingest.ResyncOptions{Resource: "pods"},
			wantErr: ingest.ErrInvalidOptions,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, stream := newIngester(t, ingest.Options{})
			rep, err := in.Resync(context.Background(), "pods.json", strings.NewReader(tc.input), tc.opts)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err: got %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if rep.Rejected != tc.rejected {
				t.Errorf("rejected: got %d, want %d (%v)", rep.Rejected, tc.rejected, rep.Rejections)
			}
			if len(rep.Groups) != len(tc.groups) {
				t.Fatalf("groups: got %+v, want %+v", rep.Groups, tc.groups)
			}
			appended := 0
			for i, g := range rep.Groups {
				w := tc.groups[i]
				if g.Namespace != w.Namespace || g.Resource != w.Resource || g.Items != w.Items {
					t.Errorf("group %d: got %+v, want %+v", i, g, w)
				}
				if g.Seq != 0 {
					appended++
				}
			}
			records := ledgertest.ReadAll(t, stream, 1)
			if len(records) != appended || rep.Appended != appended {
				t.Fatalf("stream holds %d records, report says %d appended, groups %d", len(records), rep.Appended, appended)
			}
			var appendedGroups []ingest.ResyncGroup
			for _, g := range rep.Groups {
				if g.Seq != 0 {
					appendedGroups = append(appendedGroups, g)
				}
			}
			for i, rec := range records {
				g := appendedGroups[i]
				if rec.Event.Type != ledger.Resync || rec.Event.Resource != g.Resource || rec.Namespace != g.Namespace || len(rec.Event.Items) != g.Items {
					t.Errorf("record %d: got %s %s in %q with %d items, want resync %+v", i, rec.Event.Type, rec.Event.Resource, rec.Namespace, len(rec.Event.Items), g)
				}
			}
		})
	}
}

func TestResyncSameListTwiceIsADuplicate(t *testing.T) {
	in, _ := newIngester(t, ingest.Options{})
	for i, wantDup := range []bool{false, true} {
		rep, err := in.Resync(context.Background(), "pods.json", strings.NewReader(podList), ingest.ResyncOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := rep.Groups[0].Duplicate; got != wantDup {
			t.Errorf("round %d: duplicate got %v, want %v", i, got, wantDup)
		}
	}
}

// TestResyncSameListAfterADeleteLands: the same list again after an
// event of its namespace (a delete it may undo) is appended, not taken for
// the list it was before that event.
func TestResyncSameListAfterADeleteLands(t *testing.T) {
	in, s := newIngester(t, ingest.Options{})
	resync := func() ingest.ResyncReport {
		t.Helper()
		rep, err := in.Resync(context.Background(), "pods.json", strings.NewReader(podList), ingest.ResyncOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	resync()
	ingestString(t, in, "del.jsonl", `{"type":"DELETED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-2","namespace":"team-a","uid":"u2"}}}`+"\n")
	rep := resync()
	for _, g := range rep.Groups {
		if g.Duplicate || g.Seq == 0 {
			t.Errorf("group %+v after a delete: want it appended", g)
		}
	}
	if again := resync(); !again.Groups[0].Duplicate || !again.Groups[1].Duplicate {
		t.Errorf("the same list once more: %+v, want duplicates", again.Groups)
	}
	if last, _ := s.LastSeq(context.Background()); last != 5 {
		t.Errorf("last seq %d, want 5: two resyncs, a delete, two resyncs", last)
	}
}

// TestResyncTooLargeIsSplit resyncs a list over the stream's largest
// event: its objects are appended as Upserts, in the list's order, then a
// Resync with no items that names them all, at the group's Seq. The same
// list again appends nothing.
func TestResyncTooLargeIsSplit(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStreamConfig(t, js, ledger.Config{MaxMsgSize: 4096})
	in, err := ingest.New(stream, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const pods = 40
	var list strings.Builder
	list.WriteString(`{"apiVersion":"v1","kind":"List","items":[`)
	for i := range pods {
		if i > 0 {
			list.WriteString(",")
		}
		fmt.Fprintf(&list, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-%02d","namespace":"team-a","uid":"u-%02d","resourceVersion":"%d"},"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"100m"}}}]}}`, i, i, 10+i)
	}
	list.WriteString(`]}`)
	for round, wantDup := range []bool{false, true} {
		rep, err := in.Resync(context.Background(), "pods.json", strings.NewReader(list.String()), ingest.ResyncOptions{})
		if err != nil || len(rep.Groups) != 1 {
			t.Fatalf("round %d: %v, groups %+v", round, err, rep.Groups)
		}
		g := rep.Groups[0]
		if !g.Split || g.Seq != pods+1 || g.Items != pods || g.Duplicate != wantDup || rep.Rejected != 0 {
			t.Errorf("round %d: group %+v, %d rejected; want split, seq %d, %d items, duplicate %v", round, g, rep.Rejected, pods+1, pods, wantDup)
		}
	}
	records := ledgertest.ReadAll(t, stream, 1)
	if len(records) != pods+1 {
		t.Fatalf("the stream holds %d records, want %d upserts and a resync", len(records), pods)
	}
	for i, rec := range records[:pods] {
		ev := rec.Event
		if ev.Type != ledger.Upsert || ev.Resource != "pods" || ev.Namespace != "team-a" || ev.Name != fmt.Sprintf("p-%02d", i) || ev.UID != fmt.Sprintf("u-%02d", i) || len(ev.Object) == 0 {
			t.Errorf("record %d: %s %s %s/%s uid %q, want the upsert of pod p-%02d", i, ev.Type, ev.Resource, ev.Namespace, ev.Name, ev.UID, i)
		}
	}
	final := records[pods].Event
	if final.Type != ledger.Resync || final.Resource != "pods" || len(final.Items) != 0 || len(final.Listed) != pods || final.Listed[pods-1] != fmt.Sprintf("p-%02d", pods-1) {
		t.Errorf("last record: %s %s with %d items, listed %v; want the resync naming the %d pods", final.Type, final.Resource, len(final.Items), final.Listed, pods)
	}
}

// TestResyncCarriesVersions: the list's resourceVersion goes on every
// resync event, and each item keeps its own, which the projection fences
// the resync by.
func TestResyncCarriesVersions(t *testing.T) {
	in, s := newIngester(t, ingest.Options{})
	list := `{"apiVersion":"v1","kind":"List","items":[
	  {"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"team-a","uid":"u1","resourceVersion":"17"},"spec":{"containers":[{"name":"app"}]}}]}`
	rep, err := in.Resync(context.Background(), "pods.json", strings.NewReader(list), ingest.ResyncOptions{Namespace: "team-a", Resource: "pods", ResourceVersion: "35"})
	if err != nil {
		t.Fatal(err)
	}
	recs := ledgertest.ReadAll(t, s, rep.Groups[0].Seq)
	if len(recs) != 1 || recs[0].Event.Type != ledger.Resync {
		t.Fatalf("records %+v, want the one resync", recs)
	}
	ev := recs[0].Event
	if ev.ResourceVersion != "35" {
		t.Errorf("resync resourceVersion %q, want the list's 35", ev.ResourceVersion)
	}
	if len(ev.Items) != 1 || !strings.Contains(string(ev.Items[0]), `"resourceVersion":"17"`) {
		t.Errorf("items %s, want the item with its resourceVersion 17", ev.Items)
	}
}

// TestResyncTakesTheListsVersion: a List that states its resourceVersion
// (as kubectl prints one) gives it to the resync; input that is not one
// such List gives none.
func TestResyncTakesTheListsVersion(t *testing.T) {
	for _, c := range []struct{ name, input, want string }{
		{"a List with its version", `{"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"41"},"items":[{"metadata":{"name":"a","namespace":"team-a"},"spec":{"containers":[{"name":"c"}]}}]}`, "41"},
		{"plain objects", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"team-a"},"spec":{"containers":[{"name":"c"}]}}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, s := newIngester(t, ingest.Options{})
			rep, err := in.Resync(context.Background(), "pods.json", strings.NewReader(c.input), ingest.ResyncOptions{Namespace: "team-a", Resource: "pods"})
			if err != nil {
				t.Fatal(err)
			}
			recs := ledgertest.ReadAll(t, s, rep.Groups[0].Seq)
			if len(recs) != 1 || recs[0].Event.ResourceVersion != c.want {
				t.Fatalf("resync records %+v, want one with resourceVersion %q", recs, c.want)
			}
		})
	}
}
