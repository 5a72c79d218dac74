package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/projector"
	"github.com/quotaledger/quota/projector/usedtest"
)

// waitTimeout bounds every poll of a test.
const waitTimeout = 20 * time.Second

// replica is one `quota serve` in miniature: its own connections, stream
// handle, projection file and admission responder, sharing one NATS with
// the other replicas.
type replica struct {
	stream *ledger.Stream
	proj   *projector.Projector
	resp   *Responder
	// client is a connection for requests of the test.
	client *nats.Conn
}

// reviewBody answers body, an AdmissionReview, on namespace's subject, as
// the responder answers a request it receives.
func (r *Responder) reviewBody(ctx context.Context, namespace string, body []byte) (*admissionv1.AdmissionReview, error) {
	req, err := decodeRequest(body)
	return r.review(ctx, namespace, req, err)
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// clientConn is a client's connection to url, closed when the test ends.
func clientConn(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// startReplica starts a projector and an admission responder on url and
// returns once the responder is subscribed. Everything stops when the test
// ends.
func startReplica(t testing.TB, url string, cfg Config) *replica {
	t.Helper()
	connect := func(name string) *nats.Conn {
		nc, err := nats.Connect(url, nats.Name(name), nats.MaxReconnects(0))
		if err != nil {
			t.Fatalf("connect %s: %v", url, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	streamConn, respConn := connect("stream"), connect("admission")
	js, err := jetstream.New(streamConn)
	if err != nil {
		t.Fatal(err)
	}
	stream := ledgertest.OpenStream(t, js)
	proj, err := projector.Open(projector.Config{
		Path:   filepath.Join(t.TempDir(), "projection.db"),
		NoSync: true,
		Logger: discardLogger(),
	}, stream)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	resp, err := NewResponder(respConn, stream, proj, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	projDone, respDone := make(chan error, 1), make(chan error, 1)
	go func() { projDone <- proj.Run(ctx) }()
	go func() { respDone <- resp.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-respDone; err != nil {
			t.Errorf("responder: %v", err)
		}
		if err := <-projDone; err != nil {
			t.Errorf("projector: %v", err)
		}
		usedtest.CheckUsed(t, proj.DB())
		proj.Close()
	})
	poll(t, "responder subscribed", func() bool { return respConn.NumSubscriptions() > 0 })
	if err := respConn.Flush(); err != nil {
		t.Fatal(err)
	}
	return &replica{stream: stream, proj: proj, resp: resp, client: connect("client")}
}

// catchUp waits until the replica's projection reflects the whole stream.
func (r *replica) catchUp(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := r.proj.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
}

// used returns quota name's status.used[resource] in namespace as the
// replica's describe query reports it: after catching up with the stream.
// An allowed admission answers once its reservation is durable in the
// stream, so describe must see it from then on.
func (r *replica) used(t *testing.T, namespace, name, resource string) string {
	t.Helper()
	r.catchUp(t)
	list, err := r.proj.Quotas(namespace, name, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("describe %s/%s: got %d quotas, want 1", namespace, name, len(list.Items))
	}
	q := list.Items[0].Status.Used[corev1.ResourceName(resource)]
	return q.String()
}

// upsert appends an object as a cluster fact (what ingest appends for an
// ADDED watch event) and returns its sequence.
func upsert(t testing.TB, stream *ledger.Stream, manifest string) uint64 {
	t.Helper()
	o, err := object.Decode([]byte(manifest))
	if err != nil {
		t.Fatalf("decode %s: %v", manifest, err)
	}
	trimmed, err := o.Trimmed()
	if err != nil {
		t.Fatal(err)
	}
	res, err := stream.Append(context.Background(), ledger.Event{
		Version: ledger.EncodingVersion, Type: ledger.Upsert, Resource: o.Resource,
		Namespace: o.Namespace, Name: o.Name, UID: o.UID, Object: trimmed, Source: "test",
	}, ledger.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Seq
}

// ingestWatch ingests watch-event lines through the ingest package, as
// `quota ingest` would.
func ingestWatch(t *testing.T, stream *ledger.Stream, lines ...string) {
	t.Helper()
	in, err := ingest.New(stream, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := in.IngestFile(context.Background(), "watch.jsonl", strings.NewReader(strings.Join(lines, "\n")+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rejected > 0 {
		t.Fatalf("ingest rejected %v", rep.Rejections)
	}
}

func quotaManifest(namespace, name string, hard map[string]string) string {
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ResourceQuota",
		"metadata": map[string]any{"name": name, "namespace": namespace, "uid": "uid-quota-" + name},
		"spec":     map[string]any{"hard": hard},
	})
	return string(b)
}

func podManifest(namespace, name, cpu string) string {
	res := map[string]any{}
	if cpu != "" {
		res = map[string]any{"requests": map[string]string{"cpu": cpu}, "limits": map[string]string{"cpu": cpu}}
	}
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "image": "registry.example/app:1", "resources": res},
		}},
	})
	return string(b)
}

// review builds an AdmissionReview request.
func review(uid string, op admissionv1.Operation, namespace, obj, old string, dryRun bool) []byte {
	req := map[string]any{
		"uid":       uid,
		"namespace": namespace,
		"operation": string(op),
		"dryRun":    dryRun,
	}
	if obj != "" {
		req["object"] = json.RawMessage(obj)
	}
	if old != "" {
		req["oldObject"] = json.RawMessage(old)
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
	return b
}

// ask sends an AdmissionReview over NATS and decodes the reply.
func ask(t testing.TB, nc *nats.Conn, namespace string, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	resp, err := askErr(nc, namespace, body)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func askErr(nc *nats.Conn, namespace string, body []byte) (*admissionv1.AdmissionResponse, error) {
	m, err := nc.Request(SubjectPrefix+namespace, body, waitTimeout)
	if err != nil {
		return nil, fmt.Errorf("request on %s: %w", SubjectPrefix+namespace, err)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(m.Data, &out); err != nil {
		return nil, fmt.Errorf("reply %q: %w", m.Data, err)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" {
		return nil, fmt.Errorf("reply is a %s %s, want an admission.k8s.io/v1 AdmissionReview", out.APIVersion, out.Kind)
	}
	if out.Response == nil {
		return nil, fmt.Errorf("reply %q has no response", m.Data)
	}
	return out.Response, nil
}

// clock is a wall clock the test moves by hand.
type clock struct{ now atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.now.Store(time.Now().UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.now.Load()) }
func (c *clock) Advance(d time.Duration) { c.now.Add(int64(d)) }

// Reset sets the clock back to the real time: reservations appended after
// it expire TTL after their (real) stream time, not at once.
func (c *clock) Reset() { c.now.Store(time.Now().UnixNano()) }

// poll waits for cond with a deadline.
func poll(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, waitTimeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
