package workload

import (
	"strconv"
)

// Names shared by the objects.
var (
	priorityClasses = [2]string{"high", "low"}
	storageClasses  = [2]string{"fast", "standard"}
	apps            = [...]string{"web", "api", "worker", "cache", "search", "ingest", "billing", "auth", "report", "notify", "gateway", "scheduler"}
	teams           = [...]string{"payments", "platform", "data", "identity", "growth", "core"}
	images          = [...]string{"registry.example.com/web:4.12.1", "registry.example.com/api:2.31.0", "registry.example.com/worker:1.9.7", "docker.io/library/redis:7.2.4", "docker.io/library/nginx:1.27.0", "quay.io/prometheus/node-exporter:v1.8.1"}
	cpus            = [...]string{"50m", "100m", "250m", "500m", "1", "2"}
	memories        = [...]string{"64Mi", "128Mi", "256Mi", "512Mi", "1Gi", "2Gi"}
	envNames        = [...]string{"LOG_LEVEL", "LOG_FORMAT", "HTTP_PORT", "GRPC_PORT", "DATABASE_URL", "REDIS_ADDR", "OTEL_EXPORTER_OTLP_ENDPOINT", "FEATURE_FLAGS", "REGION", "CLUSTER_NAME", "CACHE_TTL", "MAX_CONNECTIONS", "WORKER_POOL_SIZE", "UPSTREAM_TIMEOUT", "JAVA_TOOL_OPTIONS", "GOMAXPROCS"}
)

func namespaceName(ns int32) string {
	return "tenant-" + pad5(int(ns))
}

func pad5(n int) string {
	s := strconv.Itoa(n)
	for len(s) < 5 {
		s = "0" + s
	}
	return s
}

// hexOf writes n hexadecimal digits of x.
func hexOf(x uint64, n int) string {
	var b [16]byte
	for i := 0; i < n; i++ {
		b[i] = hexDigits[x&0xf]
		x >>= 4
	}
	return string(b[:n])
}

// base36 suffix as the API server's generateName uses (lowercase letters
// and digits, 5 long), made unique by the object id.
func suffixOf(id uint64) string {
	const digits = "bcdfghjklmnpqrstvwxz2456789"
	var b [5]byte
	for i := 4; i >= 0; i-- {
		b[i] = digits[id%uint64(len(digits))]
		id /= uint64(len(digits))
	}
	return string(b[:])
}

// uidOf is a UUID-shaped identifier, unique per (kind salt, id).
func uidOf(seed, salt, id uint64) string {
	r := rng{s: seed ^ salt<<56 ^ id*0x9e3779b97f4a7c15}
	a, b := r.next(), r.next()
	return hexOf(a, 8) + "-" + hexOf(a>>32, 4) + "-4" + hexOf(a>>48, 3) + "-a" + hexOf(b, 3) + "-" + hexOf(b>>12, 12)
}

// meta writes the metadata members every object has.
func (g *Generator) meta(name, namespace, uid string, rv uint64, born int64) {
	g.w.kv("name", name)
	if namespace != "" {
		g.w.kv("namespace", namespace)
	}
	g.w.kv("uid", uid)
	g.w.kv("resourceVersion", strconv.FormatUint(rv, 10))
	g.w.ktime("creationTimestamp", g.at(born))
}

func (g *Generator) deletion(o *live, grace int64) {
	if o.deleted != 0 {
		g.w.ktime("deletionTimestamp", g.at(o.deleted).Add(timeOf(grace)))
		g.w.kint("deletionGracePeriodSeconds", grace)
	}
}

func (g *Generator) managedFields(manager string, born int64, fields string) {
	g.w.array("managedFields")
	g.w.item()
	g.w.open()
	g.w.kv("manager", manager)
	g.w.kv("operation", "Update")
	g.w.kv("apiVersion", "v1")
	g.w.ktime("time", g.at(born))
	g.w.kv("fieldsType", "FieldsV1")
	g.w.key("fieldsV1")
	g.w.b = append(g.w.b, fields...)
	g.w.close()
	g.w.closeArr()
}

