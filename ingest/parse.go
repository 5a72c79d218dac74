package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"

	"github.com/quotaledger/quota/ledger/object"
)

// Limits of parsing.
const (
	// LineBytesMax is the longest line of YAML read, and the longest
	// first line of the input that does not start JSON: the largest
	// object plus room for the watch event around it.
	LineBytesMax = object.SizeMax + 64<<10
	// DocumentBytesMax is the largest JSON value or YAML document read;
	// the input as a whole has no limit.
	DocumentBytesMax = 256 << 20
	// ListItemsMax is the largest number of items one List may hold.
	ListItemsMax = 1_000_000
	// rawLineKeptMax is how much of a first line too long to read is
	// kept with its rejection.
	rawLineKeptMax = 64 << 10
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
	// Watched says the record came as a watch event, as an API server
	// sends it: an object of it that names no namespace is cluster-scoped
	// (a plain object that names none takes Options.Namespace).
	Watched bool
	// Object is the object's JSON; empty when Err is set.
	Object json.RawMessage
	// Raw is the input text of the record, kept for the dead-letter stream.
	Raw []byte
	// Err says why the record cannot be used.
	Err error
	// File names the input; Line is the input's line of Raw's first line,
	// zero when Raw's lines are not the input's (a List's item).
	File string
	Line int
	// ListResourceVersion is the metadata.resourceVersion of the List an
	// item came in (as `kubectl get -o json` prints it), "" otherwise.
	ListResourceVersion string
}

// lineSource is "FILE:LINE" for line l of Raw, or Source when that line
// is not known.
func (r Record) lineSource(l int) string {
	if l == 0 || r.Line == 0 {
		return r.Source
	}
	return fmt.Sprintf("%s:%d", r.File, r.Line+l-1)
}

// Parse reads the input named name and calls fn with each record in input
// order, in the formats the package doc describes (# Input). Every format
// is streamed: each value or document is handed on once it has been read
// whole, so a live feed piped in is read as it comes. Parse returns fn's
// first error, or a read error; input it cannot use is passed to fn as a
// Record with Err set, never dropped.
func Parse(name string, r io.Reader, fn func(Record) error) error {
	br, err := Text(r)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	p := &parser{name: name, fn: func(rec Record) error {
		rec.File = name
		return fn(rec)
	}}
	return p.parse(br)
}

// parse tells the format from the first content and reads the input in
// it. A first content line longer than LineBytesMax that does not start
// JSON is garbage for either format: it is rejected alone, and the format
// is told by the next content.
func (p *parser) parse(br *bufio.Reader) error {
	lines := 0 // the input's lines before the current one
	for {
		indent, blank, err := skipBlankLines(br)
		lines += blank
		if errors.Is(err, io.EOF) {
			return nil // empty, or only blank lines
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", p.name, err)
		}
		if c, _ := br.Peek(1); len(indent) <= LineBytesMax && (c[0] == '{' || c[0] == '[') {
			return p.jsonValues(br, lines+1)
		}
		line, size, err := readLine(br, LineBytesMax+len("\r\n"))
		lines++
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read %s: %w", p.name, err)
		}
		if size += len(indent); size <= LineBytesMax {
			return p.yamlDocuments(lines, slices.Concat(indent, line), err, br)
		}
		if ferr := p.rejectLongLine(lines, slices.Concat(indent, line), size); ferr != nil {
			return ferr
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// skipBlankLines reads the blank lines at the head of br, and the blanks
// that start the line after them (kept, at most LineBytesMax+1 of them, as
// indent), up to its first other byte. blank is the number of lines read.
func skipBlankLines(br *bufio.Reader) (indent []byte, blank int, err error) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return indent, blank, err
		}
		switch c {
		case '\n':
			indent, blank = indent[:0], blank+1
		case ' ', '\t', '\r':
			if len(indent) <= LineBytesMax {
				indent = append(indent, c)
			}
		default:
			return indent, blank, br.UnreadByte()
		}
	}
}

// rejectLongLine rejects line lineNo of size bytes, more than
// LineBytesMax, at the start of the input and not JSON.
func (p *parser) rejectLongLine(lineNo int, line []byte, size int) error {
	trimmed := bytes.TrimSpace(line)
	return p.reject(p.source(lineNo), trimmed[:min(len(trimmed), rawLineKeptMax)],
		fmt.Errorf("%w: line %d is %d bytes, at most %d, and not one JSON value: skipped; the lines after it are read", ErrLineTooLong, lineNo, size, LineBytesMax))
}

