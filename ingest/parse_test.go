package ingest_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	utf16enc "unicode/utf16"

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
		"{\"kind\":\"PodList\",\"items\":[\n{\"metadata\":{\"name\":\"a\"}}\n]}\n{\"type\":\"ADDED\",\"object\":{}}{\"kind\":\"Pod\"}\n",
		"{\"type\":\"ADDED\",\"object\":[\n{\"kind\":\"Pod\"}\n\r\n  {\"kind\":\n[}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Gzipped and UTF-16 input is read as the text it stands for,
		// whose newlines are not its own bytes.
		lines := bytes.Count(data, []byte("\n")) + 1
		if len(data) >= 2 && (data[0] == 0xff && data[1] == 0xfe || data[0] == 0xfe && data[1] == 0xff || data[0] == 0x1f && data[1] == 0x8b) {
			lines = math.MaxInt
		}
		err := ingest.Parse("in", bytes.NewReader(data), func(r ingest.Record) error {
			if !strings.HasPrefix(r.Source, "in:") {
				t.Fatalf("source %q does not name the input", r.Source)
			}
			if r.Err == nil && len(r.Object) == 0 {
				t.Fatalf("record %s has neither an object nor an error", r.Source)
			}
			var line int
			if _, err := fmt.Sscanf(r.Source, "in:%d", &line); err != nil || line < 1 || line > lines {
				t.Fatalf("record %s names no line of the input's %d", r.Source, lines)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("parse of in-memory input failed: %v", err)
		}
	})
}

// TestParseALongFirstLine reads a compact List on one line, longer than a
// YAML line may be (jq -c of 'kubectl get pods -o json'): its items are
// read, first in the input or among JSON lines. A first line that long
// that does not start JSON is rejected alone, and the format of the
// input is told by the line after it.
func TestParseALongFirstLine(t *testing.T) {
	const pods = 1500
	var list strings.Builder
	list.WriteString(`{"apiVersion":"v1","kind":"List","items":[`)
	for i := range pods {
		if i > 0 {
			list.WriteString(",")
		}
		fmt.Fprintf(&list, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-%d","namespace":"team-a","annotations":{"note":%q}}}`, i, strings.Repeat("x", 3000))
	}
	list.WriteString("]}")
	if list.Len() <= ingest.LineBytesMax {
		t.Fatalf("the list is %d bytes, not over a line's %d", list.Len(), ingest.LineBytesMax)
	}
	event := `{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"w","namespace":"team-a"}}}`
	garbage := strings.Repeat("\x01garbage ", ingest.LineBytesMax/9+1)

	for _, tc := range []struct {
		name, input string
		want        []string // each record's source, and "!" after a rejected one's; nil: the List's items
	}{
		{"a compact List first", list.String() + "\n", nil},
		{"a long line among JSON lines", event + "\n" + list.String() + "\n" + event + "\n", slices.Concat([]string{"in:1"}, itemSources("in:2", pods), []string{"in:3"})},
		// Garbage too long for a line first used to take the input for
		// one YAML document, rejected whole with every line after it.
		{"garbage first, then JSON lines", garbage + "\n" + event + "\n" + event + "\n", []string{"in:1!", "in:2", "in:3"}},
		{"garbage that starts like JSON first, then JSON lines", "{" + garbage + "\n" + event + "\n", []string{"in:1!", "in:2"}},
		{"garbage first, then YAML", garbage + "\n\napiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: b}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: c, namespace: b}\n", []string{"in:1!", "in:3", "in:7"}},
		{"garbage alone, with no newline", garbage, []string{"in:1!"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parsedSources(t, tc.input)
			want := tc.want
			if want == nil {
				want = itemSources("in:1", pods)
			}
			if g, w := got, strings.Join(want, " "); g != w {
				t.Errorf("records %.300s..., want %d: %.300s...", g, len(want), w)
			}
		})
	}
}

// TestParseJSONLinesAfterAByteOrderMark reads JSON lines saved with a
// byte order mark first, as some editors save them, in UTF-16, as
// PowerShell's > saves kubectl's output, and gzipped: every line is read.
// They used to go to the YAML reader, which kept the first object and
// dropped the others without a trace. In YAML, objects one per line with
// no "---" between them are now refused, not cut to the first.
func TestParseJSONLinesAfterAByteOrderMark(t *testing.T) {
	lines := `{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n"}}}
{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"n"}}}
{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n"}}}
`
	for _, tc := range []struct {
		name, input string
		want        string
	}{
		{"JSON lines after a byte order mark", "\xef\xbb\xbf" + lines, "in:1 in:2 in:3"},
		{"JSON lines in UTF-16, little-endian", utf16(lines, false), "in:1 in:2 in:3"},
		{"JSON lines in UTF-16, big-endian", utf16(lines, true), "in:1 in:2 in:3"},
		{"JSON lines gzipped", gzipped(lines), "in:1 in:2 in:3"},
		{"UTF-16 gzipped", gzipped(utf16(lines, false)), "in:1 in:2 in:3"},
		{"YAML holding JSON objects one per line", "# objects\n---\n" + lines, "in:3!"},
		{"YAML documents ended by ... alone", "kind: ConfigMap\napiVersion: v1\nmetadata: {name: a, namespace: n}\n...\nkind: ConfigMap\napiVersion: v1\nmetadata: {name: b, namespace: n}\n", "in:1 in:5"},
		{"YAML documents ended by ... and separated by ---", "kind: ConfigMap\napiVersion: v1\nmetadata: {name: a, namespace: n}\n...\n---\nkind: ConfigMap\napiVersion: v1\nmetadata: {name: b, namespace: n}\n", "in:1 in:6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parsedSources(t, tc.input)
			if got != tc.want {
				t.Errorf("records %s, want %s", got, tc.want)
			}
		})
	}
}

// itemSources are the sources of the n items of a List at source.
func itemSources(source string, n int) []string {
	var s []string
	for i := range n {
		s = append(s, fmt.Sprintf("%s[%d]", source, i))
	}
	return s
}

// utf16 is s in UTF-16 with its byte order mark.
func utf16(s string, bigEndian bool) string {
	var b []byte
	for _, u := range append([]uint16{0xfeff}, utf16enc.Encode([]rune(s))...) {
		if bigEndian {
			b = append(b, byte(u>>8), byte(u))
		} else {
			b = append(b, byte(u), byte(u>>8))
		}
	}
	return string(b)
}

// gzipped is s compressed with gzip.
func gzipped(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.String()
}

// parsedSources parses input, named "in", and returns its records'
// sources in order, each followed by "!" when the record was rejected.
func parsedSources(t *testing.T, input string) string {
	t.Helper()
	var got []string
	err := ingest.Parse("in", strings.NewReader(input), func(r ingest.Record) error {
		s := r.Source
		if r.Err != nil {
			s += "!"
		}
		got = append(got, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(got, " ")
}
