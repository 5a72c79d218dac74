package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
)

// Defaults and limits of Options.
const (
	// DefaultBatchSize is the number of events appended per AppendBatch.
	DefaultBatchSize = 1000
	// BatchSizeMax is the largest BatchSize accepted.
	BatchSizeMax = 10_000
	// DefaultFlushDelay is how long an event waits for others to fill its
	// batch before the batch is appended as it is.
	DefaultFlushDelay = 50 * time.Millisecond
	// DefaultUnchangedKeysMax is the number of objects whose last appended
	// state an Ingester remembers to skip unchanged upserts.
	DefaultUnchangedKeysMax = 100_000
	// UnchangedKeysLimit is the largest UnchangedKeysMax accepted.
	UnchangedKeysLimit = 10_000_000
	// ReportRejectionsMax is the number of rejections a Report lists; more
	// are counted in Report.Rejected and kept in the dead-letter stream.
	ReportRejectionsMax = 10_000
)

// Options configure an Ingester. The zero value is usable.
type Options struct {
	// Namespace is given to namespaced objects that have none (plain
	// manifests), as `kubectl -n` would. Zero: such objects are rejected.
	Namespace string
	// BatchSize is the number of events appended together. Zero:
	// DefaultBatchSize.
	BatchSize int
	// FlushDelay bounds how long an event waits for its batch to fill, so
	// that a live feed (a watch piped in) reaches the stream as it comes.
	// Zero: DefaultFlushDelay.
	FlushDelay time.Duration
	// Validation says what a field of a plain object that its kind does
	// not have does (see Validation). Zero: ValidateStrict.
	Validation Validation
	// States tells what the log says objects are now, so that a plain
	// object is skipped when it states what its object is. Zero: plain
	// objects are appended every time, with no message ID.
	States States
	// UnchangedKeysMax bounds the objects remembered for skipping unchanged
	// upserts; past it an arbitrary one is forgotten, and its next upsert
	// appended even if unchanged. Zero: DefaultUnchangedKeysMax.
	UnchangedKeysMax int
}

func (o Options) withDefaults() Options {
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.FlushDelay == 0 {
		o.FlushDelay = DefaultFlushDelay
	}
	if o.UnchangedKeysMax == 0 {
		o.UnchangedKeysMax = DefaultUnchangedKeysMax
	}
	if o.Validation == "" {
		o.Validation = ValidateStrict
	}
	return o
}

// Validate reports every problem of o in one error wrapping
// ErrInvalidOptions.
func (o Options) Validate() error {
	o = o.withDefaults()
	var problems []string
	if o.BatchSize < 1 || o.BatchSize > BatchSizeMax {
		problems = append(problems, fmt.Sprintf("BatchSize %d is outside 1..%d", o.BatchSize, BatchSizeMax))
	}
	if o.FlushDelay < 0 {
		problems = append(problems, fmt.Sprintf("FlushDelay %s is negative", o.FlushDelay))
	}
	if o.UnchangedKeysMax < 1 || o.UnchangedKeysMax > UnchangedKeysLimit {
		problems = append(problems, fmt.Sprintf("UnchangedKeysMax %d is outside 1..%d", o.UnchangedKeysMax, UnchangedKeysLimit))
	}
	switch o.Validation {
	case ValidateStrict, ValidateWarn, ValidateIgnore:
	default:
		problems = append(problems, fmt.Sprintf("Validation %q is not strict, warn or ignore", o.Validation))
	}
	if o.Namespace != "" && ledger.ValidateNamespace(o.Namespace) != nil {
		problems = append(problems, fmt.Sprintf("Namespace %q is not a DNS label", o.Namespace))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidOptions, strings.Join(problems, "; "))
}

// Rejection is one record that could not become an event.
type Rejection struct {
	Source string `json:"source"`
	Reason string `json:"reason"`
}

// String is the operator's form: "FILE:LINE: reason".
func (r Rejection) String() string { return r.Source + ": " + r.Reason }

// Report counts what an ingest did with its records. Every record read is
// counted in exactly one of Appended, Duplicates, Unchanged, Bookmarks and
// Rejected.
type Report struct {
	// Appended events are new in the stream.
	Appended int
	// Duplicates were already in the stream (same message ID within the
	// duplicate window): a re-sent backlog.
	Duplicates int
	// Unchanged upserts were skipped because the object's trimmed form
	// equals the one this Ingester last appended (status-only churn) or,
	// for a plain manifest, the object's current state in the log.
	Unchanged int
	// Bookmarks are watch BOOKMARK events, which carry no fact.
	Bookmarks int
	// Rejected records are reported and kept in the dead-letter stream.
	Rejected int
	// Rejections lists the first ReportRejectionsMax rejections in input
	// order.
	Rejections []Rejection
	// Warnings lists the first ReportRejectionsMax problems that did not
	// stop a record (unknown fields under ValidateWarn), in input order.
	Warnings []Rejection
}

// Records is the number of records read.
func (r Report) Records() int {
	return r.Appended + r.Duplicates + r.Unchanged + r.Bookmarks + r.Rejected
}