// clusterObject writes the i-th cluster-scoped object of the opening.
func (g *Generator) clusterObject(i int) {
	rv := g.begin(Added, KindPriorityClass)
	if i < 2 {
		g.w.kv("kind", "PriorityClass")
		g.w.kv("apiVersion", "scheduling.k8s.io/v1")
		g.w.object("metadata")
		g.meta(priorityClasses[i], "", uidOf(g.cfg.Seed, 1, uint64(i)), rv, int64(g.index))
		g.w.close()
		g.w.kint("value", int64(100_000-i*99_000))
		g.w.kbool("globalDefault", false)
		g.w.kv("description", "Workloads of "+priorityClasses[i]+" priority.")
		g.w.kv("preemptionPolicy", "PreemptLowerPriority")
	} else {
		g.lastKind = KindStorageClass
		name := storageClasses[i-2]
		g.w.kv("kind", "StorageClass")
		g.w.kv("apiVersion", "storage.k8s.io/v1")
		g.w.object("metadata")
		g.meta(name, "", uidOf(g.cfg.Seed, 2, uint64(i)), rv, int64(g.index))
		if name == "standard" {
			g.w.object("annotations")
			g.w.kv("storageclass.kubernetes.io/is-default-class", "true")
			g.w.close()
		}
		g.w.close()
		g.w.kv("provisioner", "ebs.csi.aws.com")
		g.w.object("parameters")
		g.w.kv("type", map[string]string{"fast": "io2", "standard": "gp3"}[name])
		g.w.close()
		g.w.kv("reclaimPolicy", "Delete")
		g.w.kbool("allowVolumeExpansion", true)
		g.w.kv("volumeBindingMode", "WaitForFirstConsumer")
	}
	g.end()
}

// quota writes the q-th ResourceQuota of namespace ns.
func (g *Generator) quota(ns int32, q int) {
	rv := g.begin(Added, KindResourceQuota)
	names := [QuotasPerNamespace]string{"compute", "object-counts", "storage", "high-priority"}
	g.w.kv("kind", "ResourceQuota")
	g.w.kv("apiVersion", "v1")
	g.w.object("metadata")
	g.meta(names[q], namespaceName(ns), uidOf(g.cfg.Seed, 3, uint64(ns)*QuotasPerNamespace+uint64(q)), rv, int64(g.index))
	g.managedFields("kubectl-client-side-apply", int64(g.index), `{"f:spec":{"f:hard":{}}}`)
	g.w.close()
	g.w.object("spec")
	g.w.object("hard")
	scale := int64(1 + int(ns)%4) // namespaces differ in size
	n := func(k string, v int64) { g.w.kv(k, strconv.FormatInt(v*scale, 10)) }
	switch q {
	case 0:
		n("limits.cpu", 80)
		g.w.kv("limits.memory", strconv.FormatInt(160*scale, 10)+"Gi")
		n("pods", 400)
		n("requests.cpu", 40)
		g.w.kv("requests.ephemeral-storage", strconv.FormatInt(200*scale, 10)+"Gi")
		g.w.kv("requests.memory", strconv.FormatInt(80*scale, 10)+"Gi")
	case 1:
		n("configmaps", 200)
		n("count/deployments.apps", 100)
		n("persistentvolumeclaims", 100)
		n("secrets", 300)
		n("services", 100)
		n("services.loadbalancers", 10)
		n("services.nodeports", 20)
	case 2:
		g.w.kv("fast.storageclass.storage.k8s.io/persistentvolumeclaims", strconv.FormatInt(20*scale, 10))
		g.w.kv("fast.storageclass.storage.k8s.io/requests.storage", strconv.FormatInt(500*scale, 10)+"Gi")
		g.w.kv("requests.storage", strconv.FormatInt(2*scale, 10)+"Ti")
		g.w.kv("standard.storageclass.storage.k8s.io/requests.storage", strconv.FormatInt(1*scale, 10)+"Ti")
	case 3:
		n("pods", 100)
		n("requests.cpu", 20)
		g.w.kv("requests.memory", strconv.FormatInt(40*scale, 10)+"Gi")
	}
	g.w.close() // hard
	if q == 3 {
		g.w.object("scopeSelector")
		g.w.array("matchExpressions")
		g.w.item()
		g.w.open()
		g.w.kv("scopeName", "PriorityClass")
		g.w.kv("operator", "In")
		g.w.strings("values", "high")
		g.w.close()
		g.w.closeArr()
		g.w.close()
	}
	g.w.close() // spec
	g.w.emptyObject("status")
	g.end()
}

