package ingest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/quotaledger/quota/ledger/object"
)

// Limits of parsing.
const (
	// LineBytesMax is the longest JSON line read: the largest object plus
	// room for the watch event around it.
	LineBytesMax = object.SizeMax + 64<<10
	// DocumentBytesMax is the largest multi-line JSON or YAML file read.
	// JSON lines are streamed and have no such limit.
	DocumentBytesMax = 256 << 20
	// ListItemsMax is the largest number of items one List may hold.
	ListItemsMax = 1_000_000
)

// Watch event types, as the API server spells them.
const (
	WatchAdded    = "ADDED"
	WatchModified = "MODIFIED"
	WatchDeleted  = "DELETED"
	WatchBookmark = "BOOKMARK"
	WatchError    = "ERROR"
)

// Record is one unit of input: a watch event, or a plain object (which
// counts as ADDED), or input that could not be read as either (Err set).
type Record struct {
	// Source is "FILE:LINE", or "FILE:LINE[i]" for item i of a List.
	Source string
	// Type is the watch event type; WatchAdded for plain objects.
	Type string
	// Object is the object's JSON; empty when Err is set.
	Object json.RawMessage
	// Raw is the input text of the record, kept for the dead-letter stream.
	Raw []byte
	// Err says why the record cannot be used.
	Err error
}

// Parse reads the input named name and calls fn with each record in input
// order. The format is detected from the first non-blank line:
//
//   - a line starting with '{' that is not just "{": JSON lines, one watch
//     event or object per line (what `kubectl get --raw '...?watch=true'`
//     prints); streamed, and a bad line does not stop the lines after it;
//   - a line that is just "{", or one starting with '[': JSON documents
//     (`kubectl get -o json`), one or more objects, possibly pretty-printed;
//   - anything else: YAML, one or more documents separated by "---".
//
// In any format an object whose kind ends in "List" and that has items is
// unpacked into its items. Parse returns fn's first error, or a read error;
// input it cannot use is passed to fn as a Record with Err set, never
// dropped.
func Parse(name string, r io.Reader, fn func(Record) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var head bytes.Buffer // blank lines before the first content line
	lineNo := 0
	for {
		line, tooLong, err := readLine(br)
		if len(line) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				return nil // empty input
			}
			return fmt.Errorf("read %s: %w", name, err)
		}
		lineNo++
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			head.Write(line)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", name, err)
			}
			continue
		}
		p := &parser{name: name, fn: fn}
		switch {
		case trimmed[0] == '{' && !bytes.Equal(trimmed, []byte("{")):
			return p.jsonLines(br, line, tooLong, lineNo, err)
		case trimmed[0] == '{' || trimmed[0] == '[':
			data, rerr := readDocument(&head, line, br, err)
			if rerr != nil {
				return p.documentError(name, lineNo, rerr)
			}
			return p.jsonDocuments(data, 1)
		default:
			data, rerr := readDocument(&head, line, br, err)
			if rerr != nil {
				return p.documentError(name, lineNo, rerr)
			}
			return p.yamlDocuments(data)
		}
	}
}

type parser struct {
	name string
	fn   func(Record) error
}

func (p *parser) source(line int) string { return fmt.Sprintf("%s:%d", p.name, line) }

func (p *parser) reject(source string, raw []byte, err error) error {
	return p.fn(Record{Source: source, Raw: raw, Err: err})
}

// documentError reports a document that could not be read whole: too large
// is a rejection of the file; any other error is a read failure.
func (p *parser) documentError(name string, line int, err error) error {
	if errors.Is(err, ErrDocumentTooLarge) {
		return p.reject(p.source(line), nil, fmt.Errorf("%w: more than %d bytes; split it or use JSON lines", ErrDocumentTooLarge, DocumentBytesMax))
	}
	return fmt.Errorf("read %s: %w", name, err)
}

// readLine returns the next line with its newline, at most LineBytesMax
// bytes of it; tooLong reports that the rest was discarded.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) <= LineBytesMax {
			buf = append(buf, chunk...)
		} else {
			tooLong = true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return buf, tooLong, err
	}
}