// Add adds o's counts and rejections to r.
func (r *Report) Add(o Report) {
	r.Appended += o.Appended
	r.Duplicates += o.Duplicates
	r.Unchanged += o.Unchanged
	r.Bookmarks += o.Bookmarks
	r.Rejected += o.Rejected
	r.Rejections = listed(r.Rejections, o.Rejections...)
	r.Warnings = listed(r.Warnings, o.Warnings...)
}

// listed appends rs to list while it holds fewer than ReportRejectionsMax.
func listed(list []Rejection, rs ...Rejection) []Rejection {
	return append(list, rs[:min(len(rs), max(ReportRejectionsMax-len(list), 0))]...)
}

// refuse counts and lists a record or a resync group that is not
// appended.
func (r *Report) refuse(source, reason string) {
	r.Rejected++
	r.Rejections = listed(r.Rejections, Rejection{Source: source, Reason: reason})
}

// count counts appends' results as appended or duplicates.
func (r *Report) count(results []ledger.AppendResult) {
	for _, res := range results {
		switch {
		case res.Seq == 0:
		case res.Duplicate:
			r.Duplicates++
		default:
			r.Appended++
		}
	}
}

// Ingester turns outside input into ledger events. Its calls are
// serialised, so the unchanged-upsert memory reflects the order events
// reached the stream.
type Ingester struct {
	stream *ledger.Stream
	opts   Options

	mu sync.Mutex
	// last holds, per object key, a digest of the trimmed form last queued
	// for append.
	last map[string][sha256.Size]byte
}

// New returns an Ingester appending to stream. It fails only on invalid
// options.
func New(stream *ledger.Stream, opts Options) (*Ingester, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Ingester{stream: stream, opts: opts.withDefaults(), last: make(map[string][sha256.Size]byte)}, nil
}

// IngestFile reads the input named name (see Parse) and appends its
// events, returning once JetStream acknowledged every valid one. The
// error is for failures of reading or of the stream; the Report then
// counts what was done before the failure.
func (in *Ingester) IngestFile(ctx context.Context, name string, r io.Reader) (Report, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	p := newPipeline(in, ctx)
	perr := Parse(name, r, p.submit)
	err := p.finish(perr)
	if err != nil {
		// Some remembered states may not have reached the stream; forget
		// them all rather than skip an upsert that was never appended.
		clear(in.last)
		return p.report, fmt.Errorf("ingest %s: %w", name, err)
	}
	return p.report, nil
}

// run holds the report and the dead-letter keeping shared by IngestFile
// and Resync.
type run struct {
	in     *Ingester
	ctx    context.Context
	report Report
}

// prepare does the work of one record that depends on no other record:
// classifying, decoding, trimming, hashing, encoding and naming it.
func (in *Ingester) prepare(rec Record) prepared {
	pr := prepared{rec: rec}
	if pr.reject, pr.bookmark = classify(rec); pr.reject != "" || pr.bookmark {
		return pr
	}
	o, reason := in.decode(&pr)
	if reason != "" {
		pr.reject = reason
		return pr
	}
	ev, reason := pr.event(o)
	if reason != "" {
		pr.reject = reason
		return pr
	}
	// Check here what AppendBatch would refuse, so that one bad record is
	// rejected alone instead of failing the whole batch.
	encoded, err := ledger.Encode(ev)
	if err != nil {
		pr.lateReject = err.Error()
		return pr
	}
	if size, limit := len(encoded), int(in.stream.Config().MaxMsgSize); size > limit {
		pr.lateReject = fmt.Sprintf("%v: %d bytes, at most %d", ledger.ErrEventTooLarge, size, limit)
		return pr
	}
	pr.entry = ledger.BatchEntry{Event: ev}
	if !pr.plain {
		pr.entry.MsgID = msgID(o, rec.Type, pr.digest)
	}
	return pr
}

// classify says why rec is rejected before its object is read, or that it
// is a bookmark.
func classify(rec Record) (reject string, bookmark bool) {
	if rec.Err != nil {
		return rec.Err.Error(), false
	}
	switch rec.Type {
	case WatchBookmark:
		return "", true
	case WatchError:
		return watchErrorReason(rec.Object), false
	case WatchAdded, WatchModified, WatchDeleted:
		return "", false
	case "":
		return fmt.Sprintf("%v: a watch event needs a type", ErrUnknownWatchType), false
	default:
		return fmt.Sprintf("%v %q", ErrUnknownWatchType, rec.Type), false
	}
}

// decode reads pr's object, naming its namespace, or says why it cannot;
// pr keeps the warnings of a plain object's check.
func (in *Ingester) decode(pr *prepared) (*object.Object, string) {
	o, warn, reason := in.readObject(&pr.rec)
	pr.warnings = warn
	if reason != "" {
		return nil, reason
	}
	return o, place(o, pr.rec.Watched, in.opts.Namespace)
}

