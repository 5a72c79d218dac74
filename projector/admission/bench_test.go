package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/ledger/ledgertest/workload"
	"github.com/quotaledger/quota/ledger/object"
)

// BenchmarkReviewDryRun decides dry-run creates directly (no NATS round
// trip) against a namespace with two quotas: the cost of one decision, for
// a small hand-written pod and for a recorded kube-apiserver pod with its
// managed fields, volumes and all.
func BenchmarkReviewDryRun(b *testing.B) {
	srv, _, _ := ledgertest.StartServer(b)
	r := startReplica(b, srv.ClientURL(), Config{})
	upsert(b, r.stream, quotaManifest("bench", "compute", map[string]string{"requests.cpu": "1000", "limits.cpu": "1000", "pods": "100000"}))
	upsert(b, r.stream, quotaManifest("bench", "counts", map[string]string{"count/pods": "100000"}))
	r.catchUp(b)
	workloadNamespace, workloadPods := workloadOpening(b, r)
	r.catchUp(b)
	for _, c := range []struct {
		name      string
		namespace string
		pods      []string
	}{
		{"small", "bench", []string{podManifest("bench", "web", "250m")}},
		{"recorded", "bench", []string{string(samplePod(b, "bench"))}},
		{"workload", workloadNamespace, workloadPods},
	} {
		bodies := make([][]byte, len(c.pods))
		for i, p := range c.pods {
			bodies[i] = review("uid-1", "CREATE", c.namespace, p, "", true)
		}
		ctx := context.Background()
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				out, err := r.resp.reviewBody(ctx, c.namespace, bodies[i%len(bodies)])
				if err != nil || out.Response == nil {
					b.Fatalf("no answer: %v", err)
				}
			}
		})
	}
}

// workloadOpening appends the opening of the benchmark workload (cluster
// objects, and the quotas and LimitRanges of its namespaces) to r's
// stream, and returns the first namespace with pods and the first pods
// created in it: the pods and quotas the harness's dry-run figures decide.
func workloadOpening(b *testing.B, r *replica) (string, []string) {
	b.Helper()
	g, err := workload.New(workload.Config{Seed: 1, Namespaces: 4, Events: 4000})
	if err != nil {
		b.Fatal(err)
	}
	var namespace string
	var pods []string
	var line []byte
	for {
		var ok bool
		if line, ok = g.Next(line[:0]); !ok {
			break
		}
		typ, raw, err := workload.SplitEvent(line)
		if err != nil {
			b.Fatal(err)
		}
		o, err := object.Decode(raw)
		if err != nil {
			b.Fatal(err)
		}
		switch {
		case o.Resource != "pods" && o.Resource != "persistentvolumeclaims" && o.Resource != "services":
			upsert(b, r.stream, string(raw))
		case o.Resource == "pods" && typ == workload.Added && len(pods) < 64:
			if namespace == "" {
				namespace = o.Namespace
			}
			if o.Namespace == namespace {
				pods = append(pods, string(raw))
			}
		}
	}
	if len(pods) == 0 {
		b.Fatal("no pod in the workload")
	}
	return namespace, pods
}

// samplePod is the first pod of a recorded sample: a real kube-apiserver
// object, managedFields and all, as an admission request carries it.
func samplePod(b *testing.B, namespace string) []byte {
	b.Helper()
	f, err := os.ReadFile(filepath.Join("..", "..", "testdata", "samples", "sample-team-a", "events.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range bytes.Split(f, []byte("\n")) {
		var w struct {
			Object json.RawMessage `json:"object"`
		}
		if json.Unmarshal(line, &w) != nil || !bytes.Contains(w.Object[:min(len(w.Object), 40)], []byte(`"kind":"Pod"`)) {
			continue
		}
		return bytes.Replace(w.Object, []byte(`"namespace":"sample-team-a"`), []byte(`"namespace":"`+namespace+`"`), 1)
	}
	b.Fatal("no pod in the sample")
	return nil
}

// BenchmarkReviewReserving decides reserving creates of a recorded pod,
// each of its own name, from 16 goroutines at once, directly (no NATS
// round trip for the request) but with every reservation appended to an
// embedded JetStream that syncs every write: the cost of a reserving
// admission apart from its transport.
func BenchmarkReviewReserving(b *testing.B) {
	srv, _, _ := ledgertest.StartServer(b)
	r := startReplica(b, srv.ClientURL(), Config{})
	upsert(b, r.stream, quotaManifest("bench", "compute", map[string]string{"requests.cpu": "1M", "limits.cpu": "1M", "requests.memory": "1Pi", "limits.memory": "1Pi", "pods": "100M"}))
	r.catchUp(b)
	// Each create has a uid and a pod name of its own. The review is
	// marshalled once, with markers where they go, and each create's is
	// put together around its number, so the benchmark costs the
	// responder's work, not encoding/json's.
	const marker = "SERIAL"
	pod := bytes.Replace(samplePod(b, "bench"), []byte(`"name":"ledger-api"`), []byte(`"name":"ledger-api-`+marker+`"`), 1)
	parts := bytes.Split(review("uid-"+marker, "CREATE", "bench", string(pod), "", false), []byte(marker))
	if len(parts) != 3 {
		b.Fatalf("the review holds the marker %d times, want 2", len(parts)-1)
	}
	size := len(parts[0]) + len(parts[1]) + len(parts[2])
	ctx := context.Background()
	var serial atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := strconv.FormatInt(serial.Add(1), 10)
			// A body of its own: the decoded request points into it.
			body := append(make([]byte, 0, size+2*len(n)), parts[0]...)
			body = append(append(body, n...), parts[1]...)
			body = append(append(body, n...), parts[2]...)
			out, err := r.resp.reviewBody(ctx, "bench", body)
			if err != nil || !out.Response.Allowed {
				b.Errorf("not allowed: %v %+v", err, out.Response.Result)
				return
			}
		}
	})
}
