// Package answer sends and receives request-reply answers that may be
// larger than one NATS message.
//
// A NATS server refuses a message larger than its max_payload (1 MiB by
// default), so an answer that large (describe -A over thousands of
// namespaces, explain of a namespace of thousands of pods) would never
// reach its client. Send splits such an answer into parts, each published
// to the request's reply subject with the headers PartHeader (1, 2, ...)
// and PartsHeader (their number); the answer is their bodies in order.
// An answer that fits is sent as one plain message, so a client that
// knows nothing of parts (nats req) reads every answer that fits.
// Request sends a request and puts the parts back together.
package answer
