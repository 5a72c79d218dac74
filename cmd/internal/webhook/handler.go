package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotaledger/quota/ledger"
)

// handler serves the webhook's paths.
type handler struct {
	nc             *nats.Conn
	metrics        *metrics
	log            *slog.Logger
	defaultTimeout time.Duration
	// clients, when set, is the CA whose client certificates alone may
	// post reviews; nil: any caller may.
	clients *clientCA
	// clientExpiry warns of a caller's certificate that expires soon.
	clientExpiry expiryWarner
	// clientNotAfter is when the client certificate of the last review
	// taken expires, in Unix ns (0: none yet), for announce.
	clientNotAfter atomic.Int64
	// stopping is set once the process stops: /readyz turns 503 so that
	// no new review is sent here.
	stopping atomic.Bool
}

func (h *handler) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc(ValidatePath, h.validate)
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc(ReadyPath, h.ready)
	mux.Handle(MetricsPath, promhttp.HandlerFor(h.metrics.registry, promhttp.HandlerOpts{}))
	return mux
}

func (h *handler) ready(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	switch {
	case h.stopping.Load():
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "stopping\n")
	case !h.nc.IsConnected():
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, "not connected to the ledger's NATS (%s)\n", h.nc.Status())
	default:
		_, _ = io.WriteString(w, "ok\n")
	}
}

// reviewHead is what the webhook reads of a review: what routes it
// (readHead).
type reviewHead struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Request    *requestHead `json:"request"`
}

// requestHead is what the webhook reads of a review's request.
type requestHead struct {
	UID       string `json:"uid"`
	Namespace string `json:"namespace"`
}

// replyHead is what the webhook reads of the ledger's reply: what checks
// and counts it.
type replyHead struct {
	Response *struct {
		UID     string `json:"uid"`
		Allowed bool   `json:"allowed"`
		Status  *struct {
			Code int32 `json:"code"`
		} `json:"status"`
	} `json:"response"`
}

// reviewError is a review the webhook cannot have decided: it answers
// with an HTTP error, so that the failurePolicy applies.
type reviewError struct {
	code int
	msg  string
}

func (e *reviewError) Error() string { return e.msg }

func fail(code int, format string, args ...any) *reviewError {
	return &reviewError{code: code, msg: fmt.Sprintf(format, args...)}
}

// authenticated reports whether the caller of r may post reviews, and
// answers it when not.
func (h *handler) authenticated(w http.ResponseWriter, r *http.Request) bool {
	if h.clients == nil {
		return true
	}
	now := time.Now()
	leaf, refused := h.clients.verify(r.TLS, now)
	if refused != nil {
		h.metrics.unauthenticated.WithLabelValues(refused.reason).Inc()
		h.log.Warn("review refused: caller not authenticated", "code", refused.code, "reason", refused.reason, "err", refused.msg, "remote", r.RemoteAddr)
		writeStatus(w, refused.code, refused.msg)
		return false
	}
	h.metrics.clientCertificateExpiry.Set(float64(leaf.NotAfter.Unix()))
	h.clientNotAfter.Store(leaf.NotAfter.UnixNano())
	if h.clientExpiry.due(leaf.NotAfter, now) {
		h.log.Warn("kube-apiserver's client certificate expires soon: renew it (quota credentials --renew) and copy it to the control-plane hosts, or every review it sends is refused",
			"subject", leaf.Subject.String(), "notAfter", leaf.NotAfter, "in", expiresIn(leaf.NotAfter, now))
	}
	return true
}

func (h *handler) validate(w http.ResponseWriter, r *http.Request) {
	if !h.authenticated(w, r) {
		return
	}
	start := time.Now()
	h.metrics.inFlight.Inc()
	defer h.metrics.inFlight.Dec()
	reply, verdict, err := h.relay(r)
	if err != nil {
		verdict = verdictError
		var re *reviewError
		if !errors.As(err, &re) {
			re = fail(http.StatusInternalServerError, "%v", err)
		}
		h.log.Warn("admission review not decided", "code", re.code, "err", re.msg, "remote", r.RemoteAddr)
		writeStatus(w, re.code, re.msg)
	} else {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(reply)
	}
	h.metrics.requests.WithLabelValues(verdict).Inc()
	h.metrics.latency.WithLabelValues(verdict).Observe(time.Since(start).Seconds())
}

