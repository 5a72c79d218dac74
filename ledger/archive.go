package ledger

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// The archive: where events go before they leave the stream.
//
// An archive is a directory of segments, each a gzip file of JSON lines,
// one stored event per line in the stream's order: its sequence, the time
// the stream stored it, its subject, and the event in its own encoding
// (archivedRecord). A segment is named by its first and last sequence and
// time, so a listing of the directory says what it covers:
//
//	events-00000000000000000001-00000000000000041234-20261128T095609.123456789Z-20261201T101500.000000000Z.jsonl.gz
//
// Beside the segments the archive keeps checkpoints its writer hands it,
// opaque bytes to this package (a projection's file), each named by the
// sequence and time of the state it holds: a segment that starts at seq N
// is folded onto the checkpoint at N-1.
//
// Segments may overlap (a round that wrote a segment and crashed before
// the stream was purged writes its events again): a reader takes each
// sequence once.

// Limits of the archive.
const (
	// ArchiveSegmentEventsMax bounds the events of one segment: about half
	// a gigabyte of JSON before compression.
	ArchiveSegmentEventsMax = 1_000_000
	// ArchiveLineMax bounds one line of a segment: an event of the largest
	// size a stream takes, escaped.
	ArchiveLineMax = 2*MaxMsgSizeLimit + 4096
	// archiveTimeLayout is the time in file names: sortable, no colons.
	archiveTimeLayout = "20060102T150405.000000000Z"
	// archiveTempPrefix starts the name of a file being written.
	archiveTempPrefix = ".tmp-"
)

var (
	segmentName    = regexp.MustCompile(`^events-(\d{20})-(\d{20})-(\d{8}T\d{6}\.\d{9}Z)-(\d{8}T\d{6}\.\d{9}Z)\.jsonl\.gz$`)
	checkpointName = regexp.MustCompile(`^checkpoint-(\d{20})-(\d{8}T\d{6}\.\d{9}Z)-([A-Za-z0-9.]+)\.gz$`)
	checkpointTag  = regexp.MustCompile(`^[A-Za-z0-9.]+$`)
)

// Archive is a directory of archived events. It is safe for concurrent
// reads; writes (Copy, PutCheckpoint) are made by one writer at a time.
type Archive struct {
	dir string
}

// ArchiveSegment describes one segment of an archive.
type ArchiveSegment struct {
	Name      string    `json:"name"`
	FirstSeq  uint64    `json:"firstSeq"`
	LastSeq   uint64    `json:"lastSeq"`
	FirstTime time.Time `json:"firstTime"`
	LastTime  time.Time `json:"lastTime"`
	Bytes     int64     `json:"bytes"`
}

// ArchiveCheckpoint describes one checkpoint kept in an archive: the state
// after the event at Seq, stored at Time.
type ArchiveCheckpoint struct {
	Name string    `json:"name"`
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// Tag is what its writer said of it (a projection's layout and rules).
	Tag   string `json:"tag"`
	Bytes int64  `json:"bytes"`
}

// archivedRecord is one line of a segment. Event holds the event's bytes
// as the stream stored them when they are JSON, which every event this
// package writes is; Data holds any other bytes (a record that never
// decoded), so that nothing the stream held is lost.
type archivedRecord struct {
	Seq     uint64          `json:"seq"`
	Time    time.Time       `json:"time"`
	Subject string          `json:"subject"`
	Event   json.RawMessage `json:"event,omitempty"`
	Data    []byte          `json:"data,omitempty"`
}

// OpenArchive opens the archive in dir, creating the directory when
// create is set; without it a missing directory is an error.
func OpenArchive(dir string, create bool) (*Archive, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: no directory", ErrArchive)
	}
	if create {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("archive %s: %w", dir, err)
		}
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("archive %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrArchive, dir)
	}
	return &Archive{dir: dir}, nil
}

// Dir returns the archive's directory.
func (a *Archive) Dir() string { return a.dir }

