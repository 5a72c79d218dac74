package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// jsonValues reads a sequence of JSON values from r, the first starting on
// the input's line firstLine, and hands each on as soon as the byte that
// closes it arrives, through encoding/json.Decoder's own framing.
//
// Only the recovery from a value that does not parse looks at lines: the
// decoder starts again at the next line that has '{' or '[' in its first
// column, where JSON lines put each record and pretty-printers each
// top-level value. What lies between is one rejection, named by the line
// where the bad value starts.
func (p *parser) jsonValues(r io.Reader, firstLine int) error {
	in := &jsonInput{r: r, lines: firstLine - 1, limit: DocumentBytesMax}
	for {
		resume, err := p.decodeJSON(in)
		if err != nil || !resume {
			return err
		}
	}
}

// decodeJSON decodes values from in with a decoder of its own, until the
// input ends (resume false), or a value that does not parse has been
// rejected and in gives the input from the next record on (resume true).
func (p *parser) decodeJSON(in *jsonInput) (resume bool, err error) {
	dec := json.NewDecoder(in)
	decoderBase := in.given // the input's offset of the decoder's first byte
	for {
		// More reads on to the next value's first byte, so that in holds
		// it and can tell its line.
		more := dec.More()
		start := in.skipSpace(decoderBase + dec.InputOffset())
		line := in.lineAt(start)
		var raw json.RawMessage
		err := dec.Decode(&raw)
		var syntax *json.SyntaxError
		switch {
		case err == nil:
			if err := p.value(line, line, raw, raw); err != nil {
				return false, err
			}
			continue
		case !more && errors.Is(err, io.EOF):
			return false, nil
		case errors.Is(err, ErrDocumentTooLarge):
			return false, p.tooLarge(line)
		case !errors.As(err, &syntax) && !errors.Is(err, io.ErrUnexpectedEOF):
			return false, fmt.Errorf("read %s: %w", p.name, err)
		}
		text, more, rerr := in.skipRecord(start)
		if rerr != nil && !errors.Is(rerr, ErrDocumentTooLarge) {
			return false, fmt.Errorf("read %s: %w", p.name, rerr)
		}
		reason := fmt.Errorf("%w: %v", ErrBadJSON, err)
		if rerr != nil {
			reason = fmt.Errorf("%w: %v; no record starts in the %d bytes after it: the rest of the input is not read", ErrBadJSON, err, DocumentBytesMax)
		}
		if ferr := p.reject(p.source(line), bytes.TrimSpace(text), reason); ferr != nil {
			return false, ferr
		}
		if rerr != nil || !more {
			return false, nil
		}
		return true, nil
	}
}

// jsonInput reads the input on behalf of a JSON decoder, holding what it
// read from the current value's start on: to tell each value's line, and
// to give a new decoder the input from the next record on. It fails reads
// with ErrDocumentTooLarge once it holds more than limit bytes.
type jsonInput struct {
	r     io.Reader
	limit int
	held  []byte // the input from offset base on
	base  int64
	given int64 // the input's offset up to which a decoder has read
	lines int   // newlines before base
}

func (in *jsonInput) Read(b []byte) (int, error) {
	if held := in.base + int64(len(in.held)); in.given < held {
		// After skipRecord: what was read past the skipped record.
		n := copy(b, in.held[in.given-in.base:])
		in.given += int64(n)
		return n, nil
	}
	if len(in.held) > in.limit {
		return 0, ErrDocumentTooLarge
	}
	n, err := in.r.Read(b)
	in.held = append(in.held, b[:n]...)
	in.given += int64(n)
	return n, err
}

// skipSpace returns the offset of the first byte at or after off that is
// not JSON whitespace, among those held.
func (in *jsonInput) skipSpace(off int64) int64 {
	i := int(off - in.base)
	for i < len(in.held) && isJSONSpace(in.held[i]) {
		i++
	}
	return in.base + int64(i)
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// lineAt returns the line (from 1) of offset off, at or after the last
// offset given, and forgets what was read before it.
func (in *jsonInput) lineAt(off int64) int {
	cut := int(off - in.base)
	in.lines += bytes.Count(in.held[:cut], []byte("\n"))
	in.held = append(in.held[:0], in.held[cut:]...)
	in.base = off
	return in.lines + 1
}

// skipRecord skips the record that starts at start, the last offset
// given to lineAt, up to the next line that starts with '{' or '[', or
// the end of the input (more false), and returns its text; the next Read
// starts at that line. Reading more than limit bytes without finding one
// fails with ErrDocumentTooLarge, the text cut there.
func (in *jsonInput) skipRecord(start int64) (text []byte, more bool, err error) {
	from := bytes.IndexByte(in.held, '\n') // where the next line start may be, in held
	if from < 0 {
		from = len(in.held)
	}
	buf := make([]byte, 64<<10)
	for {
		if next := nextRecordLine(in.held, from); next >= 0 {
			text = bytes.Clone(in.held[:next])
			in.given = in.base + int64(next)
			in.lineAt(in.given)
			return text, true, nil
		}
		from = max(len(in.held)-1, from)
		if len(in.held) > in.limit {
			return in.held[:in.limit], false, ErrDocumentTooLarge
		}
		n, err := in.r.Read(buf)
		in.held = append(in.held, buf[:n]...)
		if errors.Is(err, io.EOF) {
			if nextRecordLine(in.held, from) < 0 {
				text = bytes.Clone(in.held)
				in.given = in.base + int64(len(in.held))
				in.lineAt(in.given)
				return text, false, nil
			}
			continue
		}
		if err != nil {
			return in.held, false, err
		}
	}
}

// nextRecordLine returns the index in b of the first line start after
// from whose byte is '{' or '[', or -1.
func nextRecordLine(b []byte, from int) int {
	for i := from; i < len(b)-1; i++ {
		if b[i] == '\n' && (b[i+1] == '{' || b[i+1] == '[') {
			return i + 1
		}
	}
	return -1
}
