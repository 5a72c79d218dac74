// Package quota is Kubernetes' ResourceQuota accounting as pure functions:
// what an object charges, which quotas it is charged to, what a quota has
// used, whether a new object is admitted, and how a raw manifest is
// defaulted before that question is asked. It follows Kubernetes v1.36
// (pkg/quota/v1/evaluator/core, the apiserver's resourcequota admission
// plugin, and ValidateResourceQuota) and does no I/O.
//
// Rules, one sentence each:
//
//   - A pod always charges count/pods; it charges pods and compute only while
//     it is not Failed or Succeeded and not past deletionTimestamp plus its
//     grace period.
//   - A pod's requests and limits are the sum over its containers and
//     sidecars (restartable init containers), raised to the peak of each init
//     container plus the sidecars started before it, replaced by pod-level
//     resources where set, plus spec.overhead (limits only where non-zero).
//   - During an in-place resize (a container's status reports resources),
//     each app container and sidecar charges the larger of its spec and
//     what the kubelet actuated or allocated for it (only the latter when
//     the resize is infeasible), and the pod the total of those.
//   - Requests charge cpu/requests.cpu, memory/requests.memory,
//     ephemeral-storage/requests.ephemeral-storage, hugepages-<size> and
//     requests.hugepages-<size>; extended resources, and a DeviceClass's
//     (deviceclass.resource.kubernetes.io/<class>), charge
//     requests.<name> only; limits charge limits.<name>.
//   - A claim charges persistentvolumeclaims, count/persistentvolumeclaims,
//     requests.storage (the larger of its request and allocated size, rounded
//     up to whole bytes) and the same under
//     <class>.storageclass.storage.k8s.io/, the class coming from the beta
//     annotation before spec.storageClassName.
//   - A service charges services and count/services, one load balancer if it
//     is a LoadBalancer, and a node port per port for NodePort and
//     LoadBalancer (only explicit node ports when allocation is off).
//   - A ResourceClaim charges count/resourceclaims.resource.k8s.io and,
//     per DeviceClass, <class>.deviceclass.resource.k8s.io/devices: an
//     exact request's count (32 for mode All), and of a request's
//     alternatives the most any asks of each class; the same again as
//     requests.deviceclass.resource.kubernetes.io/<class>, unless the
//     scheduler made the claim for the pod that controls it.
//   - Every other object charges count/<resource> and, for secrets,
//     configmaps, replicationcontrollers and resourcequotas, the legacy name;
//     events and virtual resources (bindings, reviews) charge nothing.
//   - A quota matches an object when it tracks a resource the object's
//     evaluator produces and every scope matches; only pods match pod scopes
//     and only claims match VolumeAttributesClass, so scoped quotas never
//     match other objects.
//   - A quota's used starts at zero for every hard resource and adds the
//     tracked part of each matching charge; its status shows only the names
//     some evaluator computes (UsageTracked): not a bare extended resource,
//     nor the count of an event or of a resource the cluster does not serve.
//   - Admission checks "must specify" (cpu and memory requests and limits on
//     every container once a quota tracks them, unless the pod states
//     pod-level resources), negative usage, limitedResources, and then that
//     each matching quota's used plus the request stays within hard, naming
//     only the exceeded resources.
//   - When several quotas refuse a request, the one named is the first in
//     name order (Kubernetes names the first its informer meets, a draw).
//   - An update is charged only what grows, by each quota that matched the
//     object before it; a quota that matches it only after the update is
//     charged all of it. A delete is always allowed.
//   - Pods are evaluated on create, on updates of their resize subresource
//     and on plain updates that move them between the Terminating and
//     NotTerminating scopes; claims (of storage and of devices) and
//     services on create and update, and claims of storage on every
//     update of their status (never refused for exceeding a quota);
//     everything else on create; no request on another subresource.
//   - Raw manifests get requests from limits, every quantity rounded up to
//     a multiple of 1m, LimitRange container defaults, the default
//     PriorityClass and RuntimeClass overhead before admission (Default),
//     and are refused before quota as the API server's validation of what
//     quota reads (requests against limits, negative or fractional
//     quantities, huge pages, pod-level resources, the active deadline),
//     LimitRanger (minimum, maximum, limit-to-request ratio), ServiceAccount
//     (an account the namespace lacks, when its accounts are known),
//     Priority and RuntimeClass refuse them (Default, Validate).
//
// # Caveats
//
// Keeping a quota's used as objects come and go is the projector's, not
// this package's: Matches and Mask say what each charge adds to it. Sums
// keep the format of their first non-zero term, so their order decides
// how a used prints; Kubernetes itself sums in informer order.
//
// A quota whose spec Kubernetes would refuse has Invalid set and is ignored
// by Matches and Admit; it can only come from a hand-written event, never
// from a cluster.
//
// Pod-level in-place resize (pod status resources) is read as disabled, as
// its feature gate is off by default; pod-level resources in the spec are
// honoured.
//
// The "insufficient quota to match these scopes" refusal is a plain error in
// Kubernetes, which the API server reports with code 500 and the bare
// message; Decision reproduces that.
//
// Default is for manifests only: applying it to an object the API server
// stored applies LimitRange defaults a second time.
package quota
