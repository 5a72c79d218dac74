// Package export streams a live cluster into the ledger: it is what
// `quota export` runs. It owns the list and watch of every kind the
// ledger reads, the resync that follows every list, the per-resource
// checkpoints, and the leader election among replicas. Everything it reads
// goes into the log through package ingest, the one way in (trimming,
// message IDs, dead letters).
//
// # What is streamed
//
// Discovery, every Config.DiscoveryInterval, finds what Kubernetes' quota
// controller may count: the preferred version of every namespaced resource
// that supports create, list, watch and delete (events and the other
// resources quota ignores by default left out), custom resources
// included; plus the cluster-scoped StorageClasses, PriorityClasses,
// RuntimeClasses and DeviceClasses. A resource that appears gets a stream;
// one the API server no longer serves loses it; an API group whose
// discovery fails keeps its streams as they are. Pods, claims, services,
// quotas, LimitRanges, ResourceClaims and the cluster-scoped kinds are
// read whole; every other kind is only counted and is read as metadata
// only (PartialObjectMetadata), so that, for one, a Secret's data never
// leaves the cluster. Metadata still holds annotations (a Secret applied
// with kubectl keeps its data in last-applied-configuration): they reach
// the exporter, and trimming drops them before anything is appended.
//
// Built-in kinds are read as protobuf, the format kube-apiserver's own
// clients read, so that its watch cache encodes their events once
// (protobuf.go): those read whole are decoded into their k8s.io/api types
// and trimmed from them, to the same bytes their JSON gives; those only
// counted as PartialObjectMetadata. Custom resources and the kinds of
// aggregated APIs are read as JSON.
//
// # Invariant
//
// For every resource, the log holds every watch event up to the
// resource's checkpoint: the checkpoint (a resourceVersion in the
// JetStream key-value bucket Config.CheckpointBucket) moves only past
// events JetStream has acknowledged. Every list, whatever set it off (the
// first start without a checkpoint; a watch or a checkpoint the API server
// no longer has, 410 Gone; a watch that ended with another error; a
// takeover from another replica), is followed by a resync of the resource
// in every namespace it lists and every namespace the log holds, so that
// what was deleted while nothing watched is removed.
//
// Each resource is a client-go Reflector whose store is the stream itself:
// it holds no object. Objects are trimmed as they are decoded, before the
// Reflector sees them, so the largest thing held is one list while it is
// resynced. Watch events wait in a window of Config.InFlightMax events
// read and not yet acknowledged; a full window holds the watches back and
// drops nothing.
//
// # Progress and readiness
//
// The exporter records how far its feed has come, so that a reservation
// whose object never appears is released by the feed rather than by a
// clock (progress.go): every ProgressInterval each stream asks the API
// server for its resource's current resourceVersion, and once its watch
// has delivered and the log acknowledged everything up to it, a Progress
// event states the point (the version, and the time before asking). A
// standby is ready once it could lead (the API server answers, and its
// ServiceAccount may list and watch every resource and renew the Lease,
// asked by SelfSubjectAccessReviews every AccessCheckInterval); the leader
// while every stream has listed and no watch has waited FeedBehind for
// the version it asked for.
//
// # Caveats
//
//   - Leader election on a Lease is time-based, not fenced. A leader that
//     loses its lease stops appending within half the margin between
//     LeaseDuration and RenewDeadline, before another replica may take
//     it; a stop does not release the lease, for the same reason, so a
//     standby takes over LeaseDuration after the leader's last renewal.
//     A leader whose process stalls (no timers run) past its lease may
//     still append a few events after another replica has taken over:
//     one that lands after the takeover's resync restates an older state
//     until the object next changes.
//   - A namespaced resource's resync covers the namespaces listed and the
//     namespaces of which the log holds any event: a relist appends one
//     resync event per such namespace and resource, most of them empty.
//   - The ledger names a custom resource by its kind's guessed plural
//     (ledger/object); a custom resource whose plural is irregular is
//     counted under the guessed name, and its quota's count/<resource>
//     misses it. The exporter logs a warning when it sees one.
//   - A restarted replica resumes from its checkpoints only when it keeps
//     its Identity (a pod's name, by default the host name); a new
//     identity taking over the lease from another relists everything.
//   - Lists are read in pages of ListPageSize at the latest
//     resourceVersion, from etcd or the API server's consistent cache,
//     rather than all at once from the watch cache.
//   - Every countable kind is watched, leases.coordination.k8s.io
//     included (nodes renew theirs every 10 seconds): their MODIFIED
//     events cost watch traffic and reach ingest, which skips them as
//     unchanged (a count-only kind's trimmed form is its identity).
//   - On a quiet resource the feed moves only at the watch's bookmarks,
//     which the API server's watch cache sends about every minute; with
//     the watch cache off (--watch-cache=false) a quiet resource records
//     no progress, and reservations of it are held until their objects
//     appear.
//   - A resource whose resourceVersions do not compare (an aggregated
//     API's own storage) records no progress.
//   - A checkpoint is written at most every CheckpointInterval while
//     events flow: a restart may send again up to that much, which
//     ingest's message IDs make duplicates in the log.
package export
