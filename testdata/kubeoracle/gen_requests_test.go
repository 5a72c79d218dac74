package kubeoracle

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Generators of admission requests other than pod creates: quotas over
// the resources of claims, services, ResourceClaims and object counts,
// the objects themselves, edits that make updates of them, and
// limitedResources configurations.

// storageQuotaNames are what quotas on PersistentVolumeClaims track, with
// a few names of other evaluators.
var storageQuotaNames = []string{
	"persistentvolumeclaims", "count/persistentvolumeclaims", "requests.storage",
	"gold.storageclass.storage.k8s.io/requests.storage", "gold.storageclass.storage.k8s.io/persistentvolumeclaims",
	"silver.storageclass.storage.k8s.io/requests.storage", "pods", "services",
}

// serviceQuotaNames are what quotas on Services track, with a few names of
// other evaluators.
var serviceQuotaNames = []string{
	"services", "count/services", "services.nodeports", "services.loadbalancers", "pods", "configmaps",
}

// deviceQuotaNames are what quotas on ResourceClaims track.
var deviceQuotaNames = []string{
	"count/resourceclaims.resource.k8s.io", "gpu.deviceclass.resource.k8s.io/devices",
	"fpga.deviceclass.resource.k8s.io/devices", "requests.deviceclass.resource.kubernetes.io/gpu",
	"pods", "count/pods",
}

// countQuotaNames are object counts, legacy and count/<resource>.
var countQuotaNames = []string{
	"configmaps", "count/configmaps", "secrets", "count/secrets", "count/jobs.batch",
	"count/deployments.apps", "pods", "services",
}

// quotaAmount is a hard or used amount for any quota resource name.
func quotaAmount(r *rand.Rand, name string) string {
	if strings.HasSuffix(name, "requests.storage") {
		return memText(r)
	}
	return quotaText(r, name)
}

// genQuotaOver is a random ResourceQuota named name tracking one to four
// of names, with used set for most of them when withUsed. scopes, when
// not nil, may restrict the quota by scope; it returns the names such a
// quota may track (nil: any).
func genQuotaOver(r *rand.Rand, name string, names []string, withUsed bool, scopes func(*rand.Rand, obj) []string) obj {
	spec := obj{}
	if scopes != nil {
		if allowed := scopes(r, spec); allowed != nil {
			names = allowed
		}
	}
	hard := obj{}
	for n := 1 + r.IntN(4); len(hard) < n && len(hard) < len(names); {
		k := pick(r, names...)
		hard[k] = quotaAmount(r, k)
	}
	spec["hard"] = hard
	status := obj{}
	if withUsed {
		used := obj{}
		for _, k := range sortedKeys(hard) {
			if chance(r, 0.92) {
				used[k] = quotaAmount(r, k)
				if chance(r, 0.3) {
					used[k] = "0"
				}
			}
		}
		status["used"] = used
	}
	return obj{"apiVersion": "v1", "kind": "ResourceQuota",
		"metadata": obj{"name": name, "namespace": "ns"}, "spec": spec, "status": status}
}

// storageScopes restricts a quota by VolumeAttributesClass now and then,
// and rarely by a pod scope.
func storageScopes(r *rand.Rand, spec obj) []string {
	switch r.IntN(8) {
	case 0, 1:
		e := obj{"scopeName": "VolumeAttributesClass", "operator": pick(r, "Exists", "DoesNotExist", "In", "NotIn")}
		if e["operator"] == "In" || e["operator"] == "NotIn" {
			e["values"] = []any{pick(r, "fast", "slow")}
			if chance(r, 0.3) {
				e["values"] = []any{"fast", "slow"}
			}
		}
		spec["scopeSelector"] = obj{"matchExpressions": []any{e}}
		return []string{"persistentvolumeclaims", "requests.storage"}
	case 2:
		spec["scopes"] = []any{"VolumeAttributesClass"}
		return []string{"persistentvolumeclaims", "requests.storage"}
	case 3:
		spec["scopes"] = []any{pick(r, "Terminating", "BestEffort")}
		return []string{"pods"}
	}
	return nil
}

