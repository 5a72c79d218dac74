package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
)

// TestClientsRefuseAnInvalidNamespace runs each client with a namespace
// that is not a DNS-1123 label against a running ledger: each says that
// the namespace is not a valid name, before sending anything, where a
// namespace that cannot be a subject token used to look like a server
// that does not run.
func TestClientsRefuseAnInvalidNamespace(t *testing.T) {
	s := startServer(t, t.TempDir())
	write := fileWriter(t, t.TempDir())
	pod := write("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app, image: app}]}\n")
	inOwn := write("own.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: team.a}\nspec: {containers: [{name: app, image: app}]}\n")
	for _, tc := range []struct {
		args []string
		ns   string
	}{
		{[]string{"admit", "--dry-run", "-n", "team.a", "-f", pod}, "team.a"},
		{[]string{"admit", "--dry-run", "-f", inOwn}, "team.a"},
		{[]string{"admit", "--dry-run", "-n", ">", "-f", pod}, ">"},
		{[]string{"describe", "-n", "Team"}, "Team"},
		{[]string{"explain", "-n", "team*"}, "team*"},
		{[]string{"ingest", "-n", "team.a", pod}, "team.a"},
	} {
		out, errOut, code := s.run(tc.args...)
		want := `namespace "` + tc.ns + `" is not a valid name: `
		if code != exitError || out != "" || !strings.Contains(errOut, want) || strings.Contains(errOut, "no ledger server answers") {
			t.Errorf("quota %s: exit %d, stdout %q, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, out, errOut, exitError, want)
		}
	}
	// Nothing was ingested: the pod is not in the log.
	if out := s.mustRun("describe", "-A"); out != "" {
		t.Errorf("describe -A after refused commands printed %q", out)
	}
}

// TestVersionCommand holds `quota version` to print what --version does.
func TestVersionCommand(t *testing.T) {
	flag, err := exec.Command(binary, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := exec.Command(binary, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(cmd) != string(flag) || !strings.HasPrefix(string(cmd), "quota version ") {
		t.Errorf("quota version printed %q, quota --version %q; want the same \"quota version ...\" line", cmd, flag)
	}
}

// quotaFigures returns the hard and used figures of resource in the
// namespace's quota name, through describe -o json.
func quotaFigures(t *testing.T, s *ledgerProc, ns, name string, resource corev1.ResourceName) (hard, used string) {
	t.Helper()
	var list corev1.ResourceQuotaList
	if err := json.Unmarshal([]byte(s.mustRun("describe", name, "-n", ns, "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("describe %s -n %s: %d quotas, want 1", name, ns, len(list.Items))
	}
	st := list.Items[0].Status
	h, u := st.Hard[resource], st.Used[resource]
	return h.String(), u.String()
}

// streamLastSeq is the event stream's last sequence, read from the
// server's JetStream.
func streamLastSeq(t *testing.T, s *ledgerProc) uint64 {
	t.Helper()
	nc, err := nats.Connect(s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := ledger.Attach(context.Background(), js, ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	seq, err := stream.LastSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// TestPlainManifestsThatChangeStateLand ingests plain manifests as a user
// edits them: a pod created, deleted (a watch event) and created again
// from the same file counts again, and a quota's hard changed from 10 to
// 4 and back to 10 is 10. Where the message ID of a plain manifest was a
// digest of its content, the second create and the revert were taken for
// duplicates and dropped. Ingesting the same unchanged files again
// appends nothing.
func TestPlainManifestsThatChangeStateLand(t *testing.T) {
	s := startServer(t, t.TempDir())
	write := fileWriter(t, t.TempDir())
	q := write("q.yaml", "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: pods, namespace: team}\nspec:\n  hard:\n    pods: \"10\"\n")
	q4 := write("q4.yaml", "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: pods, namespace: team}\nspec:\n  hard:\n    pods: \"4\"\n")
	p := write("p.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web-2, namespace: team}\nspec:\n  containers:\n  - name: app\n    image: app\n")
	del := write("del.jsonl", `{"type":"DELETED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-2","namespace":"team"}}}`+"\n")

	check := func(step, wantHard, wantUsed string) {
		t.Helper()
		if hard, used := quotaFigures(t, s, "team", "pods", corev1.ResourcePods); hard != wantHard || used != wantUsed {
			t.Errorf("after %s: pods hard %s used %s, want hard %s used %s", step, hard, used, wantHard, wantUsed)
		}
	}
	ingest := func(wantSummary string, files ...string) {
		t.Helper()
		_, errOut, code := s.run(append([]string{"ingest"}, files...)...)
		if code != 0 || !strings.Contains(errOut, wantSummary) {
			t.Errorf("quota ingest %s: exit %d, stderr %q; want exit 0 and %q", strings.Join(files, " "), code, errOut, wantSummary)
		}
	}
	ingest("ingested 2 records: 2 appended, 0 already in the log, 0 unchanged", q, p)
	check("create", "10", "1")
	ingest("1 appended", del)
	check("delete", "10", "0")
	ingest("ingested 1 records: 1 appended, 0 already in the log, 0 unchanged", p)
	check("create again", "10", "1")

	ingest("1 appended", q4)
	check("hard 10 to 4", "4", "1")
	ingest("ingested 1 records: 1 appended, 0 already in the log, 0 unchanged", q)
	check("hard back to 10", "10", "1")

	before := streamLastSeq(t, s)
	ingest("ingested 2 records: 0 appended, 0 already in the log, 2 unchanged", q, p)
	if after := streamLastSeq(t, s); after != before {
		t.Errorf("re-ingesting unchanged files moved the stream from seq %d to %d", before, after)
	}
	check("re-ingest", "10", "1")

	// A pod only reserved by an admission is not yet in the log's state:
	// its manifest confirms it.
	web3 := write("web-3.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web-3, namespace: team}\nspec:\n  containers:\n  - name: app\n    image: app\n")
	if out := s.mustRun("admit", "-f", web3); out != "allowed\n" {
		t.Fatalf("admit web-3: %q", out)
	}
	ingest("ingested 1 records: 1 appended, 0 already in the log, 0 unchanged", web3)
	check("web-3 reserved, then reported", "10", "2")
	if out, errOut, code := s.run("replay", "--verify"); code != 0 {
		t.Errorf("replay --verify: exit %d\n%s%s", code, out, errOut)
	}
}

// TestIngestChecksManifestFields runs ingest on manifests with a misspelt
// field and a bad quantity: by default the object is rejected with the
// field's path and line, --validate=warn ingests it with a warning,
// --validate=ignore without one; a bad value is rejected whatever
// --validate says, naming its line, path and value.
func TestIngestChecksManifestFields(t *testing.T) {
	s := startServer(t, t.TempDir())
	write := fileWriter(t, t.TempDir())
	q := write("q.yaml", "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\n  namespace: team\nspec:\n  hrad:\n    pods: \"4\"\n")
	typo := write("typo.yaml", "# a pod whose cpu has a typo\napiVersion: v1\nkind: Pod\nmetadata:\n  name: typo-pod\n  namespace: team\nspec:\n  containers:\n  - name: app\n    image: app\n    resources:\n      requests:\n        cpu: 2x\n")

	_, errOut, code := s.run("ingest", q)
	if want := q + `:7: unknown field "spec.hrad"`; code != exitFailed || !strings.Contains(errOut, want) || !strings.Contains(errOut, "0 appended") {
		t.Errorf("ingest q.yaml: exit %d, stderr %q; want exit %d, %q and nothing appended", code, errOut, exitFailed, want)
	}
	_, errOut, code = s.run("ingest", "--validate=warn", q)
	if want := q + `:7: warning: unknown field "spec.hrad"`; code != 0 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "1 appended") {
		t.Errorf("ingest --validate=warn q.yaml: exit %d, stderr %q; want exit 0, %q and 1 appended", code, errOut, want)
	}
	if out := s.mustRun("describe", "-n", "team"); !strings.Contains(out, "Name:") {
		t.Errorf("describe after a warned ingest: %q, want the quota", out)
	}
	_, errOut, code = s.run("ingest", "--validate=ignore", q)
	if code != 0 || strings.Contains(errOut, "unknown field") {
		t.Errorf("ingest --validate=ignore q.yaml: exit %d, stderr %q; want exit 0 and no word of the field", code, errOut)
	}
	for _, mode := range []string{"strict", "warn", "ignore"} {
		_, errOut, code = s.run("ingest", "--validate="+mode, typo)
		if want := typo + `:13: spec.containers[0].resources.requests.cpu: "2x": quantities must match`; code != exitFailed || !strings.Contains(errOut, want) {
			t.Errorf("ingest --validate=%s typo.yaml: exit %d, stderr %q; want exit %d and %q", mode, code, errOut, exitFailed, want)
		}
	}
	if _, errOut, code := s.run("ingest", "--validate=lenient", q); code != exitError || !strings.Contains(errOut, "want strict, warn or ignore") {
		t.Errorf("ingest --validate=lenient: exit %d, stderr %q; want exit %d naming the values", code, errOut, exitError)
	}
}

// TestIngestAfterALongGarbageLine ingests a file whose first line is
// garbage of more than 4 MiB, then valid JSON lines: the garbage is
// rejected alone, saying its size and the limit, and the lines after it
// are ingested. An object over the 4 MiB an object may have is rejected
// naming that limit.
func TestIngestAfterALongGarbageLine(t *testing.T) {
	s := startServer(t, t.TempDir())
	write := fileWriter(t, t.TempDir())
	garbage := strings.Repeat("garbage ", 5<<20/8)
	quota := `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"pods","namespace":"team"},"spec":{"hard":{"pods":"10"}}}`
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"team"},"spec":{"containers":[{"name":"app","image":"app"}]}}`
	big := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","namespace":"team"},"data":{"x":"` + strings.Repeat("x", 4<<20) + `"}}`
	file := write("mixed.jsonl", garbage+"\n"+quota+"\n"+pod+"\n"+big+"\n")

	_, errOut, code := s.run("ingest", file)
	wantGarbage := fmt.Sprintf("%s:1: line too long: line 1 is %d bytes, at most %d, and not one JSON value: skipped; the lines after it are read", file, len(garbage), ingest.LineBytesMax)
	wantBig := fmt.Sprintf("%s:4: decode object: object too large: %d bytes, at most %d (4 MiB)", file, len(big), object.SizeMax)
	for _, want := range []string{wantGarbage, wantBig, "ingested 4 records: 2 appended, 0 already in the log, 0 unchanged, 0 bookmarks, 2 rejected"} {
		if code != exitFailed || !strings.Contains(errOut, want) {
			t.Errorf("ingest: exit %d, stderr %.2000q\nwant exit %d and %q", code, errOut, exitFailed, want)
		}
	}
	if _, used := quotaFigures(t, s, "team", "pods", corev1.ResourcePods); used != "1" {
		t.Errorf("pods used %s after the lines behind the garbage, want 1", used)
	}
}

// TestAdmitChecksManifestFields: admit checks the manifest it sends as
// ingest does, by default refusing a misspelt field with its line.
func TestAdmitChecksManifestFields(t *testing.T) {
	s := startServer(t, t.TempDir())
	pod := fileWriter(t, t.TempDir())("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: team}\nspec:\n  containers:\n  - name: app\n    image: app\n    resource:\n      requests: {cpu: 100m}\n")
	out, errOut, code := s.run("admit", "--dry-run", "-f", pod)
	if want := pod + `:8: unknown field "spec.containers[0].resource"`; code != exitError || out != "" || !strings.Contains(errOut, want) {
		t.Errorf("admit: exit %d, stdout %q, stderr %q; want exit %d and %q", code, out, errOut, exitError, want)
	}
	out, errOut, code = s.run("admit", "--dry-run", "--validate=warn", "-f", pod)
	if want := pod + `:8: warning: unknown field "spec.containers[0].resource"`; code != 0 || out != "allowed\n" || !strings.Contains(errOut, want) {
		t.Errorf("admit --validate=warn: exit %d, stdout %q, stderr %q; want allowed and %q", code, out, errOut, want)
	}
}

// TestIngestJSONWhateverItsLineBreaks ingests a PodList whose first line
// opens its items, the items on the lines after it, and JSON lines with a
// bad one among them: the List's pods are counted, where its first line
// used to be read as a JSON line and rejected as "unexpected end of JSON
// input"; the bad JSON line is rejected alone, naming its line, and the
// lines around it are ingested.
func TestIngestJSONWhateverItsLineBreaks(t *testing.T) {
	s := startServer(t, t.TempDir())
	write := fileWriter(t, t.TempDir())
	quota := `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"pods","namespace":"team"},"spec":{"hard":{"pods":"10"}}}`
	pod := func(name string) string {
		return `{"metadata":{"name":"` + name + `","namespace":"team"},"spec":{"containers":[{"name":"app","image":"app"}]}}`
	}
	list := write("list.json", `{"apiVersion":"v1","kind":"PodList","items":[`+"\n"+pod("a")+",\n"+pod("b")+"\n]}\n")
	lines := write("events.jsonl", `{"type":"ADDED","object":`+quota+"}\n"+
		`{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"c",`+"\n"+
		`{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod",`+pod("d")[1:]+"}\n")

	if _, errOut, code := s.run("ingest", lines, list); code != exitFailed ||
		!strings.Contains(errOut, lines+":2: bad JSON: ") || strings.Contains(errOut, list+":") ||
		!strings.Contains(errOut, "ingested 5 records: 4 appended, 0 already in the log, 0 unchanged, 0 bookmarks, 1 rejected") {
		t.Errorf("ingest: exit %d, stderr %q; want exit %d, %s:2 rejected alone and the List's two pods appended", code, errOut, exitFailed, lines)
	}
	if _, used := quotaFigures(t, s, "team", "pods", corev1.ResourcePods); used != "3" {
		t.Errorf("pods used %s, want 3 (d, and the List's a and b)", used)
	}
}
