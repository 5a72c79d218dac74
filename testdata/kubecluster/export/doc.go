// Package export holds the end-to-end tests of `quota export` against a
// real kube-apiserver (see kubecluster): the ledger's usage, read with
// `quota describe -o json`, is compared with what Kubernetes' own quota
// evaluators sum over the live objects.
package export