// genQuotas is one to three quotas over names, named q0, q1, ...
func genQuotas(r *rand.Rand, names []string, scopes func(*rand.Rand, obj) []string) []any {
	var quotas []any
	for j := 0; j < 1+r.IntN(3); j++ {
		quotas = append(quotas, genQuotaOver(r, fmt.Sprintf("q%d", j), names, true, scopes))
	}
	return quotas
}

// change is one edit of an update: set path to value.
func change(value any, path ...any) obj { return obj{"path": path, "value": value} }

// removal is one edit of an update: remove path.
func removal(path ...any) obj { return obj{"path": path} }

// storedVersion gives a stored object its resourceVersion, as the API
// server does for the old object of every update.
func storedVersion(r *rand.Rand, o obj) {
	o["metadata"].(obj)["resourceVersion"] = fmt.Sprint(1 + r.IntN(9))
}

// genPodUpdate is an update of a stored pod: a plain update (moving it in
// or out of the Terminating scope, or touching what it may not change), a
// resize, a status update or another subresource.
func genPodUpdate(r *rand.Rand) obj {
	pod := genPod(r, podShape{lifecycle: true, resize: chance(r, 0.4), kubeletResize: true})
	delete(pod["spec"].(obj), "overhead")
	storedVersion(r, pod)
	containers := len(pod["spec"].(obj)["containers"].([]any))
	sub := pick(r, "", "", "", "resize", "resize", "resize", "status", "ephemeralcontainers", "binding")
	var changes []any
	resize := func() {
		for i := 0; i < 1+r.IntN(3); i++ {
			c := r.IntN(containers)
			list := pick(r, "requests", "limits")
			name := pick(r, "cpu", "cpu", "memory", "example.com/gpu")
			path := []any{"spec", "containers", c, "resources", list, name}
			if chance(r, 0.15) {
				changes = append(changes, removal(path...))
				continue
			}
			v := resourceText(r, name)
			changes = append(changes, change(v, path...))
			if list == "requests" && chance(r, 0.5) {
				// Mostly keep requests and limits equal, so that the QoS
				// class (which a resize may not change) stays.
				changes = append(changes, change(v, "spec", "containers", c, "resources", "limits", name))
			}
		}
	}
	deadline := func() {
		if chance(r, 0.2) {
			changes = append(changes, removal("spec", "activeDeadlineSeconds"))
		} else {
			changes = append(changes, change(pick(r, 1, 10, 30, 3600), "spec", "activeDeadlineSeconds"))
		}
	}
	switch sub {
	case "":
		deadline()
		if chance(r, 0.3) {
			changes = append(changes, change("x", "metadata", "labels", "changed"))
		}
		if chance(r, 0.15) {
			resize()
		}
	case "resize":
		resize()
		if chance(r, 0.2) {
			deadline()
		}
	default:
		if chance(r, 0.5) {
			changes = append(changes, change(pick(r, "Running", "Succeeded", "Failed"), "status", "phase"))
		}
		if chance(r, 0.5) {
			changes = append(changes, change(obj{"cpu": cpuText(r)}, "status", "containerStatuses", 0, "allocatedResources"))
		}
		if chance(r, 0.3) {
			deadline()
		}
	}
	return obj{"quotas": genQuotasOfPods(r), "object": pod, "changes": changes, "subresource": sub}
}

