package admit_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/quotaledger/quota/cmd/internal/admit"
)

// TestReadManifest holds ReadManifest to one object: a file
// with none, several or a list of them is refused with a message saying
// so, where only its first document used to be decided.
func TestReadManifest(t *testing.T) {
	const pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: app\n    image: x\n"
	for _, tc := range []struct {
		name, content string
		// wantName is the object's name when it is read; wantErr a part of
		// the error otherwise.
		wantName, wantErr string
	}{
		{name: "yaml", content: pod, wantName: "web"},
		{name: "json", content: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"api"}}`, wantName: "api"},
		{name: "separators around one document", content: "---\n" + pod + "---\n", wantName: "web"},
		{name: "a comment and one document", content: "# the web pod\n" + pod, wantName: "web"},
		{name: "two documents", content: pod + "---\n" + strings.Replace(pod, "web", "api", 1), wantErr: "2 objects in it; admit decides one at a time"},
		{name: "a List", content: `{"apiVersion":"v1","kind":"List","items":[]}`, wantErr: "a List, not one object"},
		{name: "a PodList", content: "apiVersion: v1\nkind: PodList\nitems: []\n", wantErr: "a PodList, not one object"},
		{name: "empty", content: "", wantErr: "no object in it"},
		{name: "separators only", content: "---\n---\n", wantErr: "no object in it"},
		{name: "an array", content: "[1, 2]", wantErr: "not an object"},
		{name: "a scalar", content: "pod", wantErr: "not an object"},
		{name: "bad YAML", content: "not: [valid", wantErr: "document 1: not JSON or YAML"},
		{name: "bad YAML after a leading separator", content: "# broken\n---\nnot: [valid", wantErr: "document 1: not JSON or YAML"},
		{name: "bad YAML second", content: "---\n" + pod + "---\nnot: [valid", wantErr: "document 2: not JSON or YAML"},
		{name: "two JSON objects without a separator", content: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"api"}}` + "\n" + `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"}}`, wantErr: "a second object needs a \"---\" line before it"},
		{name: "after a byte order mark", content: "\xef\xbb\xbf" + pod, wantName: "web"},
		{name: "two documents, the first ended by ...", content: pod + "...\n" + strings.Replace(pod, "web", "api", 1), wantErr: "a second object needs a \"---\" line before it"},
		{name: "UTF-16, as PowerShell saves it", content: string(utf16LE(pod)), wantName: "web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "manifest.yaml")
			if err := os.WriteFile(file, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			raw, _, err := admit.ReadManifest(file)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), file+": ") {
					t.Fatalf("ReadManifest = %s, %v; want an error naming the file and %q", raw, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var o struct {
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(raw, &o); err != nil || o.Metadata.Name != tc.wantName {
				t.Fatalf("ReadManifest = %s (%v); want the object named %q", raw, err, tc.wantName)
			}
		})
	}
}

// utf16LE is s in UTF-16, little-endian, after its byte order mark.
func utf16LE(s string) []byte {
	var b []byte
	for _, u := range append([]uint16{0xfeff}, utf16.Encode([]rune(s))...) {
		b = append(b, byte(u), byte(u>>8))
	}
	return b
}
