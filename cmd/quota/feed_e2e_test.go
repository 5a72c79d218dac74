package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
)

// httpGet returns the status and body of a GET of url.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestReservationHeldUntilTheFeedPasses runs `quota serve
// --reservation-release feed` and follows an orphaned reservation (a
// create allowed whose object never appears): with no feed it holds,
// however long, and quota status, /readyz and the metrics say why; a
// Progress event of the exporter's that passes it releases it, and the
// room is free again.
func TestReservationHeldUntilTheFeedPasses(t *testing.T) {
	write := fileWriter(t, t.TempDir())
	s := startServer(t, t.TempDir(), "--reservation-release", "feed", "--api-request-timeout", "1s", "--metrics-listen", "127.0.0.1:0")
	m := metricsURL.FindStringSubmatch(s.logs.String())
	if m == nil {
		t.Fatalf("no metrics URL in the serving line:\n%s", s.logs)
	}
	readyURL := strings.TrimSuffix(m[1], "/metrics") + "/readyz"
	s.mustRun("ingest", write("quota.yaml", "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: pods\n  namespace: team\nspec:\n  hard:\n    pods: \"1\"\n"))
	pod := func(name string) string {
		return write(name+".yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: "+name+"\nspec:\n  containers:\n  - name: c\n    image: registry.example/app:1\n")
	}
	if out := s.mustRun("admit", "-n", "team", "-f", pod("ghost")); strings.TrimSpace(out) != "allowed" {
		t.Fatalf("admit ghost: %s", out)
	}
	reservedAt := time.Now()
	// Well past --api-request-timeout, the reservation still holds: no
	// feed has shown the cluster past it.
	time.Sleep(1500 * time.Millisecond) // the span the rule must outlast, not a wait for a condition
	if out, _, code := s.run("admit", "--dry-run", "-n", "team", "-f", pod("web")); code != 1 {
		t.Fatalf("admit web with ghost reserved: exit %d, %s", code, out)
	}
	if out := s.mustRun("explain", "-n", "team"); !strings.Contains(out, "held until the feed passes") {
		t.Errorf("explain does not say the reservation waits for the feed:\n%s", out)
	}
	if code, body := httpGet(t, readyURL); code != http.StatusOK || !strings.Contains(body, "pods has no feed (1 reservations held)") {
		t.Errorf("readyz: %d %q, want 200 naming the pods' missing feed", code, body)
	}
	if _, body := httpGet(t, m[1]); !strings.Contains(body, `quota_feed_reservations_waiting{resource="pods"} 1`+"\n") {
		t.Errorf("metrics lack the waiting reservation")
	}
	if out := s.mustRun("status"); !strings.Contains(out, "pods") || !strings.Contains(out, "no progress") {
		t.Errorf("status does not show the pods' feed:\n%s", out)
	}

	// The exporter's point, past the reservation's end, releases it.
	appendFeedPoint(t, s.url, "pods", reservedAt.Add(3*time.Second))
	poll(t, "ghost's reservation released", 10*time.Second, func() bool {
		_, _, code := s.run("admit", "--dry-run", "-n", "team", "-f", pod("web"))
		return code == 0
	})
	var st struct {
		Log struct {
			LastSeq uint64 `json:"lastSeq"`
			Bytes   uint64 `json:"bytes"`
		} `json:"log"`
		Projection struct {
			AppliedSeq uint64 `json:"appliedSeq"`
		} `json:"projection"`
		Feeds []struct {
			Resource string    `json:"resource"`
			At       time.Time `json:"at"`
			Waiting  int       `json:"waiting"`
		} `json:"feeds"`
	}
	if err := json.Unmarshal([]byte(s.mustRun("status", "-o", "json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Log.LastSeq < 4 || st.Log.Bytes == 0 || len(st.Feeds) != 1 || st.Feeds[0].Resource != "pods" || st.Feeds[0].Waiting != 0 || st.Feeds[0].At.IsZero() {
		t.Errorf("status -o json after the release: %+v", st)
	}
	if code, body := httpGet(t, readyURL); code != http.StatusOK || body != "ready\n" {
		t.Errorf("readyz after the release: %d %q, want plain ready", code, body)
	}
}

// appendFeedPoint appends the Progress event an exporter would: the log
// holds every change of resource up to at.
func appendFeedPoint(t *testing.T, url, resource string, at time.Time) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := ledger.Attach(ctx, js, ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ev := ledger.Event{Type: ledger.Progress, Source: "export test", Progress: []ledger.FeedPoint{{Resource: resource, ResourceVersion: "42", At: at}}}
	if _, err := stream.Append(ctx, ev, ledger.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}

// poll waits, at most limit, until cond holds.
func poll(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
