package ingest_test

import (
	"strings"
	"testing"

	"github.com/quotaledger/quota/ingest"
)

// TestPlainObjectsFieldsAreChecked holds a plain object's fields to its
// kind's, as kubectl's --validate does: an unknown field is named by its
// path and line, and a value that cannot be read by its path, line and
// value; watch events and kinds the check does not know pass.
func TestPlainObjectsFieldsAreChecked(t *testing.T) {
	const quota = "# a quota with a misspelt field\n" +
		"apiVersion: v1\n" +
		"kind: ResourceQuota\n" +
		"metadata:\n" +
		"  name: q\n" +
		"  namespace: ns\n" +
		"spec:\n" +
		"  hrad:\n" +
		"    pods: \"4\"\n"
	const pod = "apiVersion: v1\n" +
		"kind: Pod\n" +
		"metadata:\n" +
		"  name: typo-pod\n" +
		"  namespace: ns\n" +
		"spec:\n" +
		"  containers:\n" +
		"  - name: app\n" +
		"    image: app\n" +
		"    resources:\n" +
		"      requests:\n" +
		"        cpu: 2x\n"
	for _, tc := range []struct {
		name       string
		validation ingest.Validation
		file, text string
		// rejections and warnings as "SOURCE: REASON", in order.
		rejections, warnings []string
		appended             int
	}{
		{
			name: "an unknown field in YAML", file: "q.yaml", text: quota,
			rejections: []string{`q.yaml:8: unknown field "spec.hrad"`},
		},
		{
			name: "an unknown field in the second document", file: "q.yaml", text: "---\n" + strings.Replace(quota, "hrad", "hard", 1) + "---\n" + strings.Replace(quota, "name: q", "name: r", 1),
			rejections: []string{`q.yaml:19: unknown field "spec.hrad"`},
			appended:   1,
		},
		{
			name: "a container's misspelt resources", file: "p.yaml", text: strings.Replace(strings.Replace(pod, "resources", "resource", 1), "2x", "2", 1),
			rejections: []string{`p.yaml:10: unknown field "spec.containers[0].resource"`},
		},
		{
			name: "a bad quantity", file: "typo.yaml", text: pod,
			rejections: []string{`typo.yaml:12: spec.containers[0].resources.requests.cpu: "2x": quantities must match the regular expression`},
		},
		{
			name: "several problems, each with its line", file: "p.yaml", text: strings.Replace(pod, "    image: app\n", "    image: app\n    imagePullPolcy: Always\n    ports: 80\n", 1),
			rejections: []string{`p.yaml:10: unknown field "spec.containers[0].imagePullPolcy"; p.yaml:11: spec.containers[0].ports: "80": want a list; p.yaml:14: spec.containers[0].resources.requests.cpu: "2x": quantities must match`},
		},
		{
			name: "a string where a number goes", file: "d.yaml", text: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ns}\nspec:\n  replicas: three\n",
			rejections: []string{`d.yaml:5: spec.replicas: "three": want an integer`},
		},
		{
			name: "an unknown field in a JSON line", file: "o.jsonl",
			text:       `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"}}` + "\n" + `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"ns","lables":{}}}` + "\n",
			rejections: []string{`o.jsonl:2: unknown field "metadata.lables"`},
			appended:   1,
		},
		{
			name: "an unknown field in pretty-printed JSON", file: "o.json",
			text:       "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"ConfigMap\",\n  \"metadata\": {\"name\": \"a\", \"namespace\": \"ns\"},\n  \"dta\": {}\n}\n",
			rejections: []string{`o.json:5: unknown field "dta"`},
		},
		{
			name: "warn", validation: ingest.ValidateWarn, file: "q.yaml", text: quota,
			warnings: []string{`q.yaml:8: unknown field "spec.hrad"`},
			appended: 1,
		},
		{
			name: "warn still rejects a bad value", validation: ingest.ValidateWarn, file: "typo.yaml", text: pod,
			rejections: []string{`typo.yaml:12: spec.containers[0].resources.requests.cpu: "2x": quantities must match`},
		},
		{
			name: "ignore", validation: ingest.ValidateIgnore, file: "q.yaml", text: quota,
			appended: 1,
		},
		{
			name: "a watch event is not checked", file: "w.jsonl",
			text:     `{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u","resourceVersion":"1"},"newField":1}}` + "\n",
			appended: 1,
		},
		{
			name: "a custom resource is not checked", file: "cr.yaml",
			text:     "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ns}\nspec: {anything: goes}\n",
			appended: 1,
		},
		{
			name: "a List's item is named by its index", file: "l.yaml",
			text:       "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a, namespace: ns}\n  dta: {}\n",
			rejections: []string{`l.yaml:1[0]: unknown field "dta"`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := newIngester(t, ingest.Options{Validation: tc.validation})
			rep := ingestString(t, in, tc.file, tc.text)
			check := func(what string, got []ingest.Rejection, want []string) {
				t.Helper()
				if len(got) != len(want) {
					t.Fatalf("%s: got %v, want %v", what, got, want)
				}
				for i := range got {
					if !strings.HasPrefix(got[i].String(), want[i]) {
						t.Errorf("%s %d: got %q, want it to start %q", what, i, got[i].String(), want[i])
					}
				}
			}
			check("rejections", rep.Rejections, tc.rejections)
			check("warnings", rep.Warnings, tc.warnings)
			if rep.Appended != tc.appended {
				t.Errorf("appended %d, want %d", rep.Appended, tc.appended)
			}
		})
	}
}

// TestParseValidation reads kubectl's --validate values.
func TestParseValidation(t *testing.T) {
	for in, want := range map[string]ingest.Validation{"strict": ingest.ValidateStrict, "true": ingest.ValidateStrict, "warn": ingest.ValidateWarn, "ignore": ingest.ValidateIgnore, "false": ingest.ValidateIgnore} {
		if got, err := ingest.ParseValidation(in); err != nil || got != want {
			t.Errorf("ParseValidation(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ingest.ParseValidation("lenient"); err == nil || !strings.Contains(err.Error(), "want strict, warn or ignore") {
		t.Errorf("ParseValidation(lenient) = %v, want an error naming the values", err)
	}
}

// FuzzCheckFields feeds the field check any text as a manifest: it must
// not panic, and a problem names a line of the input or none.
func FuzzCheckFields(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, resources: {requests: {cpu: 2x}}}]}\n",
		"apiVersion: v1\nkind: ResourceQuota\nspec:\n  hrad: {pods: 1}\n",
		"apiVersion: apps/v1\nkind: Deployment\nspec: &a {replicas: 1, <<: *a}\n",
		`{"apiVersion":"v1","kind":"Secret","data":{"k":"!!"}}`,
		"apiVersion: v1\nkind: Pod\nmetadata: [1]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		for _, r := range ingest.UnknownFields("in", text, text) {
			if !strings.HasPrefix(r.Source, "in") {
				t.Fatalf("problem %q does not name the input", r)
			}
		}
	})
}
