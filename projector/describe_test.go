package projector

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDescribePrintsUsedInHardsFormat holds the describe text to kubectl's
// rule: a used quantity whose format differs from its hard's is printed as
// a whole number in hard's format, so decimal megabytes under a binary
// quota print as bytes and a binary sum under a decimal one likewise,
// while the JSON keeps the API server's strings.
func TestDescribePrintsUsedInHardsFormat(t *testing.T) {
	q := resource.MustParse
	list := &corev1.ResourceQuotaList{Items: []corev1.ResourceQuota{{
		ObjectMeta: metav1.ObjectMeta{Name: "mixed", Namespace: "team"},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{"requests.memory": q("1Gi"), "limits.memory": q("2G"), "requests.cpu": q("2"), "pods": q("5"), "requests.storage": q("10Gi")},
			Used: corev1.ResourceList{"requests.memory": q("500M"), "limits.memory": q("1536Mi"), "requests.cpu": q("1500m"), "pods": q("1")},
		},
	}}}
	var buf bytes.Buffer
	if err := WriteDescribe(&buf, list); err != nil {
		t.Fatal(err)
	}
	want := `Name:             mixed
Namespace:        team
Resource          Used        Hard
--------          ----        ----
limits.memory     1610612736  2G
pods              1           5
requests.cpu      1500m       2
requests.memory   500000000   1Gi
requests.storage  0           10Gi
`
	if buf.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// TestDescribeReplyIsTheListEncoded holds the describe reply, put
// together from each quota's encoding made once, to the bytes
// json.Marshal gives for the list Quotas returns, rendered afresh: over every
// recorded scenario, an invalid quota among them, for every namespace,
// each namespace and each quota by name, twice (the second from the
// encodings kept), and again once the quotas' used has changed.
func TestDescribeReplyIsTheListEncoded(t *testing.T) {
	dirs, _ := filepath.Glob("../testdata/recorded/rec-*")
	if len(dirs) == 0 {
		t.Fatal("no recorded scenarios in testdata/recorded")
	}
	var lines [][]byte
	for _, dir := range dirs {
		for _, name := range []string{"cluster.jsonl", "events.jsonl"} {
			if path := filepath.Join(dir, name); fileExists(path) {
				lines = append(lines, readLines(t, path)...)
			}
		}
	}
	lines = append(lines, []byte(`{"type":"ADDED","object":{"kind":"ResourceQuota","apiVersion":"v1","metadata":{"name":"negative","namespace":"rec-counts","uid":"a0000000-0000-0000-0000-000000000001","resourceVersion":"1"},"spec":{"hard":{"pods":"-1"}}}}`))
	records := watchLineRecords(t, time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), 0, lines)
	p := openTemp(t)
	half := len(records) / 2
	applyAll(t, p, records[:half], DefaultBatchSizeMax)
	check := func() {
		t.Helper()
		all, err := p.Quotas("", "", true)
		if err != nil {
			t.Fatal(err)
		}
		if len(all.Items) == 0 {
			t.Fatal("no quotas folded")
		}
		compare := func(namespace, name string, every bool) {
			t.Helper()
			list, err := p.Quotas(namespace, name, every)
			if err != nil {
				t.Fatal(err)
			}
			// Rendered afresh, not from the records' kept renderings.
			applied, records, err := p.quotaRecords(namespace, name, every)
			if err != nil || len(records) != len(list.Items) {
				t.Fatalf("%d records, %v; Quotas lists %d", len(records), err, len(list.Items))
			}
			fresh := quotaList(applied)
			for _, r := range records {
				q, err := r.resourceQuota()
				if err != nil {
					t.Fatal(err)
				}
				fresh.Items = append(fresh.Items, *q)
			}
			want, err := json.Marshal(&QueryReply{List: fresh})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				got, err := p.quotaReply(namespace, name, every)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("describe %s/%s (all %v):\n got %s\nwant %s", namespace, name, every, got, want)
				}
			}
		}
		compare("", "", true)
		compare("no-such-namespace", "", false)
		for _, q := range all.Items {
			compare(q.Namespace, "", false)
			compare(q.Namespace, q.Name, false)
		}
	}
	check()
	applyAll(t, p, records[half:], DefaultBatchSizeMax)
	check()
	list, err := p.Quotas("rec-counts", "negative", false)
	if err != nil || list.Items[0].Annotations[InvalidAnnotation] == "" {
		t.Fatalf("the negative quota is not described as invalid: %v, %v", list, err)
	}
}
