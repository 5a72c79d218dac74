// Package benchmark measures the ledger side by side with the raw ceilings
// of the infrastructure it runs on, in one process and on one generated
// stream (ledger/ledgertest/workload), so that every speed claim comes with
// the number it should be compared to.
//
// Run starts an embedded JetStream server with the ledger's sync policy and
// measures, in this order:
//
//   - raw JetStream publish of the very payloads the ledger appends, with the
//     same stream options, message IDs and in-flight window (the ceiling of
//     ingest), to a stream deleted once ingest has been measured;
//   - ingest: watch-event JSON to durable ledger events;
//   - raw ordered read of the ledger's stream (the ceiling of projection and
//     replay);
//   - projection: a fresh projector following the stream to its end;
//   - raw NATS request-reply with an empty responder, 1 and 16 clients (the
//     ceiling of every query);
//   - the describe query, admission (dry-run and reserving) and replay,
//     where those exist (Hooks); a figure that cannot be measured yet is
//     reported as such, never estimated;
//   - peak RSS (VmHWM) and the projection file's size.
//
// Each request-reply measurement runs Config.Repeats times and gives the
// figures of its median run. Each Figure carries its value, its ceiling,
// the ratio and the target it is held to. WriteTable prints them;
// WriteJSON writes them for tools.
//
// # Caveats
//
// Peak RSS is the whole process's (/proc/self/status VmHWM): the embedded
// NATS server, the generator and the test binary count too, exactly as
// they would in `quota serve` with its embedded server. Run resets the
// mark between phases where the kernel allows it (/proc/self/clear_refs)
// and reports each phase's peak, with, in its note, the largest of samples
// taken every 100 ms broken down (memSampler).
//
// Figures are only comparable within one run: the machine, its disk (the
// ledger syncs every append by default) and other load move all of them.
// Benchmarks are not tests; nothing here asserts a speed.
package benchmark