// Segments returns the archive's segments ordered by first sequence (the
// longer first on a tie). Files of other names are left out.
func (a *Archive) Segments() ([]ArchiveSegment, error) {
	var out []ArchiveSegment
	err := a.list(segmentName, func(m []string, size int64) error {
		first, _ := strconv.ParseUint(m[1], 10, 64)
		last, _ := strconv.ParseUint(m[2], 10, 64)
		ft, err1 := time.Parse(archiveTimeLayout, m[3])
		lt, err2 := time.Parse(archiveTimeLayout, m[4])
		if err1 != nil || err2 != nil || first == 0 || last < first {
			return fmt.Errorf("%w: %s: a segment's name whose sequences or times do not read", ErrArchive, filepath.Join(a.dir, m[0]))
		}
		out = append(out, ArchiveSegment{Name: m[0], FirstSeq: first, LastSeq: last, FirstTime: ft, LastTime: lt, Bytes: size})
		return nil
	})
	slices.SortFunc(out, func(x, y ArchiveSegment) int {
		return cmp.Or(cmp.Compare(x.FirstSeq, y.FirstSeq), cmp.Compare(y.LastSeq, x.LastSeq))
	})
	return out, err
}

// Checkpoints returns the archive's checkpoints, oldest first.
func (a *Archive) Checkpoints() ([]ArchiveCheckpoint, error) {
	var out []ArchiveCheckpoint
	err := a.list(checkpointName, func(m []string, size int64) error {
		seq, _ := strconv.ParseUint(m[1], 10, 64)
		t, err := time.Parse(archiveTimeLayout, m[2])
		if err != nil {
			return fmt.Errorf("%w: %s: a checkpoint's name whose time does not read", ErrArchive, filepath.Join(a.dir, m[0]))
		}
		out = append(out, ArchiveCheckpoint{Name: m[0], Seq: seq, Time: t, Tag: m[3], Bytes: size})
		return nil
	})
	slices.SortFunc(out, func(x, y ArchiveCheckpoint) int { return cmp.Compare(x.Seq, y.Seq) })
	return out, err
}

// list calls add with the submatches of re, the whole name first, and the
// size of each regular file of the archive whose name matches re.
func (a *Archive) list(re *regexp.Regexp, add func(m []string, size int64) error) error {
	entries, err := os.ReadDir(a.dir)
	if err != nil {
		return fmt.Errorf("archive %s: %w", a.dir, err)
	}
	for _, e := range entries {
		m := re.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		var size int64
		if info, err := e.Info(); err == nil {
			size = info.Size()
		}
		if err := add(m, size); err != nil {
			return err
		}
	}
	return nil
}

// Covered returns the sequences the archive's segments hold without a
// gap from the first of them: first to last, both 0 when it holds none.
func (a *Archive) Covered() (first, last uint64, err error) {
	segs, err := a.Segments()
	if err != nil || len(segs) == 0 {
		return 0, 0, err
	}
	first, last = segs[0].FirstSeq, segs[0].LastSeq
	for _, s := range segs[1:] {
		if s.FirstSeq > last+1 {
			break
		}
		last = max(last, s.LastSeq)
	}
	return first, last, nil
}

// PutCheckpoint keeps the checkpoint r holds (written gzipped) as the
// state after the event at seq, stored at t; tag says what it is to its
// writer. It replaces one of the same name.
func (a *Archive) PutCheckpoint(seq uint64, t time.Time, tag string, r io.Reader) (ArchiveCheckpoint, error) {
	if !checkpointTag.MatchString(tag) {
		return ArchiveCheckpoint{}, fmt.Errorf("%w: checkpoint tag %q: want letters, digits and dots", ErrArchive, tag)
	}
	name := fmt.Sprintf("checkpoint-%020d-%s-%s.gz", seq, t.UTC().Format(archiveTimeLayout), tag)
	size, err := a.writeFile(func(w io.Writer) (string, error) {
		zw := gzip.NewWriter(w)
		if _, err := io.Copy(zw, r); err != nil {
			return "", err
		}
		return name, zw.Close()
	})
	if err != nil {
		return ArchiveCheckpoint{}, err
	}
	return ArchiveCheckpoint{Name: name, Seq: seq, Time: t.UTC(), Tag: tag, Bytes: size}, nil
}

