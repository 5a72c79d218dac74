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

	yaml3 "go.yaml.in/yaml/v3"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
	"sigs.k8s.io/yaml"

	"github.com/quotaledger/quota/ledger/object"
)

// Limits of parsing.
const (
	// LineBytesMax is the longest JSON line read: the largest object plus
	// room for the watch event around it.
	LineBytesMax = object.SizeMax + 64<<10
	// DocumentBytesMax is the largest multi-line JSON value or YAML
	// document read. Every format is streamed: the input as a whole has no
	// limit.
	DocumentBytesMax = 256 << 20
	// ListItemsMax is the largest number of items one List may hold.
	ListItemsMax = 1_000_000
	// rawLineKeptMax is how much of a line too long to read is kept with
	// its rejection.
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
// order. The format is detected from the first non-blank line:
//
//   - a line starting with '{' that is not just "{": JSON lines, one watch
//     event or object per line (what `kubectl get --raw '...?watch=true'`
//     prints); streamed, and a bad line does not stop the lines after it;
//   - a line that is just "{", or one starting with '[': JSON documents
//     (`kubectl get -o json`, or a watch's `kubectl get -w
//     --output-watch-events -o json`), one or more objects or watch
//     events, possibly pretty-printed;
//   - anything else: YAML, one or more documents separated by "---".
//
// Every format is streamed: each value or document is handed on once it
// has been read whole, so a live feed piped in is read as it comes.
//
// In any format an object whose kind ends in "List" and that has items is
// unpacked into its items. Parse returns fn's first error, or a read error;
// input it cannot use is passed to fn as a Record with Err set, never
// dropped.
func Parse(name string, r io.Reader, fn func(Record) error) error {
	br, err := Text(r)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	p := &parser{name: name, fn: func(rec Record) error {
		rec.File = name
		return fn(rec)
	}}
	var head bytes.Buffer // blank lines before the first content line
	lineNo := 0
	for {
		// The first content line may be a whole document (a compact
		// List, an array): it is read up to the largest document, where
		// the lines after it are held to the largest JSON line.
		line, over, err := readLineMax(br, DocumentBytesMax)
		tooLong := over || len(line) > LineBytesMax
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
		switch {
		case trimmed[0] == '{' && !bytes.Equal(trimmed, []byte("{")) && (!tooLong || over):
			// JSON lines (a line over the largest document among them is
			// rejected alone).
			return p.jsonLines(br, line, tooLong, lineNo, err)
		case err != nil && !errors.Is(err, io.EOF):
			return fmt.Errorf("read %s: %w", name, err)
		case trimmed[0] == '[' && over:
			return p.reject(p.source(lineNo), nil, fmt.Errorf("%w: line %d is more than %d bytes", ErrDocumentTooLarge, lineNo, DocumentBytesMax))
		case tooLong && !((trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed)):
			// Not one JSON value (a compact List) and too long for any
			// line of the formats: garbage, rejected alone, so that it
			// does not hide the lines after it. The format is told by
			// the next content line.
			if ferr := p.rejectLongLine(lineNo, line, over); ferr != nil {
				return ferr
			}
			// A blank line in its place keeps the lines after it
			// numbered as in the input.
			head.WriteByte('\n')
			if errors.Is(err, io.EOF) {
				return nil
			}
			continue
		case trimmed[0] == '{' || trimmed[0] == '[':
			// A value spread over lines, or one line longer than a JSON
			// line may be: the lines read so far, then the rest.
			return p.jsonDocuments(io.MultiReader(bytes.NewReader(slices.Concat(head.Bytes(), line)), br))
		default:
			if tooLong {
				line = line[:min(len(line), LineBytesMax)]
			}
			return p.yamlDocuments(head.Bytes(), line, tooLong, err, br)
		}
	}
}

// rejectLongLine rejects line lineNo, longer than LineBytesMax and not
// one JSON value; over says it is longer than DocumentBytesMax, and cut
// there.
func (p *parser) rejectLongLine(lineNo int, line []byte, over bool) error {
	size := fmt.Sprintf("%d bytes", len(bytes.TrimRight(line, "\r\n")))
	if over {
		size = fmt.Sprintf("more than %d bytes", DocumentBytesMax)
	}
	trimmed := bytes.TrimSpace(line)
	return p.reject(p.source(lineNo), trimmed[:min(len(trimmed), rawLineKeptMax)],
		fmt.Errorf("%w: line %d is %s, at most %d, and not one JSON value: skipped; the lines after it are read", ErrLineTooLong, lineNo, size, LineBytesMax))
}

// utf8BOM is the UTF-8 encoding of U+FEFF, the byte order mark.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// gzipMagic starts every gzip stream.
var gzipMagic = []byte{0x1f, 0x8b}

// Text returns r buffered and read as UTF-8 text. Gzip-compressed input
// (an archive of watch events, events.jsonl.gz) is decompressed. A byte
// order mark (what some editors save first) is not content: left in, it
// would hide JSON's first brace from Parse's detection of the format.
// UTF-16, which its mark announces (PowerShell's > writes kubectl's
// output so), is read as the UTF-8 it stands for. Other input is read as
// it is. The error is a gzip header's that cannot be read.
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

// readLine returns the next line with its newline, at most LineBytesMax
// bytes of it; tooLong reports that the rest was discarded.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	return readLineMax(br, LineBytesMax)
}

