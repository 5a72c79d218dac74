package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

const fixturesDir = "../testdata/ingest"

func ingestString(t *testing.T, in *ingest.Ingester, name, text string) ingest.Report {
	t.Helper()
	rep, err := in.IngestFile(context.Background(), name, strings.NewReader(text))
	if err != nil {
		t.Fatalf("ingest %s: %v", name, err)
	}
	return rep
}

func sources(recs []ledger.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Event.Source+" "+string(r.Event.Type)+" "+r.Event.Resource+" "+r.Event.Namespace+"/"+r.Event.Name)
	}
	return out
}

func checkStream(t *testing.T, s *ledger.Stream, want []string) {
	t.Helper()
	got := sources(ledgertest.ReadAll(t, s, 1))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stream:\ngot\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestMalformedRecordsAreRejectedAndGoodOnesLand(t *testing.T) {
	in, s := newIngester(t, ingest.Options{})
	rep := ingestPath(t, in, filepath.Join(fixturesDir, "mixed.jsonl"))
	if rep.Appended != 2 || rep.Unchanged != 1 || rep.Bookmarks != 1 || rep.Rejected != 6 || rep.Duplicates != 0 {
		t.Fatalf("got %+v", rep)
	}
	wantRejections := []struct{ source, reason string }{
		{"mixed.jsonl:2", "bad JSON"},
		{"mixed.jsonl:5", "missing kind"},
		{"mixed.jsonl:6", "watch ERROR event: code 410: Expired: too old resource version: 5 (10)"},
		{"mixed.jsonl:7", `namespaced object has no namespace: Pod "homeless"`},
		{"mixed.jsonl:8", `unknown watch event type "RENAMED"`},
		{"mixed.jsonl:9", "not a Kubernetes object or watch event: an array"},
	}
	if len(rep.Rejections) != len(wantRejections) {
		t.Fatalf("rejections: got %v", rep.Rejections)
	}
	for i, w := range wantRejections {
		got := rep.Rejections[i]
		if got.Source != w.source || !strings.Contains(got.Reason, w.reason) {
			t.Errorf("rejection %d: got %q, want %s: ...%s...", i, got, w.source, w.reason)
		}
	}
	checkStream(t, s, []string{
		"mixed.jsonl:1 upsert configmaps team-m/one",
		"mixed.jsonl:11 delete configmaps team-m/one",
	})
	// The dead-letter stream keeps each one with its raw line.
	dead, err := s.ListRejections(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != len(wantRejections) {
		t.Fatalf("dead letters: got %d, want %d", len(dead), len(wantRejections))
	}
	for i, d := range dead {
		if d.Origin != ledger.OriginIngest || d.Source != wantRejections[i].source || d.Reason != rep.Rejections[i].Reason || len(d.Raw) == 0 {
			t.Errorf("dead letter %d: got %+v", i, d)
		}
	}
	if string(dead[5].Raw) != "[1,2,3]" {
		t.Errorf("raw of line 9: got %q, want [1,2,3]", dead[5].Raw)
	}
}

func TestReingestingAppendsNothingNew(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStream(t, js)
	path := filepath.Join(samplesDir, "sample-team-a", "events.jsonl")
	first, _ := ingest.New(s, ingest.Options{})
	rep := ingestPath(t, first, path)
	last, _ := s.LastSeq(context.Background())

	// The same Ingester remembers every state it appended.
	again := ingestPath(t, first, path)
	if again.Appended != 0 || again.Rejected != 0 {
		t.Fatalf("same ingester again: got %+v, want nothing appended", again)
	}
	// A new Ingester (a new process) relies on the message IDs.
	second, _ := ingest.New(s, ingest.Options{})
	rep2 := ingestPath(t, second, path)
	if rep2.Appended != 0 || rep2.Duplicates != rep.Appended || rep2.Unchanged != rep.Unchanged {
		t.Fatalf("new ingester: got %+v, want %d duplicates and %d unchanged", rep2, rep.Appended, rep.Unchanged)
	}
	if now, _ := s.LastSeq(context.Background()); now != last {
		t.Fatalf("last seq: got %d, want %d", now, last)
	}
	// Plain manifests are judged against their objects' states in the
	// log: unchanged for any Ingester.
	states := projectionStates(t, s)
	m := filepath.Join(fixturesDir, "multidoc.yaml")
	judging, _ := ingest.New(s, ingest.Options{States: states})
	if rep := ingestPath(t, judging, m); rep.Appended != 3 {
		t.Fatalf("manifests: got %+v, want 3 appended", rep)
	}
	last, _ = s.LastSeq(context.Background())
	third, _ := ingest.New(s, ingest.Options{States: states})
	if rep := ingestPath(t, third, m); rep.Appended != 0 || rep.Unchanged != 3 {
		t.Fatalf("manifests again: got %+v, want 3 unchanged", rep)
	}
	if now, _ := s.LastSeq(context.Background()); now != last {
		t.Fatalf("last seq after unchanged manifests: got %d, want %d", now, last)
	}
}

// TestStatusOnlyChurnIsSkipped: updates that change nothing quota reads are
// skipped, although each write moves the time in the pod's managedFields,
// which the trimmed object leaves out.
func TestStatusOnlyChurnIsSkipped(t *testing.T) {
	in, s := newIngester(t, ingest.Options{})
	pod := func(rv, status string) string {
		return `{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns","uid":"u","resourceVersion":"` + rv + `",` +
			`"managedFields":[{"manager":"kubectl","operation":"Update","time":"2026-01-01T00:00:00Z"},{"manager":"kubelet","operation":"Update","subresource":"status","time":"2026-01-01T00:00:0` + rv + `Z"}]},` +
			`"spec":{"containers":[{"name":"c","image":"i","resources":{"requests":{"cpu":"1"}}}]},"status":` + status + `}}` + "\n"
	}
	text := pod("1", `{"phase":"Running","podIP":"10.0.0.1"}`) +
		pod("2", `{"phase":"Running","podIP":"10.0.0.2","hostIP":"10.1.1.1"}`) +
		pod("3", `{"phase":"Running","podIP":"10.0.0.3","startTime":"2026-01-01T00:00:00Z"}`) +
		pod("4", `{"phase":"Succeeded"}`) +
		pod("5", `{"phase":"Succeeded","podIP":"10.0.0.9"}`)
	rep := ingestString(t, in, "churn.jsonl", text)
	if rep.Appended != 2 || rep.Unchanged != 3 {
		t.Fatalf("got %+v, want 2 appended (Running, Succeeded) and 3 unchanged", rep)
	}
	checkStream(t, s, []string{
		"churn.jsonl:1 upsert pods ns/p",
		"churn.jsonl:4 upsert pods ns/p",
	})
	if recs := ledgertest.ReadAll(t, s, 1); strings.Contains(string(recs[1].Event.Object), "managedFields") {
		t.Errorf("the pod's end keeps managedFields: %s", recs[1].Event.Object)
	}
	// After a delete, the same state again is a new fact.
	del := strings.Replace(pod("6", `{"phase":"Succeeded"}`), "MODIFIED", "DELETED", 1)
	rep = ingestString(t, in, "churn2.jsonl", del+pod("7", `{"phase":"Succeeded"}`))
	if rep.Appended != 2 || rep.Unchanged != 0 {
		t.Fatalf("after delete: got %+v, want 2 appended", rep)
	}
}

// TestClaimUpdatesAreSkipped: an update of a claim that changes nothing
// quota reads (a label) is skipped as unchanged like any other; the
// ledger's usage does not wait for a recount it would set off.
func TestClaimUpdatesAreSkipped(t *testing.T) {
	in, s := newIngester(t, ingest.Options{})
	claim := func(typ, rv, labels string) string {
		return `{"type":"` + typ + `","object":{"kind":"PersistentVolumeClaim","apiVersion":"v1","metadata":{"name":"c","namespace":"ns","uid":"u","resourceVersion":"` + rv + `","labels":` + labels + `},` +
			`"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}}` + "\n"
	}
	text := claim("ADDED", "1", `{}`) + claim("MODIFIED", "2", `{"touched":"yes"}`) + claim("ADDED", "2", `{"touched":"yes"}`)
	rep := ingestString(t, in, "claims.jsonl", text)
	if rep.Appended != 1 || rep.Unchanged != 2 {
		t.Fatalf("got %+v, want 1 appended (the create) and 2 unchanged", rep)
	}
	checkStream(t, s, []string{"claims.jsonl:1 upsert persistentvolumeclaims ns/c"})
}

func TestUnchangedMemoryIsBounded(t *testing.T) {
	in, _ := newIngester(t, ingest.Options{UnchangedKeysMax: 1})
	cm := func(name, version string) string {
		return `{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"` + name + `","namespace":"ns","resourceVersion":"` + version + `"}}}` + "\n"
	}
	// With room for one object, a cannot be remembered once b is.
	rep := ingestString(t, in, "a.jsonl", cm("a", "1")+cm("b", "2")+cm("a", "3"))
	if rep.Appended+rep.Duplicates != 3 || rep.Unchanged != 0 {
		t.Fatalf("got %+v, want every line sent to the stream", rep)
	}
}

func TestYAMLMultiDocument(t *testing.T) {
	in, s := newIngester(t, ingest.Options{})
	rep := ingestPath(t, in, filepath.Join(fixturesDir, "multidoc.yaml"))
	if rep.Appended != 3 || rep.Records() != 3 {
		t.Fatalf("got %+v, want 3 appended", rep)
	}
	checkStream(t, s, []string{
		"multidoc.yaml:2 upsert configmaps team-y/settings",
		"multidoc.yaml:12 upsert pods team-y/web",
		"multidoc.yaml:27 upsert storageclasses.storage.k8s.io /slow",
	})
}

func TestListsAreUnpackedIntoItems(t *testing.T) {
	in, s := newIngester(t, ingest.Options{})
	rep := ingestPath(t, in, filepath.Join(fixturesDir, "list.yaml"))
	if rep.Appended != 2 || rep.Rejected != 1 {
		t.Fatalf("list.yaml: got %+v, want 2 appended, 1 rejected", rep)
	}
	if r := rep.Rejections[0]; r.Source != "list.yaml:1[2]" || !strings.Contains(r.Reason, "no metadata.name") {
		t.Fatalf("list.yaml rejection: got %q", r)
	}
	rep = ingestPath(t, in, filepath.Join(fixturesDir, "podlist.json"))
	if rep.Appended != 2 || rep.Rejected != 0 {
		t.Fatalf("podlist.json: got %+v, want 2 appended", rep)
	}
	checkStream(t, s, []string{
		"list.yaml:1[0] upsert secrets team-y/token",
		"list.yaml:1[1] upsert services team-y/front",
		"podlist.json:1[0] upsert pods team-z/a",
		"podlist.json:1[1] upsert pods team-z/b",
	})
}

func TestJSONDocumentsAndDefaultNamespace(t *testing.T) {
	in, s := newIngester(t, ingest.Options{Namespace: "dflt"})
	text := "{\n  \"kind\": \"Pod\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {\"name\": \"a\"}\n}\n" +
		"{\n  \"kind\": \"Service\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {\"name\": \"s\", \"namespace\": \"own\"}\n}\n" +
		"{\n  \"kind\": \"Pod\",\n  broken\n}\n"
	rep := ingestString(t, in, "docs.json", text)
	if rep.Appended != 2 || rep.Rejected != 1 || rep.Rejections[0].Source != "docs.json:11" {
		t.Fatalf("got %+v, want 2 appended and docs.json:11 rejected", rep)
	}
	checkStream(t, s, []string{
		"docs.json:1 upsert pods dflt/a",
		"docs.json:6 upsert services own/s",
	})
}

func TestEmptyAndBlankInputs(t *testing.T) {
	in, _ := newIngester(t, ingest.Options{})
	for _, text := range []string{"", "\n\n", "# only a comment\n", "---\n---\n"} {
		if rep := ingestString(t, in, "empty", text); rep.Records() != 0 {
			t.Errorf("%q: got %+v, want no records", text, rep)
		}
	}
	rep := ingestString(t, in, "scalar.yaml", "just words\n")
	if rep.Rejected != 1 || rep.Rejections[0].Source != "scalar.yaml:1" {
		t.Errorf("scalar: got %+v, want scalar.yaml:1 rejected", rep)
	}
}

func TestOptionsValidate(t *testing.T) {
	err := ingest.Options{BatchSize: -1, UnchangedKeysMax: -1, Namespace: "Not_A_Label"}.Validate()
	if !errors.Is(err, ingest.ErrInvalidOptions) {
		t.Fatalf("got %v, want ErrInvalidOptions", err)
	}
	for _, want := range []string{"BatchSize", "UnchangedKeysMax", "Namespace"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to mention %s", err, want)
		}
	}
}

func TestBatchesSmallerThanTheInput(t *testing.T) {
	in, s := newIngester(t, ingest.Options{BatchSize: 2})
	var b strings.Builder
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		b.WriteString(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"` + n + `","namespace":"ns"}}` + "\n")
	}
	if rep := ingestString(t, in, "five", b.String()); rep.Appended != 5 {
		t.Fatalf("got %+v, want 5 appended", rep)
	}
	if last, _ := s.LastSeq(context.Background()); last != 5 {
		t.Fatalf("last seq: got %d, want 5", last)
	}
}

func TestControlCharactersInNamesAreRejectedNotFatal(t *testing.T) {
	in, _ := newIngester(t, ingest.Options{})
	text := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a\u0001b","namespace":"ns"}}` + "\n" +
		`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"fine","namespace":"ns"}}` + "\n"
	rep := ingestString(t, in, "ctl.jsonl", text)
	if rep.Appended != 1 || rep.Rejected != 1 || rep.Rejections[0].Source != "ctl.jsonl:1" {
		t.Fatalf("got %+v, want line 1 rejected and line 2 appended", rep)
	}
}