// genQuotasOfPods is one to three quotas of pod resources and scopes,
// some restricted to the Terminating or NotTerminating scope that updates
// move pods between.
func genQuotasOfPods(r *rand.Rand) []any {
	var quotas []any
	for j := 0; j < 1+r.IntN(3); j++ {
		name := fmt.Sprintf("q%d", j)
		if chance(r, 0.35) {
			quotas = append(quotas, genQuotaOver(r, name, nil, true, func(r *rand.Rand, spec obj) []string {
				spec["scopes"] = []any{pick(r, "Terminating", "NotTerminating")}
				return []string{"pods", "cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
			}))
			continue
		}
		quotas = append(quotas, genValidQuota(r, name))
	}
	return quotas
}

// genClaimUpdate is an update of a stored PersistentVolumeClaim: an
// expansion (or shrink) of its request, a change of its
// VolumeAttributesClass, or a status update (allocated size, capacity,
// current and target classes).
func genClaimUpdate(r *rand.Rand) obj {
	c := genClaim(r)
	storedVersion(r, c)
	if chance(r, 0.8) {
		// Only a bound claim may be expanded.
		c["spec"].(obj)["volumeName"] = "pv-1"
		status, _ := c["status"].(obj)
		if status == nil {
			status = obj{}
			c["status"] = status
		}
		status["phase"] = "Bound"
	}
	sub := pick(r, "", "", "status", "status")
	var changes []any
	for i := 0; i < 1+r.IntN(2); i++ {
		switch r.IntN(7) {
		case 0, 1, 2:
			changes = append(changes, change(memText(r), "spec", "resources", "requests", "storage"))
		case 3:
			changes = append(changes, change(pick(r, "fast", "slow"), "spec", "volumeAttributesClassName"))
		case 4:
			changes = append(changes, change(memText(r), "status", "allocatedResources", "storage"))
		case 5:
			changes = append(changes, change(pick(r, "fast", "slow"), "status", "currentVolumeAttributesClassName"))
		default:
			changes = append(changes, change(obj{"targetVolumeAttributesClassName": pick(r, "fast", "slow"), "status": "InProgress"}, "status", "modifyVolumeStatus"))
		}
	}
	return obj{"quotas": genQuotas(r, storageQuotaNames, storageScopes), "object": c, "changes": changes, "subresource": sub}
}

// genValidService is a random Service the API server accepts: ports for
// every type but ExternalName, node ports only where they apply.
func genValidService(r *rand.Rand) obj {
	t := pick(r, "ClusterIP", "NodePort", "LoadBalancer", "LoadBalancer", "ExternalName", "")
	spec := obj{}
	if t != "" {
		spec["type"] = t
	}
	if t == "ExternalName" {
		spec["externalName"] = "example.com"
	}
	spec["ports"] = genPorts(r, t == "NodePort" || t == "LoadBalancer", t != "ExternalName")
	if t == "LoadBalancer" && chance(r, 0.5) {
		spec["allocateLoadBalancerNodePorts"] = chance(r, 0.5)
	}
	return obj{"apiVersion": "v1", "kind": "Service",
		"metadata": obj{"name": fmt.Sprintf("svc-%d", r.IntN(100)), "namespace": "ns"}, "spec": spec}
}

// genPorts is zero to three ports (at least one when some), with node
// ports now and then when nodePorts.
func genPorts(r *rand.Rand, nodePorts, some bool) []any {
	ports := []any{}
	n := r.IntN(4)
	if some && n == 0 {
		n = 1
	}
	for j := 0; j < n; j++ {
		p := obj{"name": fmt.Sprintf("p%d", j), "port": 80 + j, "protocol": pick(r, "TCP", "UDP")}
		if nodePorts && chance(r, 0.4) {
			p["nodePort"] = 30000 + r.IntN(2000)
		}
		ports = append(ports, p)
	}
	return ports
}

// genServiceUpdate is an update of a stored Service: a change of type
// (with the fields the new type does not allow removed, as a client
// does), of ports, or of node port allocation.
func genServiceUpdate(r *rand.Rand) obj {
	s := genValidService(r)
	storedVersion(r, s)
	sub := pick(r, "", "", "", "status")
	var changes []any
	typ, _ := s["spec"].(obj)["type"].(string)
	for i := 0; i < 1+r.IntN(2); i++ {
		switch r.IntN(4) {
		case 0, 1:
			typ = pick(r, "ClusterIP", "NodePort", "LoadBalancer")
			changes = append(changes, change(typ, "spec", "type"))
			if typ != "LoadBalancer" {
				changes = append(changes, removal("spec", "allocateLoadBalancerNodePorts"))
			}
			if typ == "ClusterIP" {
				changes = append(changes, removal("spec", "externalTrafficPolicy"))
				changes = append(changes, change(genPorts(r, false, true), "spec", "ports"))
			}
		case 2:
			changes = append(changes, change(genPorts(r, typ == "NodePort" || typ == "LoadBalancer", true), "spec", "ports"))
		default:
			if typ == "LoadBalancer" {
				changes = append(changes, change(chance(r, 0.5), "spec", "allocateLoadBalancerNodePorts"))
			}
		}
	}
	return obj{"quotas": genQuotas(r, serviceQuotaNames, nil), "object": s, "changes": changes, "subresource": sub}
}

// genResourceClaim is a random ResourceClaim: exact requests (a count,
// all devices, or the mode left to its default) and requests of
// alternatives, over two device classes.
func genResourceClaim(r *rand.Rand) obj {
	amount := func(class string) obj {
		a := obj{"deviceClassName": class}
		switch r.IntN(5) {
		case 0:
			a["allocationMode"] = "All"
		case 1:
			a["allocationMode"] = "ExactCount"
			a["count"] = pick(r, 1, 2, 3, 8)
		case 2:
			a["count"] = pick(r, 1, 2, 4)
		}
		return a
	}
	var requests []any
	for i := 0; i < 1+r.IntN(3); i++ {
		req := obj{"name": fmt.Sprintf("r%d", i)}
		if chance(r, 0.35) {
			var subs []any
			for j := 0; j < 1+r.IntN(3); j++ {
				s := amount(pick(r, "gpu", "gpu", "fpga"))
				s["name"] = fmt.Sprintf("s%d", j)
				subs = append(subs, s)
			}
			req["firstAvailable"] = subs
		} else {
			req["exactly"] = amount(pick(r, "gpu", "gpu", "fpga"))
		}
		requests = append(requests, req)
	}
	return obj{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
		"metadata": obj{"name": fmt.Sprintf("rc-%d", r.IntN(100)), "namespace": "ns"},
		"spec":     obj{"devices": obj{"requests": requests}}}
}

// genCounted is a random object that only counts: a ConfigMap, a Secret
// or a Job.
func genCounted(r *rand.Rand) obj {
	meta := obj{"name": fmt.Sprintf("o-%d", r.IntN(100)), "namespace": "ns"}
	switch r.IntN(3) {
	case 0:
		return obj{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": obj{"k": "v"}}
	case 1:
		return obj{"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque"}
	}
	return obj{"apiVersion": "batch/v1", "kind": "Job", "metadata": meta}
}

// genLimited is a limitedResources configuration: one or two entries,
// each for a resource with matchContains, matchScopes or both.
func genLimited(r *rand.Rand) []any {
	var out []any
	for i := 0; i < 1+r.IntN(2); i++ {
		res := pick(r, "pods", "pods", "persistentvolumeclaims", "services", "resourceclaims", "configmaps")
		l := obj{"resource": res}
		if res == "resourceclaims" {
			l["apiGroup"] = "resource.k8s.io"
		}
		if chance(r, 0.75) {
			var mc []any
			for j := 0; j < 1+r.IntN(2); j++ {
				mc = append(mc, pick(r, "requests.cpu", "cpu", "memory", "storage", "gold", "nodeports",
					"loadbalancers", "devices", "gpu", "pods", "count/", "configmaps", "services", "example.com"))
			}
			l["matchContains"] = mc
		}
		if chance(r, 0.35) {
			sn := pick(r, "PriorityClass", "PriorityClass", "VolumeAttributesClass", "BestEffort", "Terminating", "CrossNamespacePodAffinity")
			s := obj{"scopeName": sn, "operator": pick(r, "Exists", "In")}
			if s["operator"] == "In" {
				s["values"] = []any{pick(r, "high", "fast")}
			}
			l["matchScopes"] = []any{s}
		}
		out = append(out, l)
	}
	return out
}

// genValidQuota is genQuota's first quota (with used) that the API
// server's validation accepts, of a few tries.
func genValidQuota(r *rand.Rand, name string) obj {
	for {
		q := genQuota(r, name, true)
		if _, valid, _, err := kubeQuota(mustJSON(q)); err == nil && valid || chance(r, 0.1) {
			return q
		}
	}
}