// readLineMax is readLine with max in place of LineBytesMax.
func readLineMax(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) <= max {
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

// jsonLines handles JSON lines from the first content line on.
func (p *parser) jsonLines(br *bufio.Reader, line []byte, tooLong bool, lineNo int, err error) error {
	for {
		if trimmed := bytes.TrimSpace(line); tooLong {
			if ferr := p.reject(p.source(lineNo), trimmed, fmt.Errorf("%w: more than %d bytes", ErrLineTooLong, LineBytesMax)); ferr != nil {
				return ferr
			}
		} else if len(trimmed) > 0 {
			if ferr := p.value(lineNo, trimmed); ferr != nil {
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
// many lines, read from r as they arrive. A syntax error ends the input:
// the decoder cannot find the next value after it, so the rest of the
// input is rejected as one record.
func (p *parser) jsonDocuments(r io.Reader) error {
	lt := &lineTracker{r: r, limit: DocumentBytesMax}
	dec := json.NewDecoder(lt)
	for {
		// More reads on to the next value's first byte, so that the
		// tracker holds it.
		more := dec.More()
		start := lt.skipSpace(dec.InputOffset())
		line := lt.lineAt(start)
		var raw json.RawMessage
		err := dec.Decode(&raw)
		switch {
		case !more && errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, ErrDocumentTooLarge):
			return p.tooLarge(line)
		case err == nil:
			if err := p.value(line, raw); err != nil {
				return err
			}
			continue
		}
		var syntax *json.SyntaxError
		if !errors.As(err, &syntax) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("read %s: %w", p.name, err)
		}
		rest, rerr := lt.rest(start)
		if rerr != nil && !errors.Is(rerr, ErrDocumentTooLarge) {
			return fmt.Errorf("read %s: %w", p.name, rerr)
		}
		return p.reject(p.source(line), bytes.TrimSpace(rest), fmt.Errorf("%w: %v (the rest of the input from this line is not read)", ErrBadJSON, err))
	}
}

// lineTracker reads on behalf of a JSON decoder and keeps what was read
// from the last value's start on, to tell the line a value starts on and
// to hand over the rest of the input after a syntax error. It fails reads
// with ErrDocumentTooLarge once it holds more than limit bytes: one value
// over the limit.
type lineTracker struct {
	r     io.Reader
	limit int
	held  []byte // read from offset base on
	base  int64
	lines int // newlines before base
}

func (t *lineTracker) Read(b []byte) (int, error) {
	if len(t.held) > t.limit {
		return 0, ErrDocumentTooLarge
	}
	n, err := t.r.Read(b)
	t.held = append(t.held, b[:n]...)
	return n, err
}

// skipSpace returns the offset of the first byte at or after off that is
// not JSON whitespace, among those read.
func (t *lineTracker) skipSpace(off int64) int64 {
	i := int(off - t.base)
	for i < len(t.held) && (t.held[i] == ' ' || t.held[i] == '\t' || t.held[i] == '\r' || t.held[i] == '\n') {
		i++
	}
	return t.base + int64(i)
}

// lineAt returns the line (from 1) of offset off, which no earlier call
// passed, and forgets what was read before it.
func (t *lineTracker) lineAt(off int64) int {
	cut := int(off - t.base)
	t.lines += bytes.Count(t.held[:cut], []byte("\n"))
	t.held = append(t.held[:0], t.held[cut:]...)
	t.base = off
	return t.lines + 1
}

// rest returns what was read from off, the last offset given to lineAt,
// and the input after it: at most limit bytes in all, more making it fail
// with ErrDocumentTooLarge.
func (t *lineTracker) rest(off int64) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write(t.held[int(off-t.base):])
	room := int64(max(t.limit-buf.Len(), 0))
	if _, err := io.Copy(&buf, io.LimitReader(t.r, room+1)); err != nil {
		return buf.Bytes(), err
	}
	if buf.Len() > t.limit {
		return buf.Bytes()[:t.limit], ErrDocumentTooLarge
	}
	return buf.Bytes(), nil
}

// yamlDocuments splits the input into YAML documents on "---" and "..."
// lines and handles each as soon as its end is read; a document's source
// line is its first line that is neither blank nor a comment. head holds
// the blank lines before the first content line, first; firstTooLong and
// firstErr are what reading first returned; then lines come from br.
func (p *parser) yamlDocuments(head, first []byte, firstTooLong bool, firstErr error, br *bufio.Reader) error {
	d := &yamlDocument{p: p}
	for _, l := range bytes.SplitAfter(head, []byte("\n")) {
		if len(l) > 0 {
			if err := d.add(l, false); err != nil {
				return err
			}
		}
	}
	line, tooLong, err := first, firstTooLong, firstErr
	for {
		if len(line) > 0 {
			if ferr := d.add(line, tooLong); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return d.flush()
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", p.name, err)
		}
		line, tooLong, err = readLine(br)
	}
}

// yamlDocument is the YAML document being read, line by line.
type yamlDocument struct {
	p      *parser
	lineNo int // the input's last line read
	doc    bytes.Buffer
	// start is the document's source line, 0 while it has none; docLine
	// the line of doc's first line.
	start, docLine int
	// over says the document is over DocumentBytesMax; long is the first
	// line of it over LineBytesMax.
	over bool
	long int
}

// add takes the input's next line; tooLong says it was cut at
// LineBytesMax.
func (d *yamlDocument) add(l []byte, tooLong bool) error {
	d.lineNo++
	t := bytes.TrimRight(l, " \t\r\n")
	if isYAMLSeparator(t) {
		if err := d.flush(); err != nil {
			return err
		}
		// "--- {...}" holds content on the separator line itself.
		if rest := bytes.TrimSpace(bytes.TrimPrefix(t, []byte("---"))); bytes.HasPrefix(t, []byte("---")) && len(rest) > 0 && rest[0] != '#' {
			d.doc.Write(rest)
			d.doc.WriteByte('\n')
			d.start, d.docLine = d.lineNo, d.lineNo
		}
		return nil
	}
	if tooLong && d.long == 0 {
		d.long = d.lineNo
	}
	if d.doc.Len()+len(l) > DocumentBytesMax {
		d.over = true
		d.doc.Reset() // kept from growing; the document is rejected whole
	}
	if !d.over {
		if d.doc.Len() == 0 {
			d.docLine = d.lineNo
		}
		d.doc.Write(l)
	}
	if d.start == 0 {
		if s := bytes.TrimSpace(l); len(s) > 0 && s[0] != '#' {
			d.start = d.lineNo
		}
	}
	return nil
}

// flush hands on the document read so far, if it has content, and starts
// the next.
func (d *yamlDocument) flush() error {
	defer func() { d.doc.Reset(); d.start, d.over, d.long = 0, false, 0 }()
	p := d.p
	if d.start == 0 {
		return nil // only blanks and comments
	}
	src := p.source(d.start)
	if d.over {
		return p.tooLarge(d.start)
	}
	// The record outlives doc's buffer, which the next document reuses:
	// it keeps a copy of the text.
	raw := bytes.Clone(d.doc.Bytes())
	text := bytes.TrimSpace(raw)
	if d.long != 0 {
		return p.reject(src, text, fmt.Errorf("%w: line %d is more than %d bytes", ErrDocumentTooLarge, d.long, LineBytesMax))
	}
	if err := OneNode(raw); err != nil {
		return p.reject(src, text, fmt.Errorf("%w: %v", ErrBadYAML, err))
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return p.reject(src, text, fmt.Errorf("%w: %v", ErrBadYAML, err))
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil
	}
	// The line of the text's first line, before which TrimSpace took only
	// blank lines.
	lead := raw[:len(raw)-len(bytes.TrimLeft(raw, " \t\r\n"))]
	return p.valueWithRaw(d.start, d.docLine+bytes.Count(lead, []byte("\n")), js, text)
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

func (p *parser) value(line int, raw []byte) error {
	return p.valueWithRaw(line, line, raw, raw)
}

// valueWithRaw handles one JSON value starting at line; text is the input
// as written (the YAML text for YAML), kept with rejections, whose first
// line is textLine.
func (p *parser) valueWithRaw(line, textLine int, raw, text []byte) error {
	source := p.source(line)
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
		return p.fn(Record{Source: source, Type: typ, Watched: true, Object: env.Object, Raw: text, Line: textLine})
	case strings.HasSuffix(env.Kind, "List") && env.Items != nil:
		return p.list(source, env, text)
	default:
		return p.fn(Record{Source: source, Type: WatchAdded, Object: t, Raw: text, Line: textLine})
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

// OneNode checks that a YAML document holds one node. yaml.YAMLToJSON
// reads the first and ignores what follows it in the document, so that
// JSON objects one per line without "---" between them would lose all but
// the first without a trace. Only that is refused here: a document the
// stricter yaml.v3 cannot read at all is left to YAMLToJSON, as kubectl
// leaves it.
func OneNode(doc []byte) error {
	dec := yaml3.NewDecoder(bytes.NewReader(doc))
	var first, second yaml3.Node
	if dec.Decode(&first) != nil {
		return nil
	}
	err := dec.Decode(&second)
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err == nil {
		err = errors.New("a second document")
	}
	return fmt.Errorf("%v (after the document's first value; a second object needs a \"---\" line before it)", err)
}
