package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

func TestAppendThenReadInOrder(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStream(t, js)
	ctx := context.Background()
	var want []string
	for i := range 10 {
		ns := []string{"team-a", "team-b"}[i%2]
		ev := pod(ns, fmt.Sprintf("p%d", i))
		res, err := s.Append(ctx, ev, ledger.AppendOptions{})
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if res.Seq != uint64(i+1) || res.Duplicate {
			t.Fatalf("append %d: got %+v, want seq %d not duplicate", i, res, i+1)
		}
		want = append(want, ns+"/"+ev.Name)
	}
	sc := ledger.Event{Type: ledger.Upsert, Resource: "storageclasses.storage.k8s.io", Name: "fast", Object: []byte(`{"kind":"StorageClass"}`)}
	if _, err := s.Append(ctx, sc, ledger.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	want = append(want, "/fast")

	recs := ledgertest.ReadAll(t, s, 1)
	var got []string
	for i, r := range recs {
		if r.Err != nil {
			t.Fatalf("record %d: %v", r.Seq, r.Err)
		}
		if r.Seq != uint64(i+1) {
			t.Errorf("record %d: got seq %d", i, r.Seq)
		}
		if r.Subject != ledger.Subject(r.Event.Namespace) || r.Namespace != r.Event.Namespace {
			t.Errorf("record %d: subject %s namespace %q for event namespace %q", r.Seq, r.Subject, r.Namespace, r.Event.Namespace)
		}
		if r.Time.IsZero() {
			t.Errorf("record %d: no stream time", r.Seq)
		}
		if want := uint64(len(want) - 1 - i); r.Pending != want {
			t.Errorf("record %d: %d pending after it, want %d", r.Seq, r.Pending, want)
		}
		got = append(got, r.Event.Namespace+"/"+r.Event.Name)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %v, want %v", got, want)
	}
	if recs[len(recs)-1].Subject != "quota.events._cluster" {
		t.Errorf("cluster-scoped subject: got %s, want quota.events._cluster", recs[len(recs)-1].Subject)
	}

	// Reading from a later sequence starts there.
	tail := ledgertest.ReadAll(t, s, 9)
	if len(tail) != 3 || tail[0].Seq != 9 {
		t.Fatalf("read from 9: got %d records starting at %d, want 3 starting at 9", len(tail), tail[0].Seq)
	}
}

func TestReaderNextReturnsNothingWhenIdle(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStream(t, js)
	ctx := context.Background()
	r, err := s.Reader(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	recs, err := r.Next(ctx, 10, 50*time.Millisecond)
	if err != nil || len(recs) != 0 {
		t.Fatalf("got %d records, %v; want none, nil", len(recs), err)
	}
	// An event appended after the reader started arrives.
	if _, err := s.Append(ctx, pod("a", "late"), ledger.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	recs, err = r.Next(ctx, 10, ledgertest.ReadWaitTimeout)
	if err != nil || len(recs) != 1 || recs[0].Event.Name != "late" {
		t.Fatalf("got %+v, %v; want the late event", recs, err)
	}
	r.Close()
	if _, err := r.Next(ctx, 10, time.Millisecond); !errors.Is(err, ledger.ErrReaderClosed) {
		t.Fatalf("after close: got %v, want ErrReaderClosed", err)
	}
}

func TestAppendDedupByMsgID(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStream(t, js)
	ctx := context.Background()
	opts := ledger.AppendOptions{MsgID: "uid-x/7/ADDED"}
	first, err := s.Append(ctx, pod("a", "x"), opts)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Append(ctx, pod("a", "x"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if first.Duplicate || !second.Duplicate || second.Seq != first.Seq {
		t.Fatalf("got first %+v second %+v, want the second a duplicate of the first", first, second)
	}
	if last, _ := s.LastSeq(ctx); last != 1 {
		t.Fatalf("last seq: got %d, want 1", last)
	}
}

func TestAppendConflictOnWrongExpectedSeq(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStream(t, js)
	ctx := context.Background()
	zero := uint64(0)
	res, err := s.Append(ctx, pod("a", "x"), ledger.AppendOptions{ExpectLastSubjectSeq: &zero})
	if err != nil {
		t.Fatalf("first append expecting an empty subject: %v", err)
	}
	// Another namespace's appends do not move namespace a's sequence.
	if _, err := s.Append(ctx, pod("b", "y"), ledger.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Append(ctx, pod("a", "z"), ledger.AppendOptions{ExpectLastSubjectSeq: &zero})
	if !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("stale expectation: got %v, want ErrConflict", err)
	}
	if _, err := s.Append(ctx, pod("a", "z"), ledger.AppendOptions{ExpectLastSubjectSeq: &res.Seq}); err != nil {
		t.Fatalf("current expectation: got %v, want success", err)
	}
}

func TestConcurrentAppendersExpectingTheSameSeqOneWins(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStream(t, js)
	ctx := context.Background()
	if _, err := s.Append(ctx, pod("a", "base"), ledger.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	expect, err := s.LastSubjectSeq(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	const appenders = 8
	errs := make([]error, appenders)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range appenders {
		wg.Go(func() {
			<-start
			ev := ledger.Event{Type: ledger.Reserve, Resource: "pods", Namespace: "a", Reservation: fmt.Sprintf("r%d", i), Object: []byte(`{}`), ReservationTTL: time.Minute}
			_, errs[i] = s.Append(ctx, ev, ledger.AppendOptions{ExpectLastSubjectSeq: &expect})
		})
	}
	close(start)
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, ledger.ErrConflict):
		default:
			t.Errorf("appender %d: %v", i, err)
		}
	}
	if wins != 1 {
		t.Fatalf("got %d winners, want exactly 1", wins)
	}
}

func TestUndecodableRecordsAreSurfacedInOrder(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStream(t, js)
	ctx := context.Background()
	if _, err := s.Append(ctx, pod("a", "before"), ledger.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	// Bytes written around the ledger's encoder: garbage, a future version,
	// and an event published on another namespace's subject.
	wrongSubject, _ := ledger.Encode(pod("b", "elsewhere"))
	for _, m := range []struct{ subject, data string }{
		{"quota.events.a", "not json"},
		{"quota.events.a", `{"v":9,"type":"upsert"}`},
		{"quota.events.a", string(wrongSubject)},
		{"quota.events.Bad_Token", string(wrongSubject)},
	} {
		if _, err := js.Publish(ctx, m.subject, []byte(m.data)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Append(ctx, pod("a", "after"), ledger.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	recs := ledgertest.ReadAll(t, s, 1)
	if len(recs) != 6 {
		t.Fatalf("got %d records, want 6", len(recs))
	}
	if recs[0].Err != nil || recs[5].Err != nil || recs[5].Event.Name != "after" {
		t.Fatalf("valid records around the bad ones: got %v / %v", recs[0].Err, recs[5].Err)
	}
	wantErrs := []error{ledger.ErrInvalidEvent, ledger.ErrFutureVersion, ledger.ErrInvalidEvent, nil}
	for i, want := range wantErrs {
		r := recs[i+1]
		if r.Err == nil {
			t.Errorf("seq %d: got no error, want one", r.Seq)
			continue
		}
		if want != nil && !errors.Is(r.Err, want) {
			t.Errorf("seq %d: got %v, want %v", r.Seq, r.Err, want)
		}
		if len(r.Raw) == 0 || r.Seq != uint64(i+2) {
			t.Errorf("seq %d: raw %q", r.Seq, r.Raw)
		}
	}
}

func TestLastSubjectSeq(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStream(t, js)
	ctx := context.Background()
	check := func(ns string, want uint64) {
		t.Helper()
		got, err := s.LastSubjectSeq(ctx, ns)
		if err != nil || got != want {
			t.Fatalf("LastSubjectSeq(%q): got %d, %v; want %d", ns, got, err, want)
		}
	}
	check("a", 0)
	check("", 0)
	for _, ns := range []string{"a", "b", "a", "b", "b"} {
		if _, err := s.Append(ctx, pod(ns, "x"), ledger.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	check("a", 3)
	check("b", 5)
	check("c", 0)
	if last, err := s.LastSeq(ctx); err != nil || last != 5 {
		t.Fatalf("LastSeq: got %d, %v; want 5", last, err)
	}
	if _, err := s.LastSubjectSeq(ctx, "a.>"); err == nil {
		t.Fatal("LastSubjectSeq of a non-label: got nil error")
	}
}

// A stream read locally answers LastSeq from the embedded server's store:
// every acknowledged append is in it, as the leader's answer says.
func TestLastSeqReadLocally(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	asked := ledgertest.OpenStream(t, js)
	local, err := ledger.Attach(context.Background(), js, ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	local.ReadLocally(srv)
	ctx := context.Background()
	if last, err := local.LastSeq(ctx); err != nil || last != 0 {
		t.Fatalf("LastSeq of an empty stream: got %d, %v; want 0", last, err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 25 {
				res, err := asked.Append(ctx, pod("ns", fmt.Sprintf("p%d-%d", w, i)), ledger.AppendOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				if last, err := local.LastSeq(ctx); err != nil || last < res.Seq {
					t.Errorf("LastSeq right after append %d was acknowledged: got %d, %v", res.Seq, last, err)
				}
			}
		})
	}
	wg.Wait()
	want, err := asked.LastSeq(ctx)
	if err != nil || want != 100 {
		t.Fatalf("LastSeq asked of the server: got %d, %v; want 100", want, err)
	}
	if last, err := local.LastSeq(ctx); err != nil || last != want {
		t.Fatalf("LastSeq read locally: got %d, %v; want %d", last, err, want)
	}
}

func TestAppendBatchAcknowledgesEveryEntry(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStreamConfig(t, js, ledger.Config{AppendBatchInFlightMax: 7})
	ctx := context.Background()
	var entries []ledger.BatchEntry
	for i := range 50 {
		entries = append(entries, ledger.BatchEntry{Event: pod("a", fmt.Sprintf("p%d", i)), MsgID: fmt.Sprintf("id-%d", i)})
	}
	res, err := s.AppendBatch(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Seq != uint64(i+1) || r.Duplicate {
			t.Fatalf("entry %d: got %+v, want seq %d", i, r, i+1)
		}
	}
	// The same batch again is all duplicates.
	res, err = s.AppendBatch(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Duplicate || r.Seq != uint64(i+1) {
			t.Fatalf("again, entry %d: got %+v, want duplicate of seq %d", i, r, i+1)
		}
	}
	// A batch with an invalid event publishes nothing.
	bad := append([]ledger.BatchEntry{{Event: pod("a", "ok")}}, ledger.BatchEntry{Event: ledger.Event{Type: ledger.Upsert}})
	if _, err := s.AppendBatch(ctx, bad); !errors.Is(err, ledger.ErrInvalidEvent) {
		t.Fatalf("invalid batch: got %v, want ErrInvalidEvent", err)
	}
	if last, _ := s.LastSeq(ctx); last != 50 {
		t.Fatalf("last seq: got %d, want 50", last)
	}
}

func TestAppendRefusesOversizedEvent(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStreamConfig(t, js, ledger.Config{MaxMsgSize: 512})
	ev := pod("a", "x")
	ev.Object = []byte(`{"pad":"` + strings.Repeat("x", 600) + `"}`)
	if _, err := s.Append(context.Background(), ev, ledger.AppendOptions{}); !errors.Is(err, ledger.ErrEventTooLarge) {
		t.Fatalf("got %v, want ErrEventTooLarge", err)
	}
}

func TestOpenIsRepeatableAndSetsOptions(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	ledgertest.OpenStream(t, js)
	ledgertest.OpenStream(t, js)
	st, err := js.Stream(context.Background(), ledger.DefaultStreamName)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	if cfg.Storage != jetstream.FileStorage || cfg.Duplicates != 24*time.Hour || !cfg.DenyDelete || !cfg.DenyPurge ||
		cfg.Discard != jetstream.DiscardNew || cfg.MaxAge != 0 || cfg.MaxMsgs != -1 || cfg.MaxBytes != -1 {
		t.Fatalf("stream config: got %+v", cfg)
	}
	if err := st.Purge(context.Background()); err == nil {
		t.Fatal("purge of the event stream: got nil error, want denied")
	}
}

func TestConfigValidateReportsEveryViolation(t *testing.T) {
	err := ledger.Config{StreamName: "a.b", RejectStreamName: "a.b", Replicas: 6, MaxBytes: -1, AckWaitTimeout: -time.Second}.Validate()
	if !errors.Is(err, ledger.ErrInvalidConfig) {
		t.Fatalf("got %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{"StreamName", "RejectStreamName", "both", "Replicas 6", "MaxBytes", "AckWaitTimeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to mention %s", err, want)
		}
	}
	if err := (ledger.Config{}).Validate(); err != nil {
		t.Fatalf("zero config: got %v, want valid", err)
	}
	if err := (ledger.EmbeddedConfig{Port: -2}).Validate(); err == nil || !strings.Contains(err.Error(), "StoreDir") || !strings.Contains(err.Error(), "Port -2") {
		t.Fatalf("embedded config: got %v, want StoreDir and Port reported", err)
	}
}

func TestRejectionsAreKeptWithRawSourceAndReason(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStream(t, js)
	ctx := context.Background()
	rejs := []ledger.Rejection{
		{Origin: ledger.OriginIngest, Source: "pods.jsonl:3", Reason: "bad JSON:\nunexpected end", Raw: []byte("{\"type\":")},
		{Origin: ledger.OriginProjector, Source: "QUOTA_EVENTS:12", Reason: "does not decode", Raw: []byte{0xff, 0x00}},
	}
	for _, r := range rejs {
		if err := s.Reject(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// The same rejection again is stored once.
	if err := s.Reject(ctx, rejs[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.Reject(ctx, ledger.Rejection{Source: "x"}); !errors.Is(err, ledger.ErrInvalidRejection) {
		t.Fatalf("no reason: got %v, want ErrInvalidRejection", err)
	}
	got, err := s.ListRejections(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d rejections, want 2", len(got))
	}
	if got[0].Origin != "ingest" || got[0].Source != "pods.jsonl:3" || got[0].Reason != "bad JSON: unexpected end" || string(got[0].Raw) != "{\"type\":" {
		t.Errorf("first: got %+v", got[0])
	}
	if got[1].Origin != "projector" || string(got[1].Raw) != "\xff\x00" || got[1].Seq != 2 || got[1].Time.IsZero() {
		t.Errorf("second: got %+v", got[1])
	}
	latest, err := s.ListRejections(ctx, 1)
	if err != nil || len(latest) != 1 || latest[0].Source != "QUOTA_EVENTS:12" {
		t.Fatalf("latest one: got %+v, %v", latest, err)
	}

	// Purged once dealt with; one arriving after the purge stays.
	if n, through, err := s.PurgeRejections(ctx); err != nil || n != 2 || through != 2 {
		t.Fatalf("purge: got %d through seq %d, %v; want 2 through seq 2", n, through, err)
	}
	if err := s.Reject(ctx, ledger.Rejection{Origin: ledger.OriginIngest, Source: "later.jsonl:1", Reason: "bad JSON", Raw: []byte("{")}); err != nil {
		t.Fatal(err)
	}
	got, err = s.ListRejections(ctx, 10)
	if err != nil || len(got) != 1 || got[0].Source != "later.jsonl:1" {
		t.Fatalf("after the purge: got %+v, %v; want only the later rejection", got, err)
	}
	if n, _, err := s.PurgeRejections(ctx); err != nil || n != 1 {
		t.Fatalf("second purge: got %d, %v; want 1", n, err)
	}
	if n, through, err := s.PurgeRejections(ctx); err != nil || n != 0 || through != 0 {
		t.Fatalf("purge of nothing: got %d through %d, %v", n, through, err)
	}
}

// TestAttachTakesTheStreamsEventSize attaches to streams a server opened
// with a smaller largest event than the default: the client refuses what
// the stream would refuse, with the stream's figure, whatever its own
// configuration says.
func TestAttachTakesTheStreamsEventSize(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	ledgertest.OpenStreamConfig(t, js, ledger.Config{MaxMsgSize: 512})
	s, err := ledger.Attach(context.Background(), js, ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Config().MaxMsgSize; got != 512 {
		t.Fatalf("attached MaxMsgSize: got %d, want the stream's 512", got)
	}
	ev := pod("a", "x")
	ev.Object = []byte(`{"pad":"` + strings.Repeat("x", 600) + `"}`)
	if _, err := s.Append(context.Background(), ev, ledger.AppendOptions{}); !errors.Is(err, ledger.ErrEventTooLarge) || !strings.Contains(err.Error(), "at most 512") {
		t.Fatalf("got %v, want ErrEventTooLarge naming 512", err)
	}
}

func TestAttachWithoutStreams(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	if _, err := ledger.Attach(context.Background(), js, ledger.Config{}); !errors.Is(err, ledger.ErrNoStream) {
		t.Fatalf("got %v, want ErrNoStream", err)
	}
}
