package install

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A second validating webhook, served by the test, that refuses every
// object labelled denyLabel: a refusal later in the admission chain than
// the ledger's reservation.
const (
	denyWebhook = "deny.install.test.example"
	denyLabel   = "install.test.example/deny"
)

// startDenyWebhook serves and registers the refusing webhook.
func (e *enforcer) startDenyWebhook(t testing.TB, caPEM []byte, certFile, keyFile string) {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: false,
			Result: &metav1.Status{Code: http.StatusForbidden, Message: "refused by the test's second webhook"}}
		review.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	url := "https://" + ln.Addr().(*net.TCPAddr).String() + "/deny"
	none, fail := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Fail
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deny"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    denyWebhook,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{denyLabel: "true"}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
		}},
	}
	if _, err := e.cluster.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), vwc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("register the refusing webhook: %v", err)
	}
}