// OpenCheckpoint returns the bytes of the checkpoint c, uncompressed.
func (a *Archive) OpenCheckpoint(c ArchiveCheckpoint) (io.ReadCloser, error) {
	f, err := os.Open(filepath.Join(a.dir, c.Name))
	if err != nil {
		return nil, fmt.Errorf("archive checkpoint: %w", err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrArchive, filepath.Join(a.dir, c.Name), err)
	}
	return struct {
		io.Reader
		io.Closer
	}{zr, f}, nil
}

// writeFile writes a file through fill, which returns the file's name
// once it has written it: under a temporary name in the directory,
// synced, renamed into place, and the directory synced, so that a crash
// leaves the whole file or none (and a temporary file listings ignore).
// It returns the file's size.
func (a *Archive) writeFile(fill func(io.Writer) (string, error)) (int64, error) {
	f, err := os.CreateTemp(a.dir, archiveTempPrefix+"*")
	if err != nil {
		return 0, fmt.Errorf("archive %s: %w", a.dir, err)
	}
	tmp := f.Name()
	name := filepath.Base(tmp)
	fail := func(err error) (int64, error) {
		f.Close()
		os.Remove(tmp)
		return 0, fmt.Errorf("archive %s: write %s: %w", a.dir, name, err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	got, err := fill(bw)
	if got != "" {
		name = got
	}
	if err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	st, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, filepath.Join(a.dir, name)); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("archive %s: write %s: %w", a.dir, name, err)
	}
	if err := SyncDir(a.dir); err != nil {
		return 0, fmt.Errorf("archive %s: sync the directory after writing %s: %w", a.dir, name, err)
	}
	return st.Size(), nil
}

// SyncDir syncs a directory, so that a rename in it survives a power
// loss. A file system that cannot sync a directory (some network and
// object-store mounts answer EINVAL) has nothing more to make durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}

// Copy writes the stream's events from seq from to seq to (both
// included) into new segments of at most ArchiveSegmentEventsMax events,
// and returns them. The stream must hold every one of them: a sequence
// missing (purged meanwhile) fails the copy, and the segments written
// before it stay, each whole.
func (a *Archive) Copy(ctx context.Context, s *Stream, from, to uint64, readWait time.Duration) ([]ArchiveSegment, error) {
	if from == 0 || to < from {
		return nil, fmt.Errorf("%w: copy seq %d to %d", ErrArchive, from, to)
	}
	reader, err := s.Reader(ctx, from)
	if err != nil {
		return nil, fmt.Errorf("archive seq %d to %d: %w", from, to, err)
	}
	defer reader.Close()
	var out []ArchiveSegment
	next := from
	for next <= to {
		seg, err := a.writeSegment(ctx, reader, next, min(to, next+ArchiveSegmentEventsMax-1), readWait)
		if err != nil {
			return out, err
		}
		out = append(out, seg)
		next = seg.LastSeq + 1
	}
	return out, nil
}

// writeSegment writes one segment of the records from..to, read in order
// from reader. Its name is known once its last record is read: it is
// written under a temporary name, then renamed.
func (a *Archive) writeSegment(ctx context.Context, reader *Reader, from, to uint64, readWait time.Duration) (ArchiveSegment, error) {
	seg := ArchiveSegment{FirstSeq: from}
	size, err := a.writeFile(func(w io.Writer) (string, error) {
		zw := gzip.NewWriter(w)
		enc := json.NewEncoder(zw)
		for next := from; next <= to; next++ {
			recs, err := reader.Next(ctx, 1, readWait)
			if err == nil && len(recs) == 0 {
				err = fmt.Errorf("%w: no record within %s", ErrArchive, readWait)
			}
			if err != nil {
				return "", fmt.Errorf("read seq %d: %w", next, err)
			}
			rec := recs[0]
			if rec.Seq != next {
				return "", fmt.Errorf("%w: the stream gave seq %d where seq %d was due (purged meanwhile?)", ErrArchive, rec.Seq, next)
			}
			if err := enc.Encode(archivedOf(rec)); err != nil {
				return "", err
			}
			if next == from {
				seg.FirstTime = rec.Time.UTC()
			}
			seg.LastSeq, seg.LastTime = next, rec.Time.UTC()
		}
		seg.Name = fmt.Sprintf("events-%020d-%020d-%s-%s.jsonl.gz", seg.FirstSeq, seg.LastSeq,
			seg.FirstTime.Format(archiveTimeLayout), seg.LastTime.Format(archiveTimeLayout))
		return seg.Name, zw.Close()
	})
	if err != nil {
		return ArchiveSegment{}, err
	}
	seg.Bytes = size
	return seg, nil
}

