// Package install checks the ledger installed as a cluster's quota
// enforcement, on a real kube-apiserver (kubecluster) with its own
// ResourceQuota admission plugin turned off: `quota serve`, `quota export`
// feeding it the cluster's objects, and `quota webhook` registered as a
// validating admission webhook with deploy/'s configuration, each
// component reaching the ledger's NATS with its own key from `quota
// credentials`, and, where a test asks, the webhook taking reviews only
// from the client certificate kube-apiserver presents as the admission
// configuration of `quota credentials` tells it to; and it validates every manifest of deploy/ against a real
// apiserver with a server-side dry run, rendered by kustomize's own Go
// module as kubectl apply -k renders it. It installs deploy/, rolls it back
// and installs it again as docs/install.md says, and checks that the
// namespace and the claim holding the log are never deleted.
//
// Its benchmark (make bench-webhook) compares pod creates through the
// apiserver with the built-in plugin enforcing and with the ledger's
// webhook enforcing, at 1 and 32 clients.
//
// # Caveats
//
// The apiserver runs no controller: no kubelet, no scheduler, no quota
// controller. Pods stay unscheduled, so a delete removes them at once; the
// benchmark gives its quota the status the quota controller would. No
// StatefulSet controller makes claims, so the rollback test makes quota
// serve's itself; no namespace controller empties a deleted namespace, so
// it stays Terminating with its objects in it. The webhook is registered
// by URL (127.0.0.1) instead of deploy/'s Service, so the API server's
// kubeconfig names its user for that address, and cert-manager's and
// Prometheus Operator's kinds are validated against CRDs of the test's
// own that take any spec.
package install
