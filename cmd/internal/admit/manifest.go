package admit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/quotaledger/quota/ingest"
)

// ManifestSizeMax bounds a manifest given to admit, as the API server
// bounds a request body.
const ManifestSizeMax = 3 << 20

// ManifestName is how messages name the manifest file.
func ManifestName(file string) string {
	if file == "-" {
		return "standard input"
	}
	return file
}

// ReadManifest reads the one object of a JSON or YAML file ("-": standard
// input) and returns it as JSON, and the text it was read from. A file
// with no object, with several (YAML documents separated by "---"), or
// holding a list is refused: admit decides one create.
func ReadManifest(file string) (object, text []byte, err error) {
	in := io.Reader(os.Stdin)
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		in = f
	}
	r, err := ingest.Text(in)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	if text, err = io.ReadAll(io.LimitReader(r, ManifestSizeMax+1)); err != nil {
		return nil, nil, err
	}
	name := ManifestName(file)
	if len(text) > ManifestSizeMax {
		return nil, nil, fmt.Errorf("%s: larger than %d bytes", name, ManifestSizeMax)
	}
	objects, err := documents(name, text)
	if err != nil {
		return nil, nil, err
	}
	object, err = oneObject(name, objects)
	if err != nil {
		return nil, nil, err
	}
	return object, text, nil
}

// documents returns the objects of the YAML (or JSON) documents of text,
// as JSON.
func documents(name string, text []byte) ([][]byte, error) {
	var objects [][]byte
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(text)))
	// n numbers the documents with content, as a reader of the file
	// counts them: the empty one before a leading "---" is not one.
	for n := 0; ; {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return objects, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if blankYAML(doc) {
			continue
		}
		n++
		if err := ingest.OneNode(doc); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, n, err)
		}
		raw, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: not JSON or YAML: %w", name, n, err)
		}
		if string(raw) == "null" {
			continue // an empty document, as between two "---" lines
		}
		objects = append(objects, raw)
	}
}

// oneObject returns the one object among objects, refusing none, several,
// a value that is not an object, and a List.
func oneObject(name string, objects [][]byte) ([]byte, error) {
	switch len(objects) {
	case 0:
		return nil, fmt.Errorf("%s: no object in it", name)
	case 1:
	default:
		return nil, fmt.Errorf("%s: %d objects in it; admit decides one at a time", name, len(objects))
	}
	obj := objects[0]
	if obj[0] != '{' {
		return nil, fmt.Errorf("%s: not an object: a manifest is a mapping with apiVersion, kind and metadata", name)
	}
	var list struct {
		Kind  string          `json:"kind"`
		Items json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(obj, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if list.Items != nil && strings.HasSuffix(list.Kind, "List") {
		return nil, fmt.Errorf("%s: a %s, not one object; admit decides one at a time", name, list.Kind)
	}
	return obj, nil
}

// blankYAML reports whether a YAML document holds only blank lines,
// comments and document markers.
func blankYAML(doc []byte) bool {
	for line := range bytes.SplitSeq(doc, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) {
			return false
		}
	}
	return true
}
