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

// podShape is what a pod's id fixes: its app, its resources, its size.
type podShape struct {
	app, team, hash, image string
	containers             int
	envs                   int
	annotations            int
	cpu, mem               int // indexes into cpus, memories
	limitStep              int // limits are this many steps above requests
	bestEffort             bool
	initContainer          bool
	sidecar                bool
	claim                  bool
	priority               int // index into priorityClasses, or -1
}

func (g *Generator) podShape(o *live) podShape {
	r := objectRNG(g.cfg.Seed, o.id)
	app := apps[r.intn(len(apps))]
	s := podShape{
		app:         app,
		team:        teams[r.intn(len(teams))],
		image:       images[r.intn(len(images))],
		containers:  []int{1, 1, 1, 1, 2, 2, 2, 3}[r.intn(8)],
		envs:        2 + r.intn(6),
		annotations: 1 + r.intn(5),
		cpu:         r.intn(len(cpus) - 1),
		mem:         r.intn(len(memories) - 1),
		limitStep:   r.intn(2),
		bestEffort:  r.intn(100) < 8,
		priority:    r.intn(4) - 2,
	}
	if s.containers == 3 {
		// Three containers already make a large pod.
		s.envs = 2
		s.annotations = 1
	}
	ah := rng{s: g.cfg.Seed ^ uint64(o.ns)<<20 ^ uint64(len(app))<<8 ^ uint64(app[0])}
	s.hash = hexOf(ah.next(), 10)
	// Pods with many containers rarely also have init containers; keeping
	// them apart keeps a pod within the 2 to 6 KiB real pods have.
	s.initContainer = s.containers < 2 && r.intn(100) < 30
	s.sidecar = s.containers == 1 && r.intn(100) < 12
	s.claim = r.intn(100) < 15
	if s.priority < 0 {
		s.priority = -1
	}
	return s
}

func (s *podShape) qosClass() string {
	switch {
	case s.bestEffort:
		return "BestEffort"
	case s.limitStep == 0:
		return "Guaranteed"
	default:
		return "Burstable"
	}
}

func (g *Generator) resources(s *podShape, cpu, mem int) {
	g.w.object("resources")
	if !s.bestEffort {
		g.w.object("limits")
		g.w.kv("cpu", cpus[min(cpu+s.limitStep, len(cpus)-1)])
		g.w.kv("memory", memories[min(mem+s.limitStep, len(memories)-1)])
		g.w.close()
		g.w.object("requests")
		g.w.kv("cpu", cpus[cpu])
		g.w.kv("memory", memories[mem])
		g.w.close()
	}
	g.w.close()
}

func (g *Generator) container(s *podShape, name, image string, c int, cpu, mem int, sidecar bool) {
	g.w.item()
	g.w.open()
	g.w.kv("name", name)
	g.w.kv("image", image)
	if c == 0 && !sidecar {
		g.w.array("ports")
		g.w.item()
		g.w.open()
		g.w.kv("name", "http")
		g.w.kint("containerPort", 8080)
		g.w.kv("protocol", "TCP")
		g.w.close()
		g.w.closeArr()
	}
	g.w.array("env")
	envs := s.envs
	if c > 0 || sidecar {
		// Sidecars and init containers carry a couple of variables only.
		envs = 2 - c/2*2
	}
	for e := 0; e < envs; e++ {
		g.w.item()
		g.w.open()
		g.w.kv("name", envNames[(e+c)%len(envNames)])
		g.w.kv("value", "http://"+s.app+"-"+s.team+":"+strconv.Itoa(7000+e))
		g.w.close()
	}
	g.w.closeArr()
	if sidecar {
		g.w.kv("restartPolicy", "Always")
	}
	g.resources(s, cpu, mem)
	g.w.array("volumeMounts")
	g.w.item()
	g.w.open()
	g.w.kv("name", "config")
	g.w.kv("mountPath", "/etc/"+s.app)
	g.w.kbool("readOnly", true)
	g.w.close()
	if s.claim && c == 0 {
		g.w.item()
		g.w.open()
		g.w.kv("name", "data")
		g.w.kv("mountPath", "/var/lib/"+s.app)
		g.w.close()
	}
	g.w.item()
	g.w.open()
	g.w.kv("name", "kube-api-access-"+s.hash[:5])
	g.w.kbool("readOnly", true)
	g.w.kv("mountPath", "/var/run/secrets/kubernetes.io/serviceaccount")
	g.w.close()
	g.w.closeArr()
	if c == 0 && !sidecar {
		g.w.object("readinessProbe")
		g.w.object("httpGet")
		g.w.kv("path", "/healthz")
		g.w.kint("port", 8080)
		g.w.kv("scheme", "HTTP")
		g.w.close()
		g.w.kint("timeoutSeconds", 1)
		g.w.kint("periodSeconds", 10)
		g.w.kint("successThreshold", 1)
		g.w.kint("failureThreshold", 3)
		g.w.close()
	}
	g.w.kv("terminationMessagePath", "/dev/termination-log")
	g.w.kv("terminationMessagePolicy", "File")
	g.w.kv("imagePullPolicy", "IfNotPresent")
	g.w.close()
}