// place gives o, a namespaced object that names no namespace, namespace,
// or says why it cannot. A custom resource the API server sent (watched)
// without a namespace is cluster-scoped (a ClusterIssuer, say).
func place(o *object.Object, watched bool, namespace string) string {
	switch {
	case o.ClusterScoped() || o.Namespace != "":
	case watched && o.TakeClusterScoped():
	case namespace == "":
		return fmt.Sprintf("%v: %s %q", ErrNoNamespace, o.Kind, o.Name)
	default:
		o.SetNamespace(namespace)
	}
	return ""
}

// readObject decodes rec's object, or says why it cannot, after a plain
// object's check against its kind's fields (whose rejection names the line
// of its first problem in rec.Source). It returns the check's warnings.
func (in *Ingester) readObject(rec *Record) (*object.Object, []Rejection, string) {
	var warn []Rejection
	if !rec.Watched {
		var reject []Rejection
		reject, warn = checkFields(rec.Raw, rec.Object).sort(*rec, in.opts.Validation)
		if len(reject) > 0 {
			r := joinRejections(reject)
			rec.Source = r.Source
			return nil, warn, r.Reason
		}
	}
	o, err := object.Decode(rec.Object)
	if err != nil {
		return nil, warn, err.Error()
	}
	if o.Name == "" {
		return nil, warn, fmt.Sprintf("%v: %s with generateName %q", ErrNoName, o.Kind, o.GenerateName)
	}
	return o, warn, ""
}

// event makes the ledger event of pr's object o, setting pr's key,
// digest and kind; it says why it cannot instead.
func (pr *prepared) event(o *object.Object) (ledger.Event, string) {
	rec := pr.rec
	ev := ledger.Event{
		Version:         ledger.EncodingVersion,
		Resource:        o.Resource,
		Namespace:       o.Namespace,
		Name:            o.Name,
		UID:             o.UID,
		ResourceVersion: o.ResourceVersion,
		Source:          rec.Source,
	}
	pr.key = o.Key()
	// A plain object states what its object is: judged against the log.
	pr.plain = !rec.Watched && rec.Type == WatchAdded
	if rec.Type == WatchDeleted {
		ev.Type = ledger.Delete
		pr.deleted = true
		pr.digest = sha256.Sum256(rec.Object)
		return ev, ""
	}
	trimmed, err := o.Trimmed()
	if err != nil {
		return ev, err.Error()
	}
	ev.Type = ledger.Upsert
	ev.Object = trimmed
	pr.digest = sha256.Sum256(trimmed)
	return ev, ""
}

// remember records the digest of key's last queued upsert, forgetting an
// arbitrary other key when the memory is full.
func (in *Ingester) remember(key string, digest [sha256.Size]byte) {
	if _, ok := in.last[key]; !ok && len(in.last) >= in.opts.UnchangedKeysMax {
		for k := range in.last {
			delete(in.last, k)
			break
		}
	}
	in.last[key] = digest
}

// msgID is the deduplication ID of an event: a digest of
// <uid, or resource/namespace/name>/<resourceVersion>/<watch type>, so that
// re-sending the same watch event is a no-op. Without a resourceVersion a
// digest of the object stands in for it.
//
// The server holds every ID of its duplicate window (a day by default) in
// memory: 128 bits of SHA-256 in base64url take a 24-byte allocation where
// the name itself, 50 to 60 characters, takes 64.
func msgID(o *object.Object, watchType string, digest [sha256.Size]byte) string {
	who := o.UID
	if who == "" {
		who = o.Key()
	}
	version := o.ResourceVersion
	if version == "" {
		version = "sha256:" + hex.EncodeToString(digest[:16])
	}
	sum := sha256.Sum256([]byte(who + "/" + version + "/" + watchType))
	return base64.RawURLEncoding.EncodeToString(sum[:msgIDBytes])
}

// msgIDBytes is how much of a digest a message ID keeps: 128 bits, so
// that two events of one duplicate window are never taken for each other.
const msgIDBytes = 16

// reject refuses rec and keeps it in the dead-letter stream.
func (r *run) reject(rec Record, reason string) error {
	r.report.refuse(rec.Source, reason)
	err := r.in.stream.Reject(r.ctx, ledger.Rejection{Origin: ledger.OriginIngest, Source: rec.Source, Reason: reason, Raw: rec.Raw})
	if err != nil {
		return fmt.Errorf("keep rejection of %s: %w", rec.Source, err)
	}
	return nil
}

// watchErrorReason describes the Status object of a watch ERROR event.
func watchErrorReason(raw json.RawMessage) string {
	var status struct {
		Message string `json:"message"`
		Reason  string `json:"reason"`
		Code    int    `json:"code"`
	}
	_ = json.Unmarshal(raw, &status)
	parts := []string{ErrWatchError.Error()}
	if status.Code != 0 {
		parts = append(parts, fmt.Sprintf("code %d", status.Code))
	}
	if status.Reason != "" {
		parts = append(parts, status.Reason)
	}
	if status.Message != "" {
		parts = append(parts, status.Message)
	}
	return strings.Join(parts, ": ")
}
