// Package server runs the ledger as one process: the NATS connection (to an
// embedded JetStream server by default, or to an external NATS), the event
// stream, the projector and every request-reply responder. It is the
// wiring above projector, projector/admission and ingest, which do not
// know of one another's place in the process; only cmd/quota imports it.
//
// Invariant: Run starts each long-lived part in an errgroup and returns
// only after all of them have exited: on cancellation the responders
// drain, the projector commits the batch in hand, and the embedded server
// shuts down last, after its clients.
//
// The projection starts from its file, or, when there is none or it cannot
// go on (another layout, or a log trimmed past it), from the
// newest checkpoint the log continues (openProjection); a log that was
// trimmed and holds no such checkpoint stops the server with
// projector.ErrNoCheckpoint rather than fold a log missing its start.
// With a retention a projector.Retainer trims the log.
//
// With Config.Cluster the embedded server is a member of a JetStream
// cluster. A member starting waits for a meta leader and asks again for
// its streams while the cluster cannot answer (untilAvailable); while it
// runs, a quorumWatch keeps whether it is in step with the log (its
// replica in contact with a quorum, its projection not behind that
// replica), which admission asks before each decision and /readyz
// reports; on a stop, after the responders have drained and the projector
// has stopped, it leaves in lame-duck mode (ledger.Embedded.LameDuckShutdown).
//
// # Caveats
//
// One projection file serves one Server; two servers sharing a NATS must
// each have their own --data directory. Run locks the directory (LockFile)
// before opening anything in it, and a second server on it fails at once
// with ErrDataDirInUse. The embedded server listens on
// loopback by default; exposing it needs NATS authentication, which this
// package does not configure.
package server