func containerName(s *podShape, c int) string {
	if c == 0 {
		return s.app
	}
	return []string{"", "log-shipper", "metrics"}[c]
}

// pod writes a pod in its current state.
func (g *Generator) pod(o *live, rv uint64) {
	s := g.podShape(o)
	ns := namespaceName(o.ns)
	name := s.app + "-" + s.hash + "-" + suffixOf(o.id)
	g.w.kv("kind", "Pod")
	g.w.kv("apiVersion", "v1")
	g.w.object("metadata")
	g.w.kv("name", name)
	g.w.kv("generateName", s.app+"-"+s.hash+"-")
	g.w.kv("namespace", ns)
	g.w.kv("uid", uidOf(g.cfg.Seed, 4, o.id))
	g.w.kv("resourceVersion", strconv.FormatUint(rv, 10))
	g.w.ktime("creationTimestamp", g.at(o.born))
	g.deletion(o, 30)
	g.w.object("labels")
	g.w.kv("app.kubernetes.io/name", s.app)
	g.w.kv("app.kubernetes.io/part-of", s.team)
	g.w.kv("app.kubernetes.io/version", "v"+strconv.Itoa(1+int(o.id%7)))
	g.w.kv("pod-template-hash", s.hash)
	g.w.kv("team", s.team)
	g.w.close()
	g.w.object("annotations")
	for a := 0; a < s.annotations; a++ {
		switch a {
		case 0:
			g.w.kv("checksum/config", hexOf(o.id*0x9e3779b97f4a7c15, 16)+hexOf(uint64(o.ns)*0xbf58476d1ce4e5b9, 16)+hexOf(o.id^0x94d049bb133111eb, 16)+hexOf(uint64(len(s.app)), 16))
		case 1:
			g.w.kv("prometheus.io/scrape", "true")
		case 2:
			g.w.ktime("kubectl.kubernetes.io/restartedAt", g.at(o.born/2))
		case 3:
			g.w.kv("cluster-autoscaler.kubernetes.io/safe-to-evict", "true")
		case 4:
			g.w.kv("sidecar.opentelemetry.io/inject", `{"endpoint":"otel-collector.observability:4317","sampler":"parentbased_traceidratio","ratio":"0.05"}`)
		}
	}
	g.w.close()
	g.w.array("ownerReferences")
	g.w.item()
	g.w.open()
	g.w.kv("apiVersion", "apps/v1")
	g.w.kv("kind", "ReplicaSet")
	g.w.kv("name", s.app+"-"+s.hash)
	g.w.kv("uid", uidOf(g.cfg.Seed, 5, uint64(o.ns)<<8|uint64(len(s.app))))
	g.w.kbool("controller", true)
	g.w.kbool("blockOwnerDeletion", true)
	g.w.close()
	g.w.closeArr()
	g.managedFields("kube-controller-manager", o.born, `{"f:metadata":{"f:generateName":{},"f:labels":{},"f:ownerReferences":{}},"f:spec":{"f:containers":{},"f:dnsPolicy":{},"f:restartPolicy":{},"f:volumes":{}}}`)
	g.w.close() // metadata

	g.w.object("spec")
	g.w.array("volumes")
	g.w.item()
	g.w.open()
	g.w.kv("name", "config")
	g.w.object("configMap")
	g.w.kv("name", s.app+"-config")
	g.w.kint("defaultMode", 420)
	g.w.close()
	g.w.close()
	if s.claim {
		g.w.item()
		g.w.open()
		g.w.kv("name", "data")
		g.w.object("persistentVolumeClaim")
		g.w.kv("claimName", "data-"+name)
		g.w.close()
		g.w.close()
	}
	g.w.item()
	g.w.b = append(g.w.b, `{"name":"kube-api-access-`...)
	g.w.b = append(g.w.b, s.hash[:5]...)
	g.w.b = append(g.w.b, `","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}},{"downwardAPI":{"items":[{"path":"namespace","fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}]}}],"defaultMode":420}}`...)
	g.w.first = false
	g.w.closeArr()
	if s.initContainer || s.sidecar {
		g.w.array("initContainers")
		if s.initContainer {
			g.container(&s, "init-schema", s.image, 1, 0, 0, false)
		}
		if s.sidecar {
			g.container(&s, "proxy", "docker.io/envoyproxy/envoy:v1.30.2", 2, 0, 1, true)
		}
		g.w.closeArr()
	}
	g.w.array("containers")
	for c := 0; c < s.containers; c++ {
		image := s.image
		cpu, mem := s.cpu, s.mem
		if c > 0 {
			image, cpu, mem = "docker.io/fluent/fluent-bit:3.0.7", 0, 0
		}
		g.container(&s, containerName(&s, c), image, c, cpu, mem, false)
	}
	g.w.closeArr()
	g.w.kv("restartPolicy", "Always")
	g.w.kint("terminationGracePeriodSeconds", 30)
	g.w.kv("dnsPolicy", "ClusterFirst")
	g.w.kv("serviceAccountName", s.app)
	g.w.kv("serviceAccount", s.app)
	if o.state != podUnscheduled {
		g.w.kv("nodeName", "node-"+pad5(int(o.id%97)))
	}
	g.w.emptyObject("securityContext")
	g.w.kv("schedulerName", "default-scheduler")
	g.w.b = append(g.w.b, `,"tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}]`...)
	if s.priority >= 0 {
		g.w.kv("priorityClassName", priorityClasses[s.priority])
		g.w.kint("priority", int64(100_000-s.priority*99_000))
	} else {
		g.w.kint("priority", 0)
	}
	g.w.kbool("enableServiceLinks", true)
	g.w.kv("preemptionPolicy", "PreemptLowerPriority")
	g.w.close() // spec

	g.podStatus(o, &s)
}

