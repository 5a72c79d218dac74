// Package kubecluster starts a real kube-apiserver, backed by an etcd
// embedded in the test process, for tests that talk to a cluster; and runs
// the project's own `quota` binary against it.
//
// Start runs kube-apiserver in process (k8s.io/kubernetes'
// cmd/kube-apiserver/app/testing) on a free port of 127.0.0.1, with an etcd
// (go.etcd.io/etcd/server/v3/embed) whose data lives in the test's
// TempDir. The Cluster it returns carries a rest.Config with the apiserver's
// loopback credentials (a privileged bearer token), the same credentials as
// a kubeconfig file for subprocesses, a clientset, and a client of the etcd
// (to compact it, for one). Extra kube-apiserver flags go in
// Options.APIServerFlags.
//
// No controller runs: no kube-controller-manager, no scheduler, no kubelet.
// Pods stay Pending; nothing creates a namespace's "default" ServiceAccount,
// so CreateNamespace creates it (the ServiceAccount admission plugin refuses
// pods without it); nothing recounts a ResourceQuota's status, so tests that
// create objects in a namespace with a quota run the apiserver with
// "--disable-admission-plugins=ResourceQuota" (the plugin refuses creates
// while a quota's status is unknown).
//
// The kubeconfig reaches the apiserver through a TCP relay of the
// harness: StopAPI takes the apiserver away from its clients (their
// connections closed, new ones refused), as an outage would, and StartAPI
// gives it back on the same address; Config and Client reach the
// apiserver directly, so a test can change the cluster meanwhile. Compact
// compacts etcd, so that a watch from an older resourceVersion gets 410
// Gone (with "--watch-cache=false"; the watch cache keeps its own window).
//
// Quota builds the project's `quota` binary once per test process (or
// takes $QUOTA_BIN, which make cluster sets; a binary built with -race
// makes a data race it reports fail the test), StartQuota runs it, and
// Serve starts `quota serve` on a free port with its data in a TempDir;
// Ledger.Restart stops it and starts it again on the same address and
// data, as an outage of the ledger's NATS would look to its clients.
//
// # Caveats
//
//   - One apiserver at a time per process: kube-apiserver registers
//     process-wide metrics and feature gates. Tests that Start a cluster
//     must not run in parallel with each other.
//   - The certificate fixture kube-apiserver's test server reads comes
//     from its package's testdata in the module cache (read-only); Start
//     works because the fixture for 127.0.0.1 is already there and is only
//     read.
//   - Starting takes seconds and a few hundred MiB: share one Cluster
//     among the subtests of a package where their objects do not collide
//     (a namespace per subtest).
package kubecluster
