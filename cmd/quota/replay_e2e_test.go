package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotaledger/quota/projector"
)

// currentPods returns the pods of a watch-event file that exist at its end,
// in first-seen order, as `kubectl get pods -o json` would list them.
func currentPods(t *testing.T, path string) (names []string, objects map[string]json.RawMessage) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	objects = map[string]json.RawMessage{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var w struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &w); err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(w.Object, &meta); err != nil || meta.Kind != "Pod" {
			continue
		}
		name := meta.Metadata.Name
		if w.Type == "DELETED" {
			delete(objects, name)
			continue
		}
		if _, ok := objects[name]; !ok {
			names = append(names, name)
		}
		objects[name] = w.Object
	}
	var live []string
	for _, n := range names {
		if _, ok := objects[n]; ok {
			live = append(live, n)
		}
	}
	return live, objects
}

// TestLostDeleteDriftAndResyncThroughTheBinary: a pod vanishes from the
// live projection behind its back (as a lost delete leaves it), `replay
// --verify` reports the drift and exits 1, `ingest --resync` with the
// cluster's list of pods records the correction, after which `--verify`
// exits 0 and a replay to before the resync still shows the old usage.
func TestLostDeleteDriftAndResyncThroughTheBinary(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(samplesDir, "sample-team-a")
	ns := namespaceOf(t, dir)
	s := startServer(t, data)
	ingestSample(s, dir)
	if out := s.mustRun("replay", "--verify"); !strings.HasPrefix(out, "no drift at seq ") {
		t.Fatalf("verify before the loss: %q", out)
	}
	before := s.mustRun("describe", "-n", ns)

	names, objects := currentPods(t, filepath.Join(dir, "events.jsonl"))
	if len(names) < 2 {
		t.Fatalf("sample has %d pods, want at least 2", len(names))
	}
	lost := names[0]
	s.stop()
	db, err := bolt.Open(filepath.Join(data, "projection.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("objects")).Delete([]byte(ns + "\x00pods\x00" + lost))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	s = startServer(t, data)
	out, errOut, code := s.run("replay", "--verify")
	want := "namespace " + ns + " object pods/" + lost + ": present: live absent, rebuilt charged "
	if code != 1 || !strings.Contains(out, want) || !strings.Contains(out, "drift: 1 differences") {
		t.Fatalf("verify after the loss: exit %d\n%s%s\nwant exit 1 and a line starting %q", code, out, errOut, want)
	}

	// The cluster no longer has the lost pod: its list lacks it.
	items := []json.RawMessage{}
	for _, n := range names[1:] {
		items = append(items, objects[n])
	}
	list, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	listFile := filepath.Join(t.TempDir(), "pods.json")
	if err := os.WriteFile(listFile, list, 0o600); err != nil {
		t.Fatal(err)
	}
	s.mustRun("ingest", "--resync", "-n", ns, "--kind", "pods", listFile)
	if out, errOut, code := s.run("replay", "--verify"); code != 0 || !strings.HasPrefix(out, "no drift") {
		t.Fatalf("verify after the resync: exit %d\n%s%s", code, out, errOut)
	}
	after := s.mustRun("describe", "-n", ns)
	if after == before {
		t.Errorf("describe did not change after the resync removed %s:\n%s", lost, after)
	}
	// Replaying up to the event before the resync gives the old usage.
	var replayed struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	full := s.mustRun("replay", "-o", "json")
	if err := json.Unmarshal([]byte(full), &replayed); err != nil {
		t.Fatal(err)
	}
	last, err := strconv.ParseUint(replayed.Metadata.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	old := s.mustRun("replay", "--no-snapshot", "--until-seq", strconv.FormatUint(last-1, 10), "-n", ns)
	if old != before {
		t.Errorf("replay to before the resync:\n%s\nwant the describe from before the loss:\n%s", old, before)
	}
	if now := s.mustRun("replay", "-n", ns); now != after {
		t.Errorf("replay to the end:\n%s\nwant the live describe:\n%s", now, after)
	}
}

// TestLargeResyncIsSplit resyncs a namespace of 6 000 pods, a list whose
// event is over the default 1 MiB: the pods are appended one by one, then
// the list of their names, and the resync does what one event would (a pod
// the list lacks is removed; describe prints the count as Kubernetes
// does, 6k), which replay reproduces. Where even the names do not fit,
// the resync is refused, naming the flag to raise.
func TestLargeResyncIsSplit(t *testing.T) {
	const ns, pods = "big", 6000
	items := make([]json.RawMessage, pods)
	for i := range items {
		items[i] = json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"worker-%05d","namespace":%q,"uid":"uid-%05d","resourceVersion":"%d"},`+
			`"spec":{"containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"200m","memory":"128Mi"}}}]},"status":{"phase":"Running"}}`, i, ns, i, 100+i))
	}
	list, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	write := fileWriter(t, t.TempDir())
	listFile := write("pods.json", string(list))
	quotaFile := write("quota.yaml", "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: compute, namespace: big}\nspec: {hard: {pods: \"10000\", requests.cpu: \"1k\"}}\n")
	// A pod whose deletion was lost: the list lacks it.
	ghostFile := write("ghost.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: ghost, namespace: big, uid: uid-ghost}\nspec: {containers: [{name: c, image: x, resources: {requests: {cpu: \"1\"}}}]}\n")

	data := t.TempDir()
	s := startServer(t, data)
	s.mustRun("ingest", quotaFile, ghostFile)
	if text := s.mustRun("describe", "-n", ns); !strings.Contains(text, "pods          1     10k") {
		t.Fatalf("describe before the resync:\n%s", text)
	}
	_, errOut, code := s.run("ingest", "--resync", "-n", ns, "--kind", "pods", listFile)
	if code != 0 || !strings.Contains(errOut, "resync pods in namespace big: 6000 objects") || !strings.Contains(errOut, "too large for one event") {
		t.Fatalf("resync at the default size: exit %d\n%s\nwant it split and appended", code, errOut)
	}
	text := s.mustRun("describe", "-n", ns)
	for _, want := range []string{"pods          6k    10k", "requests.cpu  600   1k"} {
		if !strings.Contains(text, want) {
			t.Errorf("describe after the resync lacks %q (the ghost pod gone, the 6 000 counted):\n%s", want, text)
		}
	}
	if out := s.mustRun("replay", "--verify"); !strings.Contains(out, "no drift") {
		t.Errorf("replay --verify after the split resync:\n%s", out)
	}
	// The same list again changes nothing.
	s.mustRun("ingest", "--resync", "-n", ns, "--kind", "pods", listFile)
	if again := s.mustRun("describe", "-n", ns); again != text {
		t.Errorf("describe after the same resync again:\n%s\nwant as before:\n%s", again, text)
	}
	s.stop()

	s = startServer(t, data, "--max-event-size", "64Ki")
	out, errOut, code := s.run("ingest", "--resync", "-n", ns, "--kind", "pods", listFile)
	if code != 1 || !strings.Contains(out+errOut, "the list of its 6000 names alone is") || !strings.Contains(out+errOut, "--max-event-size") {
		t.Errorf("resync with 64Ki events: exit %d\n%s%s\nwant exit 1, refused as the names alone are too large, naming --max-event-size", code, out, errOut)
	}
}

// TestReplayExplainsThePast replays a recorded namespace to every sequence
// of its log with --explain: at each, the charges listed for a resource
// sum to the Used that replay's describe gives at the same sequence, and
// the pod the recording deletes is listed before its deletion and not
// after.
func TestReplayExplainsThePast(t *testing.T) {
	dir := filepath.Join(samplesDir, "sample-team-a")
	ns := namespaceOf(t, dir)
	s := startServer(t, t.TempDir())
	ingestSample(s, dir)
	explainAt := func(seq uint64) projector.Explanation {
		var e projector.Explanation
		out := s.mustRun("replay", "--until-seq", strconv.FormatUint(seq, 10), "--explain", "-n", ns, "-o", "json")
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Fatalf("seq %d: %v\n%s", seq, err, out)
		}
		return e
	}
	var end projector.Explanation
	if err := json.Unmarshal([]byte(s.mustRun("replay", "--explain", "-n", ns, "-o", "json")), &end); err != nil {
		t.Fatal(err)
	}
	const deleted = "pods/ledger-scratch"
	listed := func(e projector.Explanation) bool {
		for _, q := range e.Quotas {
			for _, r := range q.Resources {
				for _, c := range r.Charges {
					if c.Object == deleted {
						return true
					}
				}
			}
		}
		return false
	}
	if listed(end) {
		t.Fatalf("%s listed at the end of the log (seq %d)", deleted, end.Applied)
	}
	seen := false
	for seq := uint64(1); seq <= end.Applied; seq++ {
		e := explainAt(seq)
		if e.Applied != seq {
			t.Fatalf("explained seq %d, asked for %d", e.Applied, seq)
		}
		seen = seen || listed(e)
		var list corev1.ResourceQuotaList
		if err := json.Unmarshal([]byte(s.mustRun("replay", "--until-seq", strconv.FormatUint(seq, 10), "-n", ns, "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != len(e.Quotas) {
			t.Fatalf("seq %d: %d quotas described, %d explained", seq, len(list.Items), len(e.Quotas))
		}
		for i, q := range e.Quotas {
			for _, r := range q.Resources {
				var sum resource.Quantity
				for _, c := range r.Charges {
					sum.Add(resource.MustParse(c.Charge))
				}
				used := list.Items[i].Status.Used[corev1.ResourceName(r.Resource)]
				if sum.Cmp(used) != 0 || r.Used != used.String() {
					t.Errorf("seq %d, %s %s: charges sum to %s, explain says used %s, describe %s", seq, q.Name, r.Resource, sum.String(), r.Used, used.String())
				}
			}
		}
	}
	if !seen {
		t.Errorf("%s never listed before its deletion (seq 1 to %d)", deleted, end.Applied)
	}
}

// TestReplayKeepsItsFile rebuilds into --db: the file is a projection
// whose quotas are those the server describes, and a second rebuild into
// the same path is refused, saying why, without touching it.
func TestReplayKeepsItsFile(t *testing.T) {
	dir := filepath.Join(samplesDir, "sample-team-a")
	ns := namespaceOf(t, dir)
	s := startServer(t, t.TempDir())
	ingestSample(s, dir)
	db := filepath.Join(t.TempDir(), "rebuilt.db")
	if got, want := s.mustRun("replay", "--db", db, "-n", ns), s.mustRun("describe", "-n", ns); got != want {
		t.Errorf("replay --db printed:\n%s\nwant what describe prints:\n%s", got, want)
	}
	p, err := projector.Open(projector.Config{Path: db, Logger: slog.New(slog.DiscardHandler)}, nil)
	if err != nil {
		t.Fatalf("the file replay --db kept does not open as a projection: %v", err)
	}
	list, err := p.Quotas(ns, "", false)
	p.Close()
	if err != nil || len(list.Items) != 1 || list.Items[0].Status.Used.Pods().String() != "4" {
		t.Errorf("the kept file's quotas: %v, %+v; want the sample's quota with 4 pods", err, list)
	}
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code := s.run("replay", "--db", db, "-n", ns)
	if code != exitError || !strings.Contains(stderr, "--db takes a new file") {
		t.Errorf("a second replay into %s: exit %d, %q; want exit %d saying --db takes a new file", db, code, stderr, exitError)
	}
	if after, err := os.ReadFile(db); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the refused replay changed the file (%v)", err)
	}
}