func (g *Generator) condition(typ string, status bool, at int64) {
	g.w.item()
	g.w.open()
	g.w.kv("type", typ)
	if status {
		g.w.kv("status", "True")
	} else {
		g.w.kv("status", "False")
	}
	g.w.knull("lastProbeTime")
	g.w.ktime("lastTransitionTime", g.at(at))
	g.w.close()
}

func (g *Generator) podStatus(o *live, s *podShape) {
	g.w.object("status")
	phase := "Pending"
	switch o.state {
	case podRunning:
		phase = "Running"
	case podSucceeded:
		phase = "Succeeded"
	case podFailed:
		phase = "Failed"
	}
	g.w.kv("phase", phase)
	if o.state != podUnscheduled {
		g.w.array("conditions")
		started := o.born + 1
		if o.state >= podRunning {
			ready := o.state == podRunning && o.churn%3 != 2
			g.condition("PodReadyToStartContainers", o.state == podRunning, started)
			g.condition("Initialized", true, started)
			g.condition("Ready", ready, started+int64(o.churn))
			g.condition("ContainersReady", ready, started+int64(o.churn))
		}
		g.condition("PodScheduled", true, o.born)
		g.w.closeArr()
	}
	if o.state >= podRunning {
		ip := "10.244." + strconv.Itoa(int(o.id>>8%256)) + "." + strconv.Itoa(int(o.id%256))
		host := "172.31." + strconv.Itoa(int(o.id%97)) + ".10"
		g.w.kv("hostIP", host)
		g.w.array("hostIPs")
		g.w.item()
		g.w.open()
		g.w.kv("ip", host)
		g.w.close()
		g.w.closeArr()
		g.w.kv("podIP", ip)
		g.w.array("podIPs")
		g.w.item()
		g.w.open()
		g.w.kv("ip", ip)
		g.w.close()
		g.w.closeArr()
		g.w.ktime("startTime", g.at(o.born+1))
		g.w.array("containerStatuses")
		for c := 0; c < s.containers; c++ {
			g.w.item()
			g.w.open()
			g.w.kv("name", containerName(s, c))
			g.w.object("state")
			switch o.state {
			case podRunning:
				g.w.object("running")
				g.w.ktime("startedAt", g.at(o.born+2+int64(o.restarts)))
				g.w.close()
			default:
				g.w.object("terminated")
				code, reason := int64(0), "Completed"
				if o.state == podFailed {
					code, reason = 137, "Error"
				}
				g.w.kint("exitCode", code)
				g.w.kv("reason", reason)
				g.w.ktime("startedAt", g.at(o.born+2))
				g.w.ktime("finishedAt", g.at(int64(g.index)))
				g.w.close()
			}
			g.w.close()
			g.w.emptyObject("lastState")
			g.w.kbool("ready", o.state == podRunning && o.churn%3 != 2)
			g.w.kint("restartCount", int64(o.restarts))
			g.w.kv("image", s.image)
			g.w.kv("imageID", s.image+"@sha256:"+hexOf(uint64(len(s.image))*0x9e3779b97f4a7c15, 16)+hexOf(uint64(s.image[20]), 16))
			g.w.kv("containerID", "containerd://"+hexOf(o.id*31+uint64(c), 16)+hexOf(o.id*37, 16))
			g.w.kbool("started", o.state == podRunning)
			g.w.close()
		}
		g.w.closeArr()
	}
	g.w.kv("qosClass", s.qosClass())
	g.w.close()
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
	g.w.object("spec")
	ip := "10.96." + strconv.Itoa(int(o.id>>8%256)) + "." + strconv.Itoa(int(o.id%256))
	if typ == serviceExternalName {
		g.w.kv("type", "ExternalName")
		g.w.kv("externalName", app+".partner.example.com")
		g.w.kv("sessionAffinity", "None")
		g.w.close()
		g.w.emptyObject("status")
		return
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
