// Package install checks the ledger installed as a cluster's quota
// enforcement, on a real kube-apiserver (kubecluster) with its own
// ResourceQuota admission plugin turned off: `quota serve`, a feed of the
// cluster's objects into the log, and `quota webhook` registered as a
// validating admission webhook; and it validates every manifest of
// deploy/ against the same apiserver with a server-side dry run.
//
// Its benchmark compares pod creates through the apiserver with the
// built-in plugin enforcing and with the ledger's webhook enforcing.
//
// # Caveats
//
// The apiserver runs no controller: no kubelet, no scheduler, no quota
// controller. Pods stay unscheduled, so a delete removes them at once.
package install
