// Package credentials makes what a cluster installation needs to keep
// its parts to themselves: the keys with which they reach the ledger's
// embedded NATS server (one NKey per component, and the nats-server
// authorization block, for `quota serve --auth`, that admits each key with
// only the subjects its component needs), and the webhook's serving
// certificate with the CA that kube-apiserver is told to trust.
//
// Components and their rights (Permissions):
//
//   - webhook: requests on quota.admit.> and nothing else;
//   - export: appends to the event and dead-letter streams
//     (quota.events.>, quota.rejects.>), the JetStream API calls that
//     attach to and append to them, quota.ingest and quota.ingest.states
//     (which a plain manifest's ingest asks), and its key-value bucket of
//     resume points (quota-export);
//   - operator: everything, for `quota describe`, `explain`, `replay` and
//     `rejects` run by hand (through a port-forward).
//
// Every component may subscribe only to its own reply inboxes (_INBOX.>).
//
// The webhook's CA (ca.crt) is made for this installation alone and its
// key is not kept: it signs the serving certificate (tls.crt, tls.key) for
// the Service's DNS names and nothing else. Both last CertificateValidity;
// run Write again into a new directory before then, or let cert-manager
// issue and rotate them (deploy/components/cert-manager).
//
// # Caveats
//
// The seeds are secrets: Write leaves them readable by their owner only,
// and whoever holds a seed speaks as its component. A key is only as
// narrow as its permissions: adding a subject to a component means
// changing Permissions and writing the files again (the server reads its
// authorization block at start).
package credentials
