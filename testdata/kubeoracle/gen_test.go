package kubeoracle

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"
)

// JSON trees: generated objects are plain maps, so that quantities keep
// the exact text the generator chose when both sides read them.
type obj = map[string]any

// sortedKeys are m's keys in order: a generator drawing a random number
// per key must visit them in a fixed order to be reproducible.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func chance(r *rand.Rand, p float64) bool { return r.Float64() < p }

// cpuText is a CPU quantity in one of the forms people write.
func cpuText(r *rand.Rand) string {
	switch r.IntN(12) {
	case 0:
		return fmt.Sprintf("%dm", pick(r, 0, 1, 5, 10, 100, 250, 500, 999, 1000, 1500, 2000))
	case 1:
		return fmt.Sprintf("%dm", 1+r.IntN(4000))
	case 2:
		return fmt.Sprint(r.IntN(9))
	case 3:
		return pick(r, "0.5", "1.5", "0.25", "0.1", "2.0", "0.001", "0.0005", "0.0001", "1.", ".5", "0.333")
	case 4:
		return pick(r, "1e-3", "5e-1", "1E0", "2e0", "1e1", "100e-3", "15e-1")
	case 5:
		return fmt.Sprintf("%du", pick(r, 1, 100, 500000, 1500000))
	case 6:
		return fmt.Sprintf("%dn", pick(r, 1, 1000, 500000000, 1000000001))
	case 7:
		return pick(r, "+1", "+500m", "01", "0.50", "1k", "0.001k", "0")
	default:
		return fmt.Sprintf("%dm", pick(r, 100, 200, 250, 500, 750, 1000))
	}
}

// memText is a byte quantity in one of the forms people write.
func memText(r *rand.Rand) string {
	switch r.IntN(14) {
	case 0:
		return pick(r, "128974848", "129e6", "129M", "1500M", "0.1Gi", "1.5Gi", "1Gi", "512Mi", "64Mi")
	case 1:
		return fmt.Sprintf("%dMi", pick(r, 1, 64, 100, 128, 256, 512, 1000, 1024, 1536))
	case 2:
		return fmt.Sprintf("%dKi", pick(r, 1, 512, 1000, 1024, 4096))
	case 3:
		return fmt.Sprintf("%dGi", 1+r.IntN(8))
	case 4:
		return fmt.Sprintf("%dM", pick(r, 1, 100, 128, 500, 1000, 1500))
	case 5:
		return fmt.Sprintf("%dk", pick(r, 1, 100, 1024, 1500))
	case 6:
		return fmt.Sprintf("%dG", 1+r.IntN(4))
	case 7:
		return pick(r, "1e9", "1E9", "2e6", "1.5e9", "128e6", "1e3", "12e5")
	case 8:
		return fmt.Sprint(pick(r, 0, 1, 1000, 1024, 1048576, 134217728, 1000000000))
	case 9:
		return pick(r, "0.5Gi", "0.25Mi", "1.5Ki", "0.5Ki", "2.5M", "0.1M", "1.1Gi")
	case 10:
		return pick(r, "500m", "1500m", "1m", "100000m", "1.5", "0.5")
	case 11:
		return pick(r, "1Ti", "1Pi", "1T", "+1Gi", "0Mi", "0Gi")
	default:
		return fmt.Sprintf("%dMi", pick(r, 64, 128, 256, 512))
	}
}

// countText is an integer quantity for extended resources and counts.
func countText(r *rand.Rand) string {
	return pick(r, "0", "1", "1", "2", "3", "8", "1e0", "2e1", "1k", "+2", "10")
}

// hugeText is a huge page amount: a multiple of the page size.
func hugeText(r *rand.Rand) string {
	return pick(r, "2Mi", "4Mi", "10Mi", "100Mi", "1Gi", "0", "2097152", "20Mi")
}