// claim writes a PersistentVolumeClaim in its current state.
func (g *Generator) claim(o *live, rv uint64) {
	r := objectRNG(g.cfg.Seed, o.id)
	app := apps[r.intn(len(apps))]
	class := r.intn(3) // fast, standard, or none (the default class)
	name := "data-" + app + "-" + suffixOf(o.id)
	size := strconv.Itoa(int(o.sizeGi)) + "Gi"
	g.w.kv("kind", "PersistentVolumeClaim")
	g.w.kv("apiVersion", "v1")
	g.w.object("metadata")
	g.meta(name, namespaceName(o.ns), uidOf(g.cfg.Seed, 6, o.id), rv, o.born)
	g.deletion(o, 0)
	g.w.object("labels")
	g.w.kv("app.kubernetes.io/name", app)
	g.w.close()
	if o.state == claimBound {
		g.w.object("annotations")
		g.w.kv("pv.kubernetes.io/bind-completed", "yes")
		g.w.kv("pv.kubernetes.io/bound-by-controller", "yes")
		g.w.kv("volume.beta.kubernetes.io/storage-provisioner", "ebs.csi.aws.com")
		g.w.kv("volume.kubernetes.io/storage-provisioner", "ebs.csi.aws.com")
		g.w.close()
	}
	g.w.strings("finalizers", "kubernetes.io/pvc-protection")
	g.managedFields("kubectl-client-side-apply", o.born, `{"f:spec":{"f:accessModes":{},"f:resources":{"f:requests":{".":{},"f:storage":{}}},"f:volumeMode":{}}}`)
	g.w.close()
	g.w.object("spec")
	g.w.strings("accessModes", "ReadWriteOnce")
	g.w.object("resources")
	g.w.object("requests")
	g.w.kv("storage", size)
	g.w.close()
	g.w.close()
	volume := "pvc-" + uidOf(g.cfg.Seed, 6, o.id)
	if o.state == claimBound {
		g.w.kv("volumeName", volume)
	}
	if class < 2 {
		g.w.kv("storageClassName", storageClasses[class])
	} else {
		g.w.kv("storageClassName", "standard")
	}
	g.w.kv("volumeMode", "Filesystem")
	g.w.close()
	g.w.object("status")
	if o.state == claimBound {
		g.w.kv("phase", "Bound")
		g.w.strings("accessModes", "ReadWriteOnce")
		g.w.object("capacity")
		g.w.kv("storage", size)
		g.w.close()
	} else {
		g.w.kv("phase", "Pending")
	}
	g.w.close()
}

const (
	serviceClusterIP = iota
	serviceHeadless
	serviceNodePort
	serviceLoadBalancer
	serviceExternalName
)

// serviceTypeOf fixes a service's type from its id: half ClusterIP, a
// tenth headless, 15% NodePort, 15% LoadBalancer, a tenth ExternalName.
func serviceTypeOf(id, seed uint64) int {
	r := objectRNG(seed, id)
	r.next()
	switch p := r.intn(100); {
	case p < 50:
		return serviceClusterIP
	case p < 60:
		return serviceHeadless
	case p < 75:
		return serviceNodePort
	case p < 90:
		return serviceLoadBalancer
	default:
		return serviceExternalName
	}
}

