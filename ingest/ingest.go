package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
)

// Defaults and limits of Options.
const (
	// DefaultBatchSize is the number of events appended per AppendBatch.
	DefaultBatchSize = 1000
	// BatchSizeMax is the largest BatchSize accepted.
	BatchSizeMax = 10_000
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
	// UnchangedKeysMax bounds the objects remembered for skipping unchanged
	// upserts. Zero: DefaultUnchangedKeysMax. When it is reached an
	// arbitrary remembered object is forgotten; its next upsert is appended
	// even if unchanged, which is harmless.
	UnchangedKeysMax int
}

func (o Options) withDefaults() Options {
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.UnchangedKeysMax == 0 {
		o.UnchangedKeysMax = DefaultUnchangedKeysMax
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
	if o.UnchangedKeysMax < 1 || o.UnchangedKeysMax > UnchangedKeysLimit {
		problems = append(problems, fmt.Sprintf("UnchangedKeysMax %d is outside 1..%d", o.UnchangedKeysMax, UnchangedKeysLimit))
	}
	if o.Namespace != "" {
		probe := ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Delete, Resource: "pods", Name: "x", Namespace: o.Namespace}
		if err := probe.Validate(); err != nil {
			problems = append(problems, fmt.Sprintf("Namespace %q is not a DNS label", o.Namespace))
		}
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
	// equals the one last appended in this session (status-only churn).
	Unchanged int
	// Bookmarks are watch BOOKMARK events, which carry no fact.
	Bookmarks int
	// Rejected records are reported and kept in the dead-letter stream.
	Rejected int
	// Rejections lists the first ReportRejectionsMax rejections in input
	// order.
	Rejections []Rejection
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
	for _, rej := range o.Rejections {
		if len(r.Rejections) < ReportRejectionsMax {
			r.Rejections = append(r.Rejections, rej)
		}
	}
}

// Ingester turns outside input into ledger events. Its calls are
// serialised: one input is ingested at a time, so the unchanged-upsert
// memory always reflects the order events reached the stream.
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

// IngestFile reads the input named name (see Parse for the formats) and
// appends its events. It returns once every valid event is acknowledged by
// JetStream; rejected records are in the Report and in the dead-letter
// stream, and do not stop the records around them. The error is for
// failures of reading or of the stream; the Report then counts what was
// done before the failure.
func (in *Ingester) IngestFile(ctx context.Context, name string, r io.Reader) (Report, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	run := &run{in: in, ctx: ctx}
	err := Parse(name, r, run.record)
	if err == nil {
		err = run.flush()
	}
	if err != nil {
		// Some remembered states may not have reached the stream; forget
		// them all rather than skip an upsert that was never appended.
		clear(in.last)
		return run.report, fmt.Errorf("ingest %s: %w", name, err)
	}
	return run.report, nil
}

// run is the state of one IngestFile call.
type run struct {
	in      *Ingester
	ctx     context.Context
	pending []ledger.BatchEntry
	report  Report
}

func (r *run) record(rec Record) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if rec.Err != nil {
		return r.reject(rec, rec.Err.Error())
	}
	switch rec.Type {
	case WatchBookmark:
		r.report.Bookmarks++
		return nil
	case WatchError:
		return r.reject(rec, watchErrorReason(rec.Object))
	case WatchAdded, WatchModified, WatchDeleted:
	case "":
		return r.reject(rec, fmt.Sprintf("%v: a watch event needs a type", ErrUnknownWatchType))
	default:
		return r.reject(rec, fmt.Sprintf("%v %q", ErrUnknownWatchType, rec.Type))
	}

	o, err := object.Decode(rec.Object)
	if err != nil {
		return r.reject(rec, err.Error())
	}
	if o.Name == "" {
		return r.reject(rec, fmt.Sprintf("%v: %s with generateName %q", ErrNoName, o.Kind, o.GenerateName))
	}
	if !o.ClusterScoped() && o.Namespace == "" {
		if r.in.opts.Namespace == "" {
			return r.reject(rec, fmt.Sprintf("%v: %s %q", ErrNoNamespace, o.Kind, o.Name))
		}
		o.SetNamespace(r.in.opts.Namespace)
	}
	ev := ledger.Event{
		Version:         ledger.EncodingVersion,
		Resource:        o.Resource,
		Namespace:       o.Namespace,
		Name:            o.Name,
		UID:             o.UID,
		ResourceVersion: o.ResourceVersion,
		Source:          rec.Source,
	}
	key := o.Key()
	var digest [sha256.Size]byte
	if rec.Type == WatchDeleted {
		ev.Type = ledger.Delete
		delete(r.in.last, key)
		digest = sha256.Sum256(rec.Object)
	} else {
		trimmed, err := o.Trimmed()
		if err != nil {
			return r.reject(rec, err.Error())
		}
		ev.Type = ledger.Upsert
		ev.Object = trimmed
		digest = sha256.Sum256(trimmed)
		if prev, ok := r.in.last[key]; ok && prev == digest {
			r.report.Unchanged++
			return nil
		}
		r.in.remember(key, digest)
	}
	// Check here what AppendBatch would refuse, so that one bad record is
	// rejected alone instead of failing the whole batch.
	encoded, err := ledger.Encode(ev)
	if err != nil {
		return r.reject(rec, err.Error())
	}
	if size := len(encoded); size > int(r.in.stream.Config().MaxMsgSize) {
		return r.reject(rec, fmt.Sprintf("%v: %d bytes, at most %d", ledger.ErrEventTooLarge, size, r.in.stream.Config().MaxMsgSize))
	}
	r.pending = append(r.pending, ledger.BatchEntry{Event: ev, MsgID: msgID(o, rec.Type, digest)})
	if len(r.pending) >= r.in.opts.BatchSize {
		return r.flush()
	}
	return nil
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

// msgID is the deduplication ID of an event:
// <uid, or resource/namespace/name>/<resourceVersion>/<watch type>, so that
// re-sending the same watch event is a no-op. Without a resourceVersion
// (plain manifests) a digest of the object stands in for it, so that
// re-ingesting the same manifest is a no-op and a changed one is not.
func msgID(o *object.Object, watchType string, digest [sha256.Size]byte) string {
	who := o.UID
	if who == "" {
		who = o.Key()
	}
	version := o.ResourceVersion
	if version == "" {
		version = "sha256:" + hex.EncodeToString(digest[:16])
	}
	return who + "/" + version + "/" + watchType
}

func (r *run) reject(rec Record, reason string) error {
	r.report.Rejected++
	if len(r.report.Rejections) < ReportRejectionsMax {
		r.report.Rejections = append(r.report.Rejections, Rejection{Source: rec.Source, Reason: reason})
	}
	err := r.in.stream.Reject(r.ctx, ledger.Rejection{Origin: ledger.OriginIngest, Source: rec.Source, Reason: reason, Raw: rec.Raw})
	if err != nil {
		return fmt.Errorf("keep rejection of %s: %w", rec.Source, err)
	}
	return nil
}

// flush appends the pending events and waits for their acknowledgements.
func (r *run) flush() error {
	if len(r.pending) == 0 {
		return nil
	}
	results, err := r.in.stream.AppendBatch(r.ctx, r.pending)
	for _, res := range results {
		switch {
		case res.Seq == 0:
		case res.Duplicate:
			r.report.Duplicates++
		default:
			r.report.Appended++
		}
	}
	r.pending = r.pending[:0]
	return err
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

// ingestBytes is IngestFile over a byte slice.
func (in *Ingester) ingestBytes(ctx context.Context, name string, data []byte) (Report, error) {
	return in.IngestFile(ctx, name, bytes.NewReader(data))
}