// resourceText picks the text of a quantity fitting the resource name.
func resourceText(r *rand.Rand, name string) string {
	switch name {
	case "cpu":
		return cpuText(r)
	case "memory", "ephemeral-storage", "storage":
		return memText(r)
	case "hugepages-2Mi", "hugepages-1Gi":
		return hugeText(r)
	}
	return countText(r)
}

// containerResourceNames are what containers ask for.
var containerResourceNames = []string{
	"cpu", "cpu", "cpu", "memory", "memory", "memory", "ephemeral-storage",
	"hugepages-2Mi", "example.com/gpu", "example.com/gpu", "vendor.io/fpga",
	"kubernetes.io/widget",
}

// deviceClassResource is an extended resource backed by a DRA DeviceClass
// (deviceclass.resource.kubernetes.io/<class>). Only the comparisons made
// for it generate it, as the ledger does not know it and every other
// comparison would report that difference again.
const deviceClassResource = "deviceclass.resource.kubernetes.io/gpu-class"

// withDeviceClass makes genPod and genQuota use deviceClassResource.
var withDeviceClass = false

// resourceList is a random list over names, each present with chance p.
func resourceList(r *rand.Rand, names []string, p float64) obj {
	l := obj{}
	for _, n := range names {
		if chance(r, p) {
			l[n] = resourceText(r, n)
		}
	}
	return l
}

// requirements is a container's resources: requests, limits, both or none.
func requirements(r *rand.Rand, p float64) obj {
	res := obj{}
	names := []string{"cpu", "memory"}
	if chance(r, 0.4) {
		names = append(names, pick(r, containerResourceNames...))
	}
	if withDeviceClass && chance(r, 0.5) {
		names = append(names, deviceClassResource)
	}
	if chance(r, 0.2) {
		names = append(names, pick(r, containerResourceNames...))
	}
	switch r.IntN(5) {
	case 0:
	case 1:
		res["requests"] = resourceList(r, names, p)
	case 2:
		res["limits"] = resourceList(r, names, p)
	default:
		req := resourceList(r, names, p)
		lim := resourceList(r, names, p)
		// Mostly valid: a request equal to its limit cannot exceed it.
		for _, k := range sortedKeys(req) {
			if _, ok := lim[k]; ok && chance(r, 0.7) {
				lim[k] = req[k]
			}
		}
		res["requests"] = req
		res["limits"] = lim
	}
	return res
}

// podShape says which parts of a pod genPod fills in.
type podShape struct {
	// lifecycle adds what the API server and the kubelet write over a
	// pod's life: phase, deletion timestamp and grace period.
	lifecycle bool
	// resize adds in-place resize status: allocated and actual resources
	// per container and the resize conditions.
	resize bool
	// kubeletResize makes that status as the kubelet writes it: every
	// container that has a status has both allocatedResources and
	// resources, and only app containers and sidecars have them.
	kubeletResize bool
}