// utf8BOM is the UTF-8 encoding of U+FEFF, the byte order mark.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// gzipMagic starts every gzip stream.
var gzipMagic = []byte{0x1f, 0x8b}

// Text returns r buffered and read as UTF-8 text: gzip-compressed input is
// decompressed, a UTF-8 byte order mark dropped (it would hide JSON's
// first brace from Parse), and UTF-16 after its mark (PowerShell's >
// writes kubectl's output so) read as the UTF-8 it stands for. The error
// is a gzip header's that cannot be read.
func Text(r io.Reader) (*bufio.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if b, err := br.Peek(len(gzipMagic)); err == nil && bytes.Equal(b, gzipMagic) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	if b, err := br.Peek(len(utf8BOM)); err == nil && bytes.Equal(b, utf8BOM) {
		br.Discard(len(utf8BOM))
	} else if b, err := br.Peek(2); err == nil && (b[0] == 0xff && b[1] == 0xfe || b[0] == 0xfe && b[1] == 0xff) {
		utf16 := unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder()
		br = bufio.NewReaderSize(transform.NewReader(br, utf16), 64<<10)
	}
	return br, nil
}

type parser struct {
	name string
	fn   func(Record) error
}

func (p *parser) source(line int) string { return fmt.Sprintf("%s:%d", p.name, line) }

func (p *parser) reject(source string, raw []byte, err error) error {
	return p.fn(Record{Source: source, Raw: raw, Err: err})
}

// tooLarge rejects a value or document over DocumentBytesMax that starts
// at line.
func (p *parser) tooLarge(line int) error {
	return p.reject(p.source(line), nil, fmt.Errorf("%w: more than %d bytes; split it or use JSON lines", ErrDocumentTooLarge, DocumentBytesMax))
}

// readLine returns the next line of br with its line ending, at most keep
// bytes of it, and the whole line's size without its line ending ("\n" or
// "\r\n"): a size over keep says that the rest was discarded.
func readLine(br *bufio.Reader, keep int) (line []byte, size int, err error) {
	var last [2]byte // the line's last two bytes
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk[:min(len(chunk), keep-min(len(line), keep))]...)
		size += len(chunk)
		for _, c := range chunk[max(len(chunk)-2, 0):] {
			last[0], last[1] = last[1], c
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if last[1] == '\n' {
			size--
			if last[0] == '\r' && size > 0 {
				size--
			}
		}
		return line, size, err
	}
}

// envelope is what value reads to tell a watch event from an object and an
// object from a List.
type envelope struct {
	Type       *string         `json:"type"`
	Object     json.RawMessage `json:"object"`
	Kind       string          `json:"kind"`
	APIVersion string          `json:"apiVersion"`
	Items      json.RawMessage `json:"items"`
	Metadata   struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

// value handles one JSON value starting at line; text is the input as
// written (the YAML text for YAML), kept with rejections, whose first line
// is textLine.
func (p *parser) value(line, textLine int, raw, text []byte) error {
	source := p.source(line)
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		var v any
		if err := json.Unmarshal(t, &v); err != nil {
			return p.reject(source, text, fmt.Errorf("%w: %v", ErrBadJSON, err))
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
		return p.fn(Record{Source: source, Type: typ, Watched: true, Object: env.Object, Raw: text, Line: textLine})
	case strings.HasSuffix(env.Kind, "List") && env.Items != nil:
		return p.list(source, env, text)
	default:
		return p.fn(Record{Source: source, Type: WatchAdded, Object: t, Raw: text, Line: textLine})
	}
}

// list hands each item of a List on as an ADDED object, never a watch
// event or a nested list. Items of a typed list (PodList from the API)
// carry no kind or apiVersion; they get the list's, as the API server
// means them.
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
		// json.Unmarshal gives each item without the blanks around it.
		rec := Record{Source: src, Type: WatchAdded, Object: raw, Raw: raw, ListResourceVersion: env.Metadata.ResourceVersion}
		if raw[0] != '{' {
			rec = Record{Source: src, Raw: raw, Err: fmt.Errorf("%w: list item is not an object", ErrNotKubernetes)}
		}
		if err := p.fn(rec); err != nil {
			return err
		}
	}
	return nil
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