// Read calls fn with the archived records from seq from to seq to (both
// included; to 0: to the end of what the archive covers), in order, in
// batches of at most batchMax, and returns the last sequence it passed
// on (from-1 when none). Each sequence is passed once, wherever segments
// overlap. A sequence the segments lack, where a later one follows,
// fails with ErrArchive naming the gap; so does a segment that does not
// hold what its name says. fn's error stops the read and is returned.
func (a *Archive) Read(ctx context.Context, from, to uint64, batchMax int, fn func([]Record) error) (uint64, error) {
	segs, err := a.Segments()
	if err != nil {
		return from - 1, err
	}
	next := max(from, 1)
	for _, seg := range segs {
		if seg.LastSeq < next {
			continue
		}
		if to > 0 && next > to {
			break
		}
		if seg.FirstSeq > next {
			return next - 1, fmt.Errorf("%w: %s: seq %d to %d are in no segment", ErrArchive, a.dir, next, seg.FirstSeq-1)
		}
		if next, err = a.readSegment(ctx, seg, next, to, batchMax, fn); err != nil {
			return next - 1, err
		}
	}
	return next - 1, nil
}

// readSegment passes on seg's records from next to to (0: its end) and
// returns the sequence after the last it passed on.
func (a *Archive) readSegment(ctx context.Context, seg ArchiveSegment, next, to uint64, batchMax int, fn func([]Record) error) (uint64, error) {
	path := filepath.Join(a.dir, seg.Name)
	f, err := os.Open(path)
	if err != nil {
		return next, fmt.Errorf("archive: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return next, fmt.Errorf("%w: %s: %w", ErrArchive, path, err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 0, 64<<10), ArchiveLineMax)
	batch := make([]Record, 0, batchMax)
	want := seg.FirstSeq
	for sc.Scan() {
		var line archivedRecord
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return next, fmt.Errorf("%w: %s: line of seq %d: %w", ErrArchive, path, want, err)
		}
		if line.Seq != want || want > seg.LastSeq {
			return next, fmt.Errorf("%w: %s: holds seq %d where seq %d was due", ErrArchive, path, line.Seq, want)
		}
		want++
		if line.Seq < next || (to > 0 && line.Seq > to) {
			continue
		}
		data := []byte(line.Event)
		if line.Event == nil {
			data = line.Data
		}
		batch = append(batch, recordFrom(line.Subject, data, line.Seq, line.Time))
		next = line.Seq + 1
		if len(batch) == cap(batch) {
			if err := fn(batch); err != nil {
				return next, err
			}
			batch = batch[:0]
		}
		if err := ctx.Err(); err != nil {
			return next, err
		}
	}
	if err := sc.Err(); err != nil {
		return next, fmt.Errorf("%w: %s: %w", ErrArchive, path, err)
	}
	if want != seg.LastSeq+1 {
		return next, fmt.Errorf("%w: %s: ends at seq %d, its name says %d", ErrArchive, path, want-1, seg.LastSeq)
	}
	if len(batch) > 0 {
		if err := fn(batch); err != nil {
			return next, err
		}
	}
	return next, nil
}

// archivedOf is the line of a record.
func archivedOf(rec Record) archivedRecord {
	line := archivedRecord{Seq: rec.Seq, Time: rec.Time.UTC(), Subject: rec.Subject}
	if json.Valid(rec.Raw) {
		line.Event = json.RawMessage(rec.Raw)
	} else {
		line.Data = rec.Raw
	}
	return line
}