// genPod is a random pod of the given shape.
func genPod(r *rand.Rand, shape podShape) obj {
	meta := obj{"name": fmt.Sprintf("pod-%d", r.IntN(1000)), "namespace": "ns"}
	spec := obj{}
	status := obj{}
	var names []string
	var sidecars []string
	nc := 1 + r.IntN(3)
	var containers []any
	for i := 0; i < nc; i++ {
		n := fmt.Sprintf("app-%d", i)
		names = append(names, n)
		containers = append(containers, obj{"name": n, "image": "busybox", "resources": requirements(r, 0.7)})
	}
	spec["containers"] = containers
	if chance(r, 0.5) {
		var inits []any
		for i := 0; i < 1+r.IntN(3); i++ {
			n := fmt.Sprintf("init-%d", i)
			c := obj{"name": n, "image": "busybox", "resources": requirements(r, 0.7)}
			if chance(r, 0.5) {
				c["restartPolicy"] = "Always"
				sidecars = append(sidecars, n)
			} else {
				names = append(names, n)
			}
			inits = append(inits, c)
		}
		spec["initContainers"] = inits
	}
	if chance(r, 0.15) {
		spec["overhead"] = resourceList(r, []string{"cpu", "memory", "example.com/gpu"}, 0.6)
	}
	if chance(r, 0.03) {
		// Stated but empty: still the pod-level path for the QoS class.
		spec["resources"] = obj{}
	} else if chance(r, 0.15) {
		pr := obj{}
		if chance(r, 0.7) {
			pr["requests"] = resourceList(r, []string{"cpu", "memory", "hugepages-2Mi"}, 0.6)
		}
		if chance(r, 0.6) {
			pr["limits"] = resourceList(r, []string{"cpu", "memory", "hugepages-2Mi"}, 0.6)
		}
		spec["resources"] = pr
	}
	if chance(r, 0.3) {
		spec["activeDeadlineSeconds"] = pick(r, 0, 1, 30, 3600)
	}
	if chance(r, 0.4) {
		spec["priorityClassName"] = pick(r, "high", "low", "system-cluster-critical", "")
	}
	if chance(r, 0.25) {
		spec["affinity"] = genAffinity(r)
	}
	if shape.lifecycle {
		if chance(r, 0.3) {
			status["phase"] = pick(r, "Pending", "Running", "Succeeded", "Failed", "Unknown")
		}
		if chance(r, 0.15) {
			offset := time.Duration(pick(r, -120, -31, -30, -29, 0, 10)) * time.Second
			meta["deletionTimestamp"] = now.Add(offset).Format(time.RFC3339)
			if chance(r, 0.8) {
				meta["deletionGracePeriodSeconds"] = pick(r, 0, 30, 60)
			}
		}
	}
	if shape.resize {
		genResizeStatus(r, status, names, sidecars, shape.kubeletResize)
	}
	p := obj{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
	if len(status) > 0 {
		p["status"] = status
	}
	return p
}

// genResizeStatus fills what the kubelet reports during an in-place
// resize: allocated and actual resources per container, and the resize
// conditions.
func genResizeStatus(r *rand.Rand, status obj, names, sidecars []string, kubelet bool) {
	var css, ics []any
	all := append(append([]string{}, names...), sidecars...)
	for _, n := range all {
		if kubelet && len(n) > 4 && n[:4] == "init" && !contains(sidecars, n) {
			continue
		}
		if chance(r, 0.25) {
			continue
		}
		cs := obj{"name": n, "image": "busybox", "imageID": "", "ready": true, "restartCount": 0}
		if kubelet || chance(r, 0.7) {
			cs["allocatedResources"] = resourceList(r, []string{"cpu", "memory", "example.com/gpu"}, 0.6)
		}
		if kubelet || chance(r, 0.7) {
			res := obj{}
			if chance(r, 0.8) {
				res["requests"] = resourceList(r, []string{"cpu", "memory"}, 0.7)
			}
			if chance(r, 0.6) {
				res["limits"] = resourceList(r, []string{"cpu", "memory"}, 0.7)
			}
			cs["resources"] = res
		}
		if len(n) > 4 && n[:4] == "init" {
			ics = append(ics, cs)
		} else {
			css = append(css, cs)
		}
	}
	if len(css) > 0 {
		status["containerStatuses"] = css
	}
	if len(ics) > 0 {
		status["initContainerStatuses"] = ics
	}
	var conds []any
	if chance(r, 0.5) {
		conds = append(conds, obj{"type": "PodResizePending", "status": "True", "reason": pick(r, "Infeasible", "Deferred")})
	}
	if chance(r, 0.3) {
		conds = append(conds, obj{"type": "PodResizeInProgress", "status": "True"})
	}
	if chance(r, 0.2) {
		conds = append(conds, obj{"type": "Ready", "status": "True", "reason": "Infeasible"})
	}
	if len(conds) > 0 {
		r.Shuffle(len(conds), func(i, j int) { conds[i], conds[j] = conds[j], conds[i] })
		status["conditions"] = conds
	}
	if chance(r, 0.2) {
		status["resize"] = pick(r, "Infeasible", "Deferred", "InProgress", "Proposed")
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func genAffinity(r *rand.Rand) obj {
	term := func() obj {
		t := obj{"topologyKey": "kubernetes.io/hostname", "labelSelector": obj{"matchLabels": obj{"app": "x"}}}
		switch r.IntN(4) {
		case 0:
			t["namespaces"] = []any{"other"}
		case 1:
			t["namespaceSelector"] = obj{}
		case 2:
			t["namespaces"] = []any{}
		}
		return t
	}
	one := func() obj {
		a := obj{}
		if chance(r, 0.5) {
			a["requiredDuringSchedulingIgnoredDuringExecution"] = []any{term()}
		}
		if chance(r, 0.5) {
			a["preferredDuringSchedulingIgnoredDuringExecution"] = []any{obj{"weight": 10, "podAffinityTerm": term()}}
		}
		return a
	}
	a := obj{}
	if chance(r, 0.6) {
		a["podAffinity"] = one()
	}
	if chance(r, 0.6) {
		a["podAntiAffinity"] = one()
	}
	if chance(r, 0.2) {
		a["nodeAffinity"] = obj{}
	}
	return a
}

// quotaResourceNames are what quotas track, pod resources most often.
var quotaResourceNames = []string{
	"pods", "count/pods", "cpu", "memory", "requests.cpu", "requests.memory",
	"limits.cpu", "limits.memory", "ephemeral-storage", "requests.ephemeral-storage",
	"limits.ephemeral-storage", "hugepages-2Mi", "requests.hugepages-2Mi",
	"requests.example.com/gpu", "example.com/gpu", "limits.example.com/gpu",
	"requests.vendor.io/fpga", "services", "requests.storage", "persistentvolumeclaims", "configmaps",
	"count/deployments.apps",
}

// quotaText is a hard or used amount for a quota resource.
func quotaText(r *rand.Rand, name string) string {
	switch name {
	case "cpu", "requests.cpu", "limits.cpu":
		return cpuText(r)
	case "memory", "requests.memory", "limits.memory", "ephemeral-storage",
		"requests.ephemeral-storage", "limits.ephemeral-storage", "requests.storage":
		return memText(r)
	case "hugepages-2Mi", "requests.hugepages-2Mi":
		return hugeText(r)
	}
	return countText(r)
}

var scopeNames = []string{"Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity"}

// genQuota is a random ResourceQuota named name. withUsed fills
// status.used for some or all of what it tracks.
func genQuota(r *rand.Rand, name string, withUsed bool) obj {
	hard := obj{}
	for n := 1 + r.IntN(4); len(hard) < n; {
		k := pick(r, quotaResourceNames[:14]...)
		if chance(r, 0.15) {
			k = pick(r, quotaResourceNames...)
		}
		if withDeviceClass && chance(r, 0.3) {
			k = "requests." + deviceClassResource
		}
		hard[k] = quotaText(r, k)
	}
	spec := obj{"hard": hard}
	if chance(r, 0.3) {
		var scopes []any
		for i := 0; i < 1+r.IntN(2); i++ {
			scopes = append(scopes, pick(r, scopeNames...))
		}
		spec["scopes"] = scopes
	}
	if chance(r, 0.3) {
		var exprs []any
		for i := 0; i < 1+r.IntN(2); i++ {
			sn := pick(r, scopeNames...)
			e := obj{"scopeName": sn}
			if sn == "PriorityClass" {
				e["operator"] = pick(r, "In", "NotIn", "Exists", "DoesNotExist")
				if e["operator"] == "In" || e["operator"] == "NotIn" {
					e["values"] = []any{pick(r, "high", "low")}
					if chance(r, 0.3) {
						e["values"] = []any{"high", "low"}
					}
				}
			} else {
				e["operator"] = pick(r, "Exists", "Exists", "Exists", "DoesNotExist", "In")
			}
			exprs = append(exprs, e)
		}
		spec["scopeSelector"] = obj{"matchExpressions": exprs}
	}
	status := obj{}
	if withUsed {
		used := obj{}
		for _, k := range sortedKeys(hard) {
			if chance(r, 0.95) {
				used[k] = quotaText(r, k)
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

// genClaim is a random PersistentVolumeClaim, with its class named by the
// beta annotation, spec.storageClassName, both or neither, and possibly an
// expansion in progress (status.allocatedResources).
func genClaim(r *rand.Rand) obj {
	meta := obj{"name": fmt.Sprintf("claim-%d", r.IntN(100)), "namespace": "ns"}
	spec := obj{"accessModes": []any{"ReadWriteOnce"}}
	if chance(r, 0.95) {
		spec["resources"] = obj{"requests": obj{"storage": memText(r)}}
	}
	if chance(r, 0.4) {
		meta["annotations"] = obj{"volume.beta.kubernetes.io/storage-class": pick(r, "gold", "silver", "")}
	}
	if chance(r, 0.6) {
		spec["storageClassName"] = pick(r, "gold", "silver", "")
	}
	if chance(r, 0.2) {
		spec["volumeAttributesClassName"] = pick(r, "fast", "")
	}
	c := obj{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}
	status := obj{}
	if chance(r, 0.3) {
		status["allocatedResources"] = obj{"storage": memText(r)}
	}
	if chance(r, 0.3) {
		status["capacity"] = obj{"storage": memText(r)}
	}
	if chance(r, 0.2) {
		status["phase"] = pick(r, "Bound", "Pending", "Lost")
	}
	if len(status) > 0 {
		c["status"] = status
	}
	return c
}

// genService is a random Service of any type, with ports that may name a
// node port, and node port allocation for load balancers on or off.
func genService(r *rand.Rand) obj {
	spec := obj{}
	if chance(r, 0.9) {
		spec["type"] = pick(r, "ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
	}
	if spec["type"] == "ExternalName" {
		spec["externalName"] = "example.com"
	}
	var ports []any
	for i := 0; i < r.IntN(4); i++ {
		p := obj{"name": fmt.Sprintf("p%d", i), "port": 80 + i, "protocol": pick(r, "TCP", "UDP")}
		if chance(r, 0.4) {
			p["nodePort"] = 30000 + r.IntN(2000)
		}
		ports = append(ports, p)
	}
	if len(ports) > 0 || chance(r, 0.5) {
		spec["ports"] = ports
	}
	if chance(r, 0.4) {
		spec["allocateLoadBalancerNodePorts"] = chance(r, 0.5)
	}
	return obj{"apiVersion": "v1", "kind": "Service",
		"metadata": obj{"name": fmt.Sprintf("svc-%d", r.IntN(100)), "namespace": "ns"}, "spec": spec}
}

// genLimitRange is a random LimitRange with container and pod items over
// cpu, memory, ephemeral storage and an extended resource.
func genLimitRange(r *rand.Rand, name string) obj {
	names := []string{"cpu", "memory", "ephemeral-storage", "example.com/gpu"}
	some := func(p float64) obj { return resourceList(r, names, p) }
	var items []any
	for i := 0; i < 1+r.IntN(2); i++ {
		item := obj{"type": pick(r, "Container", "Container", "Pod")}
		if item["type"] == "Container" {
			if chance(r, 0.6) {
				item["default"] = some(0.5)
			}
			if chance(r, 0.6) {
				item["defaultRequest"] = some(0.5)
			}
		}
		if chance(r, 0.4) {
			item["min"] = some(0.4)
		}
		if chance(r, 0.4) {
			item["max"] = some(0.4)
		}
		if chance(r, 0.2) {
			item["maxLimitRequestRatio"] = obj{pick(r, "cpu", "memory"): pick(r, "1", "2", "1.5", "4")}
		}
		items = append(items, item)
	}
	return obj{"apiVersion": "v1", "kind": "LimitRange",
		"metadata": obj{"name": name, "namespace": "ns"}, "spec": obj{"limits": items}}
}