// service writes a Service in its current state.
func (g *Generator) service(o *live, rv uint64) {
	r := objectRNG(g.cfg.Seed, o.id)
	app := apps[r.intn(len(apps))]
	typ := serviceTypeOf(o.id, g.cfg.Seed)
	name := app + "-" + suffixOf(o.id)
	g.w.kv("kind", "Service")
	g.w.kv("apiVersion", "v1")
	g.w.object("metadata")
	g.meta(name, namespaceName(o.ns), uidOf(g.cfg.Seed, 7, o.id), rv, o.born)
	g.deletion(o, 0)
	g.w.object("labels")
	g.w.kv("app.kubernetes.io/name", app)
	g.w.kv("revision", strconv.Itoa(int(o.churn)))
	g.w.close()
	if typ == serviceLoadBalancer {
		g.w.strings("finalizers", "service.kubernetes.io/load-balancer-cleanup")
	}
	g.managedFields("kubectl-client-side-apply", o.born, `{"f:spec":{"f:ports":{},"f:selector":{},"f:type":{}}}`)
	g.w.close()
	if external := g.serviceSpec(o, app, typ); external {
		g.w.emptyObject("status")
		return
	}
	g.w.object("status")
	g.w.object("loadBalancer")
	if typ == serviceLoadBalancer && o.state == serviceUpdated {
		g.w.array("ingress")
		g.w.item()
		g.w.open()
		g.w.kv("hostname", "a"+hexOf(o.id*0x9e3779b97f4a7c15, 16)+".elb.eu-west-1.amazonaws.com")
		g.w.kv("ipMode", "VIP")
		g.w.close()
		g.w.closeArr()
	}
	g.w.close()
	g.w.close()
}

// serviceSpec writes a service's spec, and reports whether the service
// is an ExternalName one, which has no status.
func (g *Generator) serviceSpec(o *live, app string, typ int) (external bool) {
	g.w.object("spec")
	ip := "10.96." + strconv.Itoa(int(o.id>>8%256)) + "." + strconv.Itoa(int(o.id%256))
	if typ == serviceExternalName {
		g.w.kv("type", "ExternalName")
		g.w.kv("externalName", app+".partner.example.com")
		g.w.kv("sessionAffinity", "None")
		g.w.close()
		return true
	}
	g.w.array("ports")
	g.w.item()
	g.w.open()
	g.w.kv("name", "http")
	g.w.kv("protocol", "TCP")
	g.w.kint("port", 80)
	g.w.kint("targetPort", 8080)
	if typ == serviceNodePort || typ == serviceLoadBalancer {
		g.w.kint("nodePort", 30000+int64(o.id%2767))
	}
	g.w.close()
	g.w.closeArr()
	g.w.object("selector")
	g.w.kv("app.kubernetes.io/name", app)
	g.w.close()
	if typ == serviceHeadless {
		g.w.kv("clusterIP", "None")
		g.w.strings("clusterIPs", "None")
	} else {
		g.w.kv("clusterIP", ip)
		g.w.strings("clusterIPs", ip)
	}
	g.w.kv("type", [...]string{"ClusterIP", "ClusterIP", "NodePort", "LoadBalancer"}[typ])
	g.w.kv("sessionAffinity", "None")
	if typ == serviceNodePort || typ == serviceLoadBalancer {
		g.w.kv("externalTrafficPolicy", "Cluster")
	}
	g.w.strings("ipFamilies", "IPv4")
	g.w.kv("ipFamilyPolicy", "SingleStack")
	if typ == serviceLoadBalancer {
		g.w.kbool("allocateLoadBalancerNodePorts", true)
	}
	g.w.kv("internalTrafficPolicy", "Cluster")
	g.w.close()
	return false
}
