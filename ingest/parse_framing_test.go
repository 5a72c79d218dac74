package ingest_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/quotaledger/quota/ingest"
)

// TestParseFramesJSONByItsValues reads JSON values wherever their line
// breaks fall, as kubectl does: a value ends where its JSON ends. A value
// is named by the line where it starts; a bad one is rejected alone, up to
// the next line that starts a record, and the records after it are read.
func TestParseFramesJSONByItsValues(t *testing.T) {
	const (
		pod         = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"n"}}`
		event       = `{"type":"ADDED","object":` + pod + `}`
		prettyEvent = "{\n  \"type\": \"ADDED\",\n  \"object\": {\n    \"apiVersion\": \"v1\",\n    \"kind\": \"Pod\",\n    \"metadata\": {\"name\": \"a\", \"namespace\": \"n\"}\n  }\n}\n"
	)
	for _, tc := range []struct {
		name, input string
		want        string // each record's source, and "!" after a rejected one's
	}{
		{"a List whose first line opens its items", "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[\n{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\"}},\n{\"metadata\":{\"name\":\"b\",\"namespace\":\"n\"}}\n]}\n", "in:1[0] in:1[1]"},
		{"a List whose items follow on the next lines, after blank ones", "\n\n{\"kind\":\"List\",\"items\":[\n" + pod + "\n]}\n" + event + "\n", "in:3[0] in:6"},
		{"JSON lines", event + "\n" + event + "\n\n" + event + "\n", "in:1 in:2 in:4"},
		{"JSON lines with CRLF endings", event + "\r\n" + event + "\r\n", "in:1 in:2"},
		{"JSON lines, the last with no newline", event + "\n" + event, "in:1 in:2"},
		{"pretty-printed watch events, one after another", prettyEvent + prettyEvent, "in:1 in:9"},
		{"pretty-printed and one-line values mixed", prettyEvent + event + "\n" + prettyEvent, "in:1 in:9 in:10"},
		{"several values on one line", event + event + " " + event + "\n" + event + "\n", "in:1 in:1 in:1 in:2"},
		{"a value indented", "   " + event + "\n", "in:1"},
		{"a truncated JSON line among others", event + "\n" + event[:40] + "\n" + event + "\n", "in:1 in:2! in:3"},
		{"a JSON line cut inside a string", event + "\n" + event[:30] + "\n" + event + "\n", "in:1 in:2! in:3"},
		{"a JSON line that opens an array the next lines would fill", event + "\n" + `{"type":"ADDED","object":[` + "\n" + event + "\n" + event + "\n", "in:1 in:2! in:3 in:4"},
		{"a line that is not JSON among JSON lines", event + "\nnot json\n" + event + "\n", "in:1 in:2! in:3"},
		{"a stray closing brace", event + "\n}\n" + event + "\n", "in:1 in:2! in:3"},
		{"an array line among JSON lines", event + "\n[1,2,3]\n" + event + "\n", "in:1 in:2! in:3"},
		{"a pretty-printed value with a syntax error, then a good one", "{\n  \"kind\": \"Pod\",\n  broken\n}\n" + prettyEvent, "in:1! in:5"},
		{"a value cut by the end of the input", event + "\n" + prettyEvent[:20], "in:1 in:2!"},
		{"a List whose JSON breaks inside its items is one rejection", "{\"kind\":\"List\",\"items\":[\n  " + pod + ",\n  {\"kind\": broken},\n  " + pod + "\n]}\n" + event + "\n", "in:1! in:6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parsedSources(t, tc.input); got != tc.want {
				t.Errorf("records %s, want %s", got, tc.want)
			}
		})
	}
}

// TestParseKeepsTheTextOfABadJSONRecord: a bad record's rejection keeps
// its own text, which the dead-letter stream holds, and says why.
func TestParseKeepsTheTextOfABadJSONRecord(t *testing.T) {
	input := `{"type":"ADDED","object":{"kind":"Pod"}}` + "\n" + `{"type":"ADDED","object":{"kind":` + "\n" + `{"type":"DELETED","object":{"kind":"Pod"}}` + "\n"
	var bad []ingest.Record
	err := ingest.Parse("in", strings.NewReader(input), func(r ingest.Record) error {
		if r.Err != nil {
			bad = append(bad, r)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 1 {
		t.Fatalf("%d rejections, want 1", len(bad))
	}
	if got, want := string(bad[0].Raw), `{"type":"ADDED","object":{"kind":`; got != want {
		t.Errorf("raw %q, want %q", got, want)
	}
	if !errors.Is(bad[0].Err, ingest.ErrBadJSON) || bad[0].Source != "in:2" {
		t.Errorf("rejection %s: %v, want in:2: %v", bad[0].Source, bad[0].Err, ingest.ErrBadJSON)
	}
}

// TestParseHandsOnEachValueAsItArrives feeds JSON through a pipe kept
// open: each value must be handed on once its last byte is written,
// whether a newline follows it or not, and a pretty-printed value once
// its closing brace is.
func TestParseHandsOnEachValueAsItArrives(t *testing.T) {
	pr, pw := io.Pipe()
	got := make(chan ingest.Record)
	done := make(chan error, 1)
	go func() {
		done <- ingest.Parse("feed", pr, func(r ingest.Record) error {
			got <- r
			return nil
		})
	}()
	for _, step := range []struct{ write, want string }{
		{`{"type":"ADDED","object":{"kind":"Pod"}}`, "feed:1"},
		{"\n{\n  \"type\": \"MODIFIED\",\n  \"object\": {\"kind\": \"Pod\"}\n}", "feed:2"},
		{` {"type":"DELETED","object":{"kind":"Pod"}}`, "feed:5"},
	} {
		if _, err := io.WriteString(pw, step.write); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-got:
			if r.Source != step.want || r.Err != nil {
				t.Fatalf("record %s (%v), want %s", r.Source, r.Err, step.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no record 10 s after %q was written with the input open", step.write)
		}
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
