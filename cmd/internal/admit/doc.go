// Package admit is the work of `quota admit`: it reads one manifest (JSON
// or YAML), checks its fields against its kind's as kubectl does, sends
// it to the ledger as an admission.k8s.io/v1 AdmissionReview on
// quota.admit.<namespace>, and prints the decision.
//
// Invariant: a manifest is sent only when it holds exactly one object, of
// a namespace that is a valid name and agrees with -n; what the ledger
// answers is printed as it came (allowed, or Kubernetes' message).
//
// # Caveats
//
//   - The values of the manifest are not checked here: they are the
//     ledger server's to judge, in Kubernetes' words.
//   - Config.Ask carries the request; the caller owns the connection and
//     the wording of its errors.
package admit
