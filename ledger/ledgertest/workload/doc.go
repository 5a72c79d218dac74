// Package workload generates a realistic, deterministic stream of
// Kubernetes watch events for benchmarks and load tests: the JSON lines a
// kube-apiserver prints for `?watch=true` (`{"type":"ADDED","object":{...}}`)
// across a cluster of many namespaces.
//
// The stream opens with the cluster-scoped objects quotas refer to
// (PriorityClasses and StorageClasses) and every namespace's ResourceQuotas
// (compute, object counts, storage classes, a PriorityClass scope), then
// runs a mix of lifecycles as a watch shows them:
//
//   - Pods: ADDED pending, MODIFIED scheduled, MODIFIED running, status
//     churn (restarts, readiness), some Succeeded or Failed, a MODIFIED with
//     deletionTimestamp and finally DELETED. A pod object is 2 to 6 KiB, with
//     labels, annotations, owner references, managed fields, one to three
//     containers with env and mounts, and volumes.
//   - PersistentVolumeClaims: created pending, bound, resized, deleted.
//   - Services of each type: ClusterIP, headless, NodePort, LoadBalancer
//     (with its ingress status), ExternalName.
//
// Every byte follows from Config: the same Config gives the same stream,
// on every machine and Go version (the generator has its own random number
// generator and writes JSON by hand in a fixed field order). resourceVersion
// increases by one per event across the whole stream.
//
// Generation streams: the generator keeps only the live objects' small
// state (about 40 bytes each), never the events, so ten million events need
// no more memory than their live set. Config.LiveObjectsMax bounds that
// set, which also makes the stream a steady state: once the bound is
// reached, an object is created only when another has been deleted.
//
// # Caveats
//
// The stream is plausible, not recorded: it has the shapes, sizes and
// transitions of a real watch, but no controller decided them, so quotas
// are not enforced on it (a namespace may go over its hard limits, which the
// ledger records as facts). Names are unique within a stream but are not
// random-looking beyond what the tests need.
//
// A Generator is not safe for concurrent use.
package workload
