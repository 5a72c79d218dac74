package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	yaml3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// yamlDocuments splits the input into YAML documents on "---" and "..."
// lines and hands each on as soon as its end is read, named by its first
// line that is neither blank nor a comment. first is the input's line
// lineNo, read with firstErr; the lines after it come from br.
func (p *parser) yamlDocuments(lineNo int, first []byte, firstErr error, br *bufio.Reader) error {
	d := &yamlDocument{p: p, lineNo: lineNo - 1}
	line, size, err := first, len(bytes.TrimRight(first, "\r\n")), firstErr
	for {
		if len(line) > 0 {
			if ferr := d.add(line, size > LineBytesMax); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return d.flush()
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", p.name, err)
		}
		line, size, err = readLine(br, LineBytesMax+len("\r\n"))
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
	return p.value(d.start, d.docLine+bytes.Count(lead, []byte("\n")), js, text)
}

func isYAMLSeparator(t []byte) bool {
	if bytes.Equal(t, []byte("...")) || bytes.Equal(t, []byte("---")) {
		return true
	}
	return bytes.HasPrefix(t, []byte("--- ")) || bytes.HasPrefix(t, []byte("---\t"))
}

// OneNode checks that a YAML document holds one node: yaml.YAMLToJSON
// reads the first and silently ignores the rest (JSON objects one per line
// without "---" between them). A document the stricter yaml.v3 cannot
// read at all is left to YAMLToJSON, as kubectl leaves it.
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
