package webhook

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quotaledger/quota/ledger"
)

// FuzzValidate posts arbitrary bodies and timeouts to /validate with NATS
// up and no ledger subscribed: whatever the input, the webhook answers
// with an HTTP error whose body is a Status naming the code, 400 for what
// is not a routable v1 AdmissionReview, 503 for a review no ledger
// answers, and never panics.
func FuzzValidate(f *testing.F) {
	dir := f.TempDir()
	emb, err := ledger.StartEmbedded(ledger.EmbeddedConfig{Port: ledger.RandomPort, StoreDir: filepath.Join(dir, "js")})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(emb.Shutdown)
	nc, err := nats.Connect(emb.ClientURL())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(nc.Close)
	h := &handler{nc: nc, metrics: newMetrics(), log: slog.New(slog.DiscardHandler), defaultTimeout: time.Second}

	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","namespace":"team"}}`), "2s")
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u"}}`), "")
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"}`), "10s")
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"namespace":"a.b>"}}`), "-1s")
	f.Add([]byte(`[]`), "x")
	f.Fuzz(func(t *testing.T, body []byte, timeout string) {
		req := httptest.NewRequest(http.MethodPost, ValidatePath, bytes.NewReader(body))
		q := req.URL.Query()
		if timeout != "" {
			q.Set("timeout", timeout)
		}
		req.URL.RawQuery = q.Encode()
		rec := httptest.NewRecorder()
		h.validate(rec, req)
		var st struct {
			Kind    string `json:"kind"`
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" || st.Code != rec.Code || st.Message == "" {
			t.Fatalf("HTTP %d %q: not a Status naming its code (%v)", rec.Code, rec.Body, err)
		}
		switch rec.Code {
		case http.StatusBadRequest, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		default:
			t.Fatalf("HTTP %d %s: want 400, 503, or 504 for a timeout too short to ask", rec.Code, rec.Body)
		}
	})
}