// readDocument returns the whole input: what was read so far and the rest,
// failing with ErrDocumentTooLarge above DocumentBytesMax.
func readDocument(head *bytes.Buffer, line []byte, br *bufio.Reader, lineErr error) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write(head.Bytes())
	buf.Write(line)
	if lineErr != nil && !errors.Is(lineErr, io.EOF) {
		return nil, lineErr
	}
	if lineErr == nil {
		n, err := io.Copy(&buf, io.LimitReader(br, DocumentBytesMax+1))
		if err != nil {
			return nil, err
		}
		_ = n
	}
	if buf.Len() > DocumentBytesMax {
		return nil, ErrDocumentTooLarge
	}
	return buf.Bytes(), nil
}

// jsonLines handles JSON lines from the first content line on.
func (p *parser) jsonLines(br *bufio.Reader, line []byte, tooLong bool, lineNo int, err error) error {
	for {
		if trimmed := bytes.TrimSpace(line); tooLong {
			if ferr := p.reject(p.source(lineNo), trimmed, fmt.Errorf("%w: more than %d bytes", ErrLineTooLong, LineBytesMax)); ferr != nil {
				return ferr
			}
		} else if len(trimmed) > 0 {
			if ferr := p.value(p.source(lineNo), trimmed); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", p.name, err)
		}
		line, tooLong, err = readLine(br)
		if len(line) == 0 && errors.Is(err, io.EOF) {
			return nil
		}
		lineNo++
	}
}

// jsonDocuments handles a sequence of JSON values, possibly spread over
// many lines; firstLine is the line number of data's first byte. A syntax
// error ends the input: the decoder cannot find the next value after it, so
// the rest of the input is rejected as one record.
func (p *parser) jsonDocuments(data []byte, firstLine int) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		offset := int(dec.InputOffset())
		start := offset + leadingSpace(data[offset:])
		if start >= len(data) {
			return nil
		}
		line := firstLine + bytes.Count(data[:start], []byte("\n"))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return p.reject(p.source(line), bytes.TrimSpace(data[start:]), fmt.Errorf("%w: %v (the rest of the input from this line is not read)", ErrBadJSON, err))
		}
		if err := p.value(p.source(line), raw); err != nil {
			return err
		}
	}
}

func leadingSpace(b []byte) int {
	return len(b) - len(bytes.TrimLeft(b, " \t\r\n"))
}

// yamlDocuments splits data into YAML documents on "---" and "..." lines
// and handles each; a document's source line is its first line that is
// neither blank nor a comment.
func (p *parser) yamlDocuments(data []byte) error {
	lines := bytes.SplitAfter(data, []byte("\n"))
	var doc bytes.Buffer
	first := 0
	flush := func() error {
		defer func() { doc.Reset(); first = 0 }()
		if first == 0 {
			return nil // only blanks and comments
		}
		src := p.source(first)
		js, err := yaml.YAMLToJSON(doc.Bytes())
		if err != nil {
			return p.reject(src, bytes.TrimSpace(doc.Bytes()), fmt.Errorf("%w: %v", ErrBadYAML, err))
		}
		if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
			return nil
		}
		return p.valueWithRaw(src, js, bytes.TrimSpace(doc.Bytes()))
	}
	for i, l := range lines {
		t := bytes.TrimRight(l, " \t\r\n")
		if isYAMLSeparator(t) {
			if err := flush(); err != nil {
				return err
			}
			// "--- {...}" holds content on the separator line itself.
			if rest := bytes.TrimSpace(bytes.TrimPrefix(t, []byte("---"))); bytes.HasPrefix(t, []byte("---")) && len(rest) > 0 && rest[0] != '#' {
				doc.Write(rest)
				doc.WriteByte('\n')
				first = i + 1
			}
			continue
		}
		doc.Write(l)
		if first == 0 {
			if s := bytes.TrimSpace(l); len(s) > 0 && s[0] != '#' {
				first = i + 1
			}
		}
	}
	return flush()
}

