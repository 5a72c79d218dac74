// Package export holds the end-to-end tests of `quota export` against a
// real kube-apiserver (see kubecluster): the ledger's usage, read with
// `quota describe -o json`, is compared with what Kubernetes' own quota
// evaluators sum over the live objects. Most run the API server without
// its watch cache, so that a compacted resourceVersion is 410 Gone;
// TestExportBookmarks runs it with the cache, whose bookmarks move the
// feed of resources nothing changes.
package export