func TestOversizedEventIsRejectedNotFatal(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStreamConfig(t, js, ledger.Config{MaxMsgSize: 1024})
	in, err := ingest.New(s, ingest.Options{States: projectionStates(t, s)})
	if err != nil {
		t.Fatal(err)
	}
	var containers []string
	for i := range 40 {
		containers = append(containers, fmt.Sprintf(`{"name":"container-with-a-long-name-%d","image":"i","resources":{"requests":{"cpu":"1"}}}`, i))
	}
	big := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"big","namespace":"ns"},"spec":{"containers":[` + strings.Join(containers, ",") + `]}}` + "\n"
	small := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"small","namespace":"ns"}}` + "\n"
	rep := ingestString(t, in, "big.jsonl", small+big+small)
	if rep.Appended != 1 || rep.Unchanged != 1 || rep.Rejected != 1 || !strings.Contains(rep.Rejections[0].Reason, "maximum message size") {
		t.Fatalf("got %+v, want line 2 rejected as too large", rep)
	}
}

// TestClusterScopedCustomResources: a custom resource the API server sends
// in a watch event without a namespace (a ClusterIssuer) is cluster-scoped,
// and recorded as such whatever -n says; a built-in namespaced kind in a
// watch event without one, and a plain object of a custom kind that names
// none, take -n as before, or are refused without it.
func TestClusterScopedCustomResources(t *testing.T) {
	issuer := `{"apiVersion":"cert-manager.io/v1","kind":"ClusterIssuer","metadata":{"name":"letsencrypt","uid":"u1","resourceVersion":"%d"},"spec":{}}`
	widget := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`
	watch := fmt.Sprintf(`{"type":"ADDED","object":`+issuer+`}`, 5) + "\n" +
		fmt.Sprintf(`{"type":"DELETED","object":`+issuer+`}`, 6) + "\n" +
		`{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"homeless","uid":"u2"}}}` + "\n"
	for _, namespace := range []string{"", "dflt"} {
		t.Run("namespace "+namespace, func(t *testing.T) {
			in, s := newIngester(t, ingest.Options{Namespace: namespace})
			rep := ingestString(t, in, "watch.jsonl", watch)
			rep.Add(ingestString(t, in, "widget.json", widget))
			wantRejected := 0
			want := []string{
				"watch.jsonl:1 upsert clusterissuers.cert-manager.io /letsencrypt",
				"watch.jsonl:2 delete clusterissuers.cert-manager.io /letsencrypt",
			}
			if namespace == "" {
				wantRejected = 2
			} else {
				want = append(want, "watch.jsonl:3 upsert pods dflt/homeless", "widget.json:1 upsert widgets.example.com dflt/w")
			}
			if rep.Rejected != wantRejected {
				t.Fatalf("got %+v, want %d rejected", rep, wantRejected)
			}
			for _, r := range rep.Rejections {
				if !strings.Contains(r.Reason, "namespaced object has no namespace") || (r.Source != "watch.jsonl:3" && r.Source != "widget.json:1") {
					t.Errorf("rejection %+v", r)
				}
			}
			checkStream(t, s, want)
			for _, r := range ledgertest.ReadAll(t, s, 1)[:2] {
				if r.Subject != ledger.Subject("") {
					t.Errorf("%s %s on subject %s, want the cluster's %s", r.Event.Type, r.Event.Name, r.Subject, ledger.Subject(""))
				}
			}
		})
	}
}
