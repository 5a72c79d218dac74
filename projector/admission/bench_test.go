package admission

import (
	"context"
	"testing"

	"github.com/quotaledger/quota/ledger/ledgertest"
)

// BenchmarkReviewDryRun decides dry-run creates of a small pod directly
// (no NATS round trip) against a namespace with two quotas: the cost of
// one decision.
func BenchmarkReviewDryRun(b *testing.B) {
	srv, _, _ := ledgertest.StartServer(b)
	r := startReplica(b, srv.ClientURL(), Config{})
	upsert(b, r.stream, quotaManifest("bench", "compute", map[string]string{"requests.cpu": "1000", "limits.cpu": "1000", "pods": "100000"}))
	upsert(b, r.stream, quotaManifest("bench", "counts", map[string]string{"count/pods": "100000"}))
	r.catchUp(b)
	body := review("uid-1", "CREATE", "bench", podManifest("bench", "web", "250m"), "", true)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		out, err := r.resp.Review(ctx, "bench", body)
		if err != nil || !out.Response.Allowed {
			b.Fatalf("not allowed: %v %+v", err, out.Response.Result)
		}
	}
}