func isYAMLSeparator(t []byte) bool {
	if bytes.Equal(t, []byte("...")) || bytes.Equal(t, []byte("---")) {
		return true
	}
	return bytes.HasPrefix(t, []byte("--- ")) || bytes.HasPrefix(t, []byte("---\t"))
}

// envelope is what value reads to tell a watch event from an object and an
// object from a List.
type envelope struct {
	Type       *string         `json:"type"`
	Object     json.RawMessage `json:"object"`
	Kind       string          `json:"kind"`
	APIVersion string          `json:"apiVersion"`
	Items      json.RawMessage `json:"items"`
}

func (p *parser) value(source string, raw []byte) error {
	return p.valueWithRaw(source, raw, raw)
}

// valueWithRaw handles one JSON value; text is the input as written (the
// YAML text for YAML), kept with rejections.
func (p *parser) valueWithRaw(source string, raw, text []byte) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		if !json.Valid(t) {
			return p.reject(source, text, fmt.Errorf("%w: %v", ErrBadJSON, jsonError(t)))
		}
		what := "a JSON value"
		if len(t) > 0 && t[0] == '[' {
			what = "an array (put objects in a kind: List)"
		}
		return p.reject(source, text, fmt.Errorf("%w: %s", ErrNotKubernetes, what))
	}
	var env envelope
	if err := json.Unmarshal(t, &env); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return p.reject(source, text, fmt.Errorf("%w: field %s is a JSON %s", ErrNotKubernetes, typeErr.Field, typeErr.Value))
		}
		return p.reject(source, text, fmt.Errorf("%w: %v", ErrBadJSON, err))
	}
	switch {
	case env.Kind == "" && env.Object != nil:
		typ := ""
		if env.Type != nil {
			typ = *env.Type
		}
		return p.fn(Record{Source: source, Type: typ, Object: env.Object, Raw: text})
	case strings.HasSuffix(env.Kind, "List") && env.Items != nil:
		return p.list(source, env, text)
	default:
		return p.fn(Record{Source: source, Type: WatchAdded, Object: t, Raw: text})
	}
}

// list hands each item of a List on as an ADDED object. Items of a typed
// list (PodList from the API) carry no kind or apiVersion; they get the
// list's, as the API server means them.
func (p *parser) list(source string, env envelope, text []byte) error {
	var items []json.RawMessage
	if err := json.Unmarshal(env.Items, &items); err != nil {
		return p.reject(source, text, fmt.Errorf("%w: items of %s is not an array", ErrNotKubernetes, env.Kind))
	}
	if len(items) > ListItemsMax {
		return p.reject(source, text, fmt.Errorf("%w: %s holds %d items, at most %d", ErrNotKubernetes, env.Kind, len(items), ListItemsMax))
	}
	itemKind := strings.TrimSuffix(env.Kind, "List")
	for i, item := range items {
		src := fmt.Sprintf("%s[%d]", source, i)
		raw := []byte(item)
		if itemKind != "" {
			raw = withKind(raw, itemKind, env.APIVersion)
		}
		if err := p.valueItem(src, raw); err != nil {
			return err
		}
	}
	return nil
}

// valueItem handles a List item: an object, never a watch event or a
// nested list.
func (p *parser) valueItem(source string, raw []byte) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return p.reject(source, raw, fmt.Errorf("%w: list item is not an object", ErrNotKubernetes))
	}
	return p.fn(Record{Source: source, Type: WatchAdded, Object: t, Raw: t})
}

// withKind sets kind and apiVersion on an object that lacks them.
func withKind(raw []byte, kind, apiVersion string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return raw
	}
	changed := false
	if _, ok := m["kind"]; !ok {
		m["kind"], _ = json.Marshal(kind)
		changed = true
	}
	if _, ok := m["apiVersion"]; !ok && apiVersion != "" {
		m["apiVersion"], _ = json.Marshal(apiVersion)
		changed = true
	}
	if !changed {
		return raw
	}
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

// jsonError returns the syntax error of invalid JSON t.
func jsonError(t []byte) error {
	var v any
	if err := json.Unmarshal(t, &v); err != nil {
		return err
	}
	return errors.New("invalid JSON")
}
