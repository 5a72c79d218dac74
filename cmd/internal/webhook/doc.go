// Package webhook is kube-apiserver's door to the ledger: an HTTPS
// ValidatingAdmissionWebhook endpoint that relays each admission.k8s.io/v1
// AdmissionReview POSTed to /validate to the NATS subject
// quota.admit.<namespace> and returns the ledger's reply unchanged.
//
// It owns no state: any number of replicas behind one Service are
// interchangeable, and a review is decided (and a create reserved) by the
// ledger, whose per-namespace compare-and-swap keeps replicas of both from
// over-admitting. The webhook reads of a review only what routes it (its
// apiVersion, kind, uid and namespace), in one pass over its bytes that
// skips the object without decoding it (ledger/jsonscan; encoding/json
// reads what the scan cannot vouch for), and of the reply only what checks
// it (the uid) and counts it (allowed, or the denial's code).
//
// A review the webhook cannot have decided gets an HTTP error with a
// metav1.Status body saying why, never an AdmissionReview: the API server
// then applies the configuration's failurePolicy (with Fail it refuses the
// request and shows the message). These are: a body that is not a v1
// AdmissionReview with a request (400), one without a namespace (400),
// one larger than the NATS server takes (413), NATS not connected or no
// ledger subscribed to the subject (503), and no reply within the time
// the API server gives (504; see below).
//
// The API server names its own deadline in the query, ?timeout=10s (the
// configuration's timeoutSeconds). The webhook answers within nine tenths
// of it, so that its 504 arrives before the API server gives up on the
// call; without the parameter it waits DefaultTimeout.
//
// With Config.ClientCAFile, only a caller presenting a client certificate
// that CA signed for client authentication may post reviews: kube-apiserver,
// when its admission configuration names such a certificate for the
// webhook. The TLS handshake asks for a certificate without requiring or
// verifying one; /validate verifies it before reading the body, and
// answers a caller without one 401 and one whose certificate is not
// accepted (another CA, expired, not for client authentication) 403, with
// a Status saying why, a log line and a count by reason. Verifying after
// the handshake rather than in it is what lets a refused caller be told
// why, and leaves the probes and /metrics served to callers without a
// certificate. Without a client CA any caller that reaches the port may
// post reviews, and so have the ledger reserve quota.
//
// The serving certificate and key are read again when either file changes
// (CertPollInterval; cert-manager and the kubelet replace the files of a
// mounted Secret), and a pair that does not load, such as a certificate
// written before its key, leaves the previous one serving until the next
// poll finds a pair that does. Its expiry is exported as a metric, and
// within CertificateExpiryWarning of it the webhook logs a warning at
// start and then every ExpiryWarningInterval; so it does for the client
// certificate of a review it takes.
//
// The same HTTPS listener serves /healthz (200 while the process serves),
// /readyz (200 only while the NATS connection is up) and /metrics
// (Prometheus: reviews by verdict, their latency, those in flight, callers
// refused, the certificates' expiry, and whether NATS is connected).
//
// # Caveats
//
// A reply is relayed unchanged, so the ledger's own failure to decide (a
// 500 for contention or an internal error, in a reply that is an
// AdmissionReview) reaches the API server as a denial with the ledger's
// message, whatever the failurePolicy. A review the webhook gave up on
// (504) may still be decided and reserved by the ledger afterwards: the
// object is not created, and the reservation is released when its TTL
// runs out. The client CA is read at start only: restart the webhook to
// change it. Reviews of cluster-scoped objects carry no namespace and are
// refused with 400: register the webhook for namespaced kinds only.
package webhook
