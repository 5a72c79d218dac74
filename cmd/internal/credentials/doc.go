// Package credentials makes what a cluster installation needs to keep
// its parts to themselves: the keys with which they reach the ledger's
// embedded NATS server (one NKey per component, and the nats-server
// authorization block, for `quota serve --auth`, that admits each key with
// only the subjects its component needs), the webhook's serving
// certificate with the CA that kube-apiserver is told to trust, and
// kube-apiserver's client certificate with the CA the webhook is told to
// trust.
//
// Components and their rights (Permissions):
//
//   - webhook: requests on quota.admit.>, and its status on
//     quota.status.webhook.>;
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
// Two CAs are made for this installation alone, each valid for
// CAValidity, and their keys are kept next to their certificates so that
// Renew can sign with them again:
//
//   - the webhook's CA (ca.crt, ca.key) signs its serving certificate
//     (tls.crt, tls.key) for the Service's DNS names; kube-apiserver trusts
//     it through the webhook configuration's caBundle;
//   - the client CA (client-ca.crt, client-ca.key) signs kube-apiserver's
//     client certificate (apiserver-client.crt, .key); the webhook trusts
//     it through --client-ca and takes reviews only from its certificates.
//
// They are two CAs, not one, because they vouch for different things to
// different parties: the serving CA's certificate is published in the
// webhook configuration and, with deploy/components/cert-manager, its key
// lives in the cluster; whoever holds the client CA's key may have the
// ledger reserve quota, so that key stays with the operator alone.
//
// For kube-apiserver, Write also writes a kubeconfig
// (apiserver-kubeconfig.yaml) whose user, named as the Service's host, presents the client pair, and
// an AdmissionConfiguration (admission-config.yaml) pointing the
// ValidatingAdmissionWebhook plugin at it; both name files by absolute
// path in Config.APIServerDir, where they are to be copied on each
// control-plane host.
//
// The serving and client certificates last CertificateValidity; Renew
// issues new ones with the kept CAs, so that neither the caBundle nor
// --client-ca changes. cert-manager can issue and rotate the serving pair
// instead (deploy/components/cert-manager).
//
// # Caveats
//
// The seeds and the keys are secrets: Write leaves every file readable by
// its owner only, and whoever holds a seed speaks as its component. The
// CA keys (ca.key, client-ca.key) belong outside the cluster: deploy/
// makes Secrets of neither, and Renew refuses a CA key others may read.
// A NATS key is only as narrow as its permissions: adding a subject to a
// component means changing Permissions and writing the files again (the
// server reads its authorization block at start).
package credentials
