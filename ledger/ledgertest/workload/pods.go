package workload

import (
	"strconv"
)

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
	g.volumeMounts(s, c)
	if c == 0 && !sidecar {
		g.readinessProbe()
	}
	g.w.kv("terminationMessagePath", "/dev/termination-log")
	g.w.kv("terminationMessagePolicy", "File")
	g.w.kv("imagePullPolicy", "IfNotPresent")
	g.w.close()
}

// volumeMounts writes the volumeMounts of container c: the app's
// configuration, its claim's data (the first container's, when the pod
// has a claim) and the service account token.
func (g *Generator) volumeMounts(s *podShape, c int) {
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
}

// readinessProbe writes the readinessProbe of a pod's main container.
func (g *Generator) readinessProbe() {
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

func containerName(s *podShape, c int) string {
	if c == 0 {
		return s.app
	}
	return []string{"", "log-shipper", "metrics"}[c]
}

// pod writes a pod in its current state.
func (g *Generator) pod(o *live, rv uint64) {
	s := g.podShape(o)
	name := s.app + "-" + s.hash + "-" + suffixOf(o.id)
	g.w.kv("kind", "Pod")
	g.w.kv("apiVersion", "v1")
	g.podMetadata(o, &s, name, rv)
	g.podSpec(o, &s, name)
	g.podStatus(o, &s)
}

// podMetadata writes a pod's metadata.
func (g *Generator) podMetadata(o *live, s *podShape, name string, rv uint64) {
	ns := namespaceName(o.ns)
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
}

// podSpec writes a pod's spec.
func (g *Generator) podSpec(o *live, s *podShape, name string) {
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
			g.container(s, "init-schema", s.image, 1, 0, 0, false)
		}
		if s.sidecar {
			g.container(s, "proxy", "docker.io/envoyproxy/envoy:v1.30.2", 2, 0, 1, true)
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
		g.container(s, containerName(s, c), image, c, cpu, mem, false)
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
			g.containerStatus(o, s, c)
		}
		g.w.closeArr()
	}
	g.w.kv("qosClass", s.qosClass())
	g.w.close()
}

// containerStatus writes the status of a running or ended pod's
// container c.
func (g *Generator) containerStatus(o *live, s *podShape, c int) {
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
