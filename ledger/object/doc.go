// Package object reads Kubernetes objects from JSON into the identity the
// ledger keys them by and, for the kinds quota accounting reads, a typed
// value from k8s.io/api.
//
// It owns three things:
//
//   - Decode: one JSON object becomes an Object. apiVersion, kind and a name
//     (or generateName) are required; the namespace may be missing, because
//     manifests omit it and the caller knows it (SetNamespace).
//   - Resource naming: every object is named by its group-qualified plural
//     ("pods", "jobs.batch", "widgets.example.com"), exact for built-in
//     kinds and guessed as Kubernetes guesses (lowercase, plural) for custom
//     kinds. Built-in cluster-scoped kinds report ClusterScoped.
//   - Trimming: Trimmed reduces an object to the fields quota accounting
//     reads and prints them deterministically, so equal states give equal
//     bytes and status churn (pod IPs, conditions, start times, managed
//     fields) vanishes.
//
// Typed values are kept for Pod, PersistentVolumeClaim, Service,
// ResourceQuota and LimitRange (core), RuntimeClass (node.k8s.io),
// PriorityClass (scheduling.k8s.io) and StorageClass (storage.k8s.io).
// Every other kind keeps its identity only and Value is nil.
//
// The package does no I/O.
//
// # Caveats
//
// Trimmed prints quantities in Kubernetes' canonical form. A binary-SI
// quantity whose canonical form has no suffix (for example "1.5Ki", printed
// 1536) reads back as decimal SI; objects stored by the API server are
// already canonical, so this only affects raw manifests.
//
// The guessed plural of a custom kind is what kubectl and the quota
// admission plugin use when no discovery is available; a CRD that declares
// an irregular plural is counted under the guessed name.
//
// A typed value shares no memory with the input, but callers that change
// Value (defaulting) must not share the Object between goroutines.
//
// Decode reads the form Trimmed writes for pods and for kinds without a
// typed value (what the projector and replay read back for every event)
// in one pass of its own on jsonscan, and everything else into the
// k8s.io/api types with github.com/goccy/go-json; both give the same
// Object. The type is chosen by the apiVersion and kind of the leading
// keys (the API server writes them first) when the value decoded agrees,
// by all the top-level keys otherwise. The first keeps, process-wide, the
// resource.Quantity of up to 1024 quantity texts that Kubernetes holds as
// an int64, and hands out copies, which share no inf.Dec.
package object
