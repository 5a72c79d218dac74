package quota

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quantity"
)

// sampleNow is after every recorded event, so pods deleted in the
// recordings are past their grace period.
var sampleNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func sampleDirs(t testing.TB) []string {
	t.Helper()
	dirs, _ := filepath.Glob("../../testdata/samples/sample-*")
	if len(dirs) == 0 {
		t.Fatal("no recorded sample in testdata/samples")
	}
	return dirs
}

// watchEvent is one line of a recorded watch stream.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

func readEvents(t testing.TB, path string) []watchEvent {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []watchEvent
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), object.SizeMax)
	for sc.Scan() {
		var ev watchEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, ev)
	}
	return out
}

type expectedQuota struct {
	Name   string
	Raw    json.RawMessage
	Used   map[string]string
	Status struct {
		Used map[string]string `json:"used"`
		Hard map[string]string `json:"hard"`
	}
}

func readExpected(t testing.TB, dir string) []expectedQuota {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	var out []expectedQuota
	for _, raw := range list.Items {
		var e expectedQuota
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		// List items carry no kind of their own.
		m["kind"], m["apiVersion"] = "ResourceQuota", "v1"
		e.Raw, _ = json.Marshal(m)
		e.Name = m["metadata"].(map[string]any)["name"].(string)
		out = append(out, e)
	}
	return out
}

func printList(l ResourceList) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v.String()
	}
	return out
}

func TestSampleTrimmedEvaluatesTheSame(t *testing.T) {
	for _, dir := range sampleDirs(t) {
		for _, ev := range readEvents(t, filepath.Join(dir, "events.jsonl")) {
			o, err := object.Decode(ev.Object)
			if err != nil {
				t.Fatal(err)
			}
			assertTrimmedSameCharge(t, o)
		}
	}
}

func assertTrimmedSameCharge(t *testing.T, o *object.Object) {
	t.Helper()
	b, err := o.Trimmed()
	if err != nil {
		t.Fatal(err)
	}
	o2, err := object.Decode(b)
	if err != nil {
		t.Fatalf("%s: decode trimmed: %v", o.Key(), err)
	}
	for _, now := range []time.Time{sampleNow, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		c1, err1 := Evaluate(o, now)
		c2, err2 := Evaluate(o2, now)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("%s: errors differ: %v vs %v", o.Key(), err1, err2)
		}
		j1, _ := json.Marshal(c1)
		j2, _ := json.Marshal(c2)
		if !bytes.Equal(j1, j2) {
			t.Errorf("%s: trimmed charge differs:\n got %s\nwant %s", o.Key(), j2, j1)
		}
	}
	if o.Kind == "ResourceQuota" {
		q1, _ := FromObject(o)
		q2, _ := FromObject(o2)
		j1, _ := json.Marshal(q1)
		j2, _ := json.Marshal(q2)
		if !bytes.Equal(j1, j2) {
			t.Errorf("%s: trimmed quota differs:\n got %s\nwant %s", o.Key(), j2, j1)
		}
	}
}

func equalStrings(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestSampleProbes(t *testing.T) {
	for _, dir := range sampleDirs(t) {
		ns := strings.TrimPrefix(filepath.Base(dir), "")
		var states []QuotaState
		for _, e := range readExpected(t, dir) {
			o, err := object.Decode(e.Raw)
			if err != nil {
				t.Fatal(err)
			}
			q, err := FromObject(o)
			if err != nil {
				t.Fatal(err)
			}
			used := ResourceList{}
			for k, v := range e.Status.Used {
				used[k] = quantity.MustParse(v)
			}
			states = append(states, QuotaState{Quota: q, Used: used})
		}
		probes, _ := filepath.Glob(filepath.Join(dir, "probes", "*.json"))
		for _, p := range probes {
			t.Run(filepath.Base(dir)+"/"+filepath.Base(p), func(t *testing.T) {
				raw, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				want, err := os.ReadFile(strings.TrimSuffix(p, ".json") + ".expected")
				if err != nil {
					t.Fatal(err)
				}
				o, err := object.Decode(raw)
				if err != nil {
					t.Fatal(err)
				}
				o.SetNamespace(ns)
				if err := Default(o, Environment{}); err != nil {
					t.Fatal(err)
				}
				d := Admit(AdmitRequest{Operation: Create, Object: o, Quotas: states, Now: sampleNow})
				got := "allowed"
				if !d.Allowed {
					got = "denied\n" + d.Message
				}
				if strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
					t.Errorf("got  %q\nwant %q", got, strings.TrimSpace(string(want)))
				}
				if !d.Allowed && (d.Code != 403 || d.Reason != ReasonForbidden) {
					t.Errorf("got code %d reason %q, want 403 Forbidden", d.Code, d.Reason)
				}
			})
		}
	}
}