// relay sends the review of r to the ledger and returns its reply with
// its verdict, or why there is none.
func (h *handler) relay(r *http.Request) ([]byte, string, error) {
	if r.Method != http.MethodPost {
		return nil, "", fail(http.StatusMethodNotAllowed, "%s %s: only POST takes an AdmissionReview", r.Method, ValidatePath)
	}
	timeout, err := h.timeout(r)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	body, err := io.ReadAll(io.LimitReader(r.Body, ReviewSizeMax+1))
	if err != nil {
		return nil, "", fail(http.StatusBadRequest, "read the review: %v", err)
	}
	if len(body) > ReviewSizeMax {
		return nil, "", fail(http.StatusRequestEntityTooLarge, "the review is larger than %d bytes", ReviewSizeMax)
	}
	head, err := readHead(body)
	if err != nil {
		return nil, "", fail(http.StatusBadRequest, "the body is not an AdmissionReview: %v", err)
	}
	if head.APIVersion != "admission.k8s.io/v1" || head.Kind != "AdmissionReview" {
		return nil, "", fail(http.StatusBadRequest, "the body is a %q of %q, not an AdmissionReview of admission.k8s.io/v1: set admissionReviewVersions to [v1]", head.Kind, head.APIVersion)
	}
	if head.Request == nil {
		return nil, "", fail(http.StatusBadRequest, "the AdmissionReview has no request")
	}
	ns := head.Request.Namespace
	if ns == "" {
		return nil, "", fail(http.StatusBadRequest, "review %s has no namespace: quotas are per namespace; register the webhook for namespaced kinds only", head.Request.UID)
	}
	if err := ledger.ValidateNamespace(ns); err != nil {
		return nil, "", fail(http.StatusBadRequest, "review %s: namespace: %v", head.Request.UID, err)
	}
	if !connected(ctx, h.nc) {
		return nil, "", fail(http.StatusServiceUnavailable, "the ledger's NATS is not connected (%s): review %s of namespace %s is not decided", h.nc.Status(), head.Request.UID, ns)
	}
	if max := h.nc.MaxPayload(); int64(len(body)) > max {
		return nil, "", fail(http.StatusRequestEntityTooLarge, "review %s is %d bytes, more than the ledger's NATS takes (%d)", head.Request.UID, len(body), max)
	}
	subject := SubjectPrefix + ns
	// A reconnection meanwhile (a ledger member going away) sends the
	// review again; the ledger decides a review's uid once.
	msg, err := ledger.RequestAnswer(ctx, h.nc, subject, body, timeout)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, "", fail(http.StatusServiceUnavailable, "no ledger answers %s: is 'quota serve' running on this NATS, and caught up with its stream?", subject)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return nil, "", fail(http.StatusGatewayTimeout, "the ledger did not answer %s within %s", subject, timeout)
	case err != nil:
		return nil, "", fail(http.StatusServiceUnavailable, "ask the ledger (%s): %v", subject, err)
	}
	var reply replyHead
	if err := json.Unmarshal(msg.Data, &reply); err != nil || reply.Response == nil {
		return nil, "", fail(http.StatusBadGateway, "the ledger's reply on %s is not an AdmissionReview with a response: %v", subject, err)
	}
	if reply.Response.UID != head.Request.UID {
		return nil, "", fail(http.StatusBadGateway, "the ledger's reply on %s is for review %q, not %q", subject, reply.Response.UID, head.Request.UID)
	}
	verdict := verdictAllowed
	if !reply.Response.Allowed {
		verdict = verdictDenied
		if st := reply.Response.Status; st == nil || st.Code != http.StatusForbidden && st.Code != http.StatusUnprocessableEntity {
			verdict = verdictFailed
		}
	}
	return msg.Data, verdict, nil
}

// timeout is how long the webhook may take over r: nine tenths of the
// API server's ?timeout=, so that a 504 reaches it in time, or the
// default.
func (h *handler) timeout(r *http.Request) (time.Duration, error) {
	text := r.URL.Query().Get("timeout")
	if text == "" {
		return h.defaultTimeout, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil || d <= 0 {
		return 0, fail(http.StatusBadRequest, "?timeout=%s: want a positive duration such as 10s", text)
	}
	return min(d, TimeoutMax) * 9 / 10, nil
}

// writeStatus answers with an HTTP error whose body is a metav1.Status,
// which the API server shows in its own error.
func writeStatus(w http.ResponseWriter, code int, msg string) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure,
		Message:  "quota webhook: " + msg,
		Code:     int32(code),
	}
	switch code {
	case http.StatusBadRequest:
		st.Reason = metav1.StatusReasonBadRequest
	case http.StatusServiceUnavailable:
		st.Reason = metav1.StatusReasonServiceUnavailable
	case http.StatusGatewayTimeout:
		st.Reason = metav1.StatusReasonTimeout
	case http.StatusRequestEntityTooLarge:
		st.Reason = metav1.StatusReasonRequestEntityTooLarge
	case http.StatusMethodNotAllowed:
		st.Reason = metav1.StatusReasonMethodNotAllowed
	case http.StatusUnauthorized:
		st.Reason = metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		st.Reason = metav1.StatusReasonForbidden
	default:
		st.Reason = metav1.StatusReasonInternalError
	}
	b, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// reconnectGrace is how long a review waits for a connection to the
// ledger's NATS that is being made again (a ledger member stopping, its
// clients moving to another) before it fails at once.
const reconnectGrace = time.Second

// connected reports whether nc is connected, waiting reconnectGrace at
// most (and not past ctx) for it to be again.
func connected(ctx context.Context, nc *nats.Conn) bool {
	if nc.IsConnected() {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, reconnectGrace)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !nc.IsConnected() {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}
