// Package admission answers "may this object be created?" over NATS
// request-reply, speaking Kubernetes' admission.k8s.io/v1 AdmissionReview
// on the subject quota.admit.<namespace>.
//
// A decision reads one consistent view of the namespace in the projection
// (its quotas with their usage, LimitRanges, RuntimeClasses) and the
// sequence S of the namespace's last applied event, and asks ledger/quota
// for the verdict. A view without quotas or without LimitRanges is first
// looked up in the log, at most once per namespace in LiveLookupTTL:
// if the namespace's subject holds events beyond the view, the decision
// waits for the projection to apply them, where Kubernetes' admission
// would list the namespace's quotas and LimitRanges live. An allowed
// create that charges a quota is then reserved:
// a Reserve event is appended to the namespace's subject expecting its last
// sequence to still be S. If another admission (on any replica) or ingest
// appended first, JetStream refuses the append, the responder waits for its
// projection to catch up and decides again. So two admissions racing for
// the last unit of a quota cannot both be allowed, whatever the number of
// clients and replicas.
//
// Creates and updates in one namespace are decided in rounds (group
// commit): those that queue while a round's append is on its way are decided
// together in the next, one after the other, and their reservations go to
// the log as one Reserve event, with one compare-and-swap and one write to
// disk. A refused append decides the whole round again; the contract
// (what is batched, what may be re-run, what a caller waits for) is
// Responder.groupCommit's.
//
// Config.Limited carries the ResourceQuota plugin's limitedResources, as
// kube-apiserver's admission configuration file sets them
// (LoadLimitedResources reads that file): resources, or pods of scopes,
// that may be consumed only in a namespace with a quota covering them.
//
// On a cluster, Config.Quorum says whether this server is in step with the
// log (in contact with a quorum of its replicas, its projection not
// behind); while it is not, requests wait for it and then fail with 503, so that a server cut off from the others never
// decides from a projection missing what they append. A reservation
// carries a message ID, so that one re-sent after its leader went away
// (ledger.Stream.Append) is a duplicate, not a conflict with itself.
//
// The reply is sent as soon as the reservation is durable in the log. The
// responder keeps the namespace's view with its own reservations on top
// until its projection has applied them, so its next decisions see them at
// once without waiting; describe waits for the end of the stream, so it
// sees them too.
//
// A reservation holds until the object's own event arrives (an upsert of
// the same resource, namespace and name replaces it) or until its TTL,
// counted from the stream's timestamp of the Reserve event, has passed; a
// sweeper then appends an Expire event, so replay reproduces the release.
// The same sweep appends a Deadline event for each pod that still counts
// past its deletion deadline (deletionTimestamp plus the grace period, by
// the responder's clock): from that event on the fold, and every replay,
// charges the pod as Kubernetes does past its deadline.
//
// An allowed update that grows what an object charges is reserved in the
// same rounds, as a hold (a reservation with operation UPDATE, holding the
// updated object): until the object's own event reports a charge that covers it
// (or it expires, or the object is deleted), the object charges each
// quota, per resource, the larger of its own figure and the updated
// object's. For a quota that matched the object before, that adds the
// growth, as Kubernetes' admission plugin adds it; for one the update
// brings the object into, the object's whole charge.
//
// # Caveats
//
// Dry-run and DELETE requests never reserve. Two updates of one object
// admitted before either is made count the larger, where Kubernetes adds
// both increases; an update of an object the log does not hold is decided
// but charges nothing (its reservation is appended all the same, so that
// the compare-and-swap finds an object whose event is in the log and not
// yet applied). An object offered with generateName and
// no name is reserved under a placeholder name (projector.PlaceholderName);
// the ADDED event of a new object with that generateName confirms it (the
// first by id, if several are held). Reviews relayed from a validating
// admission webhook carry the name: a current kube-apiserver generates it
// before validating admission.
package admission
