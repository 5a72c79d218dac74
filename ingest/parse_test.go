package ingest_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/quotaledger/quota/ingest"
)

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"b"}}}` + "\n",
		"{\n\"kind\":\"List\",\"items\":[{\"kind\":\"Pod\"}]\n}",
		"apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n---\nfoo: [\n",
		"--- {\"a\": 1}\n...\n",
		"[1,2]",
		"\n\n{\"type\":\"BOOKMARK\"\n",
		"\xff\xfe",
		"kind: FooList\nitems:\n-",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := ingest.Parse("in", bytes.NewReader(data), func(r ingest.Record) error {
			if !strings.HasPrefix(r.Source, "in:") {
				t.Fatalf("source %q does not name the input", r.Source)
			}
			if r.Err == nil && len(r.Object) == 0 {
				t.Fatalf("record %s has neither an object nor an error", r.Source)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("parse of in-memory input failed: %v", err)
		}
	})
}
