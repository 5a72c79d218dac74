package replay

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/quotaledger/quota/ledger"
)

// streamGen generates random but valid event streams: the object shapes of
// testdata/samples (pods with requests and limits, claims with storage
// classes, services of each type, quotas with scopes), and every event type
// the fold knows. It tracks what exists so that updates and deletes name
// real objects, and a resync lists a random subset of them (the rest are
// lost deletes it corrects) plus, now and then, an object never reported.
type streamGen struct {
	rng        *rand.Rand
	namespaces []string
	live       map[string]map[string]bool // ns/resource → names
	reserved   map[string]string          // reservation id → ns
	serial     int
}

func newStreamGen(seed uint64) *streamGen {
	return &streamGen{
		rng:        rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		namespaces: []string{"team-a", "team-b", "batch"},
		live:       map[string]map[string]bool{},
		reserved:   map[string]string{},
	}
}

var genResources = []string{"pods", "persistentvolumeclaims", "services", "resourcequotas"}

func (g *streamGen) names(ns, resource string) []string {
	var out []string
	for n := range g.live[ns+"/"+resource] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (g *streamGen) setLive(ns, resource, name string, on bool) {
	k := ns + "/" + resource
	if g.live[k] == nil {
		g.live[k] = map[string]bool{}
	}
	if on {
		g.live[k][name] = true
	} else {
		delete(g.live[k], name)
	}
}

func (g *streamGen) pick(xs []string) string { return xs[g.rng.IntN(len(xs))] }

// next returns one valid event.
func (g *streamGen) next() ledger.Event {
	ns := g.pick(g.namespaces)
	resource := g.pick(genResources)
	existing := g.names(ns, resource)
	switch r := g.rng.IntN(100); {
	case r < 40 || len(existing) == 0:
		return g.create(ns, resource)
	case r < 60:
		return g.upsert(ns, resource, g.pick(existing))
	case r < 75:
		name := g.pick(existing)
		g.setLive(ns, resource, name, false)
		return ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Delete, Resource: resource, Namespace: ns, Name: name}
	case r < 83:
		return g.resync(ns, resource, existing)
	case r < 93:
		return g.reserve(ns)
	default:
		return g.expire(ns)
	}
}

func (g *streamGen) create(ns, resource string) ledger.Event {
	g.serial++
	name := fmt.Sprintf("%s-%d", resourceShort(resource), g.serial)
	return g.upsert(ns, resource, name)
}

func resourceShort(resource string) string {
	switch resource {
	case "persistentvolumeclaims":
		return "pvc"
	case "resourcequotas":
		return "quota"
	case "services":
		return "svc"
	}
	return "pod"
}

func (g *streamGen) upsert(ns, resource, name string) ledger.Event {
	g.setLive(ns, resource, name, true)
	return ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Upsert, Resource: resource, Namespace: ns,
		Name: name, UID: "uid-" + name, Object: g.object(ns, resource, name)}
}

func (g *streamGen) resync(ns, resource string, existing []string) ledger.Event {
	ev := ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Resync, Resource: resource, Namespace: ns}
	for _, name := range existing {
		if g.rng.IntN(4) == 0 {
			g.setLive(ns, resource, name, false)
			continue
		}
		ev.Items = append(ev.Items, g.object(ns, resource, name))
	}
	if g.rng.IntN(3) == 0 {
		g.serial++
		name := fmt.Sprintf("%s-%d", resourceShort(resource), g.serial)
		g.setLive(ns, resource, name, true)
		ev.Items = append(ev.Items, g.object(ns, resource, name))
	}
	return ev
}

func (g *streamGen) reserve(ns string) ledger.Event {
	g.serial++
	resource := g.pick([]string{"pods", "persistentvolumeclaims", "services"})
	name := fmt.Sprintf("%s-%d", resourceShort(resource), g.serial)
	id := fmt.Sprintf("rsv-%d", g.serial)
	g.reserved[id] = ns
	// A reserved object is not live for the generator: the cluster has not
	// reported it, and an upsert of the same name may confirm it later.
	ttl := time.Duration(1+g.rng.IntN(60)) * time.Second
	if g.rng.IntN(2) == 0 {
		return ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Reserve, Resource: resource, Namespace: ns,
			Name: name, Object: g.object(ns, resource, name), Reservation: id, ReservationTTL: ttl}
	}
	// Several reservations decided together, as the admission's group
	// commit writes them; a name may repeat, and the repeat charges
	// nothing.
	ev := ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Reserve, Namespace: ns, ReservationTTL: ttl,
		Reservations: []ledger.Reservation{{ID: id, Resource: resource, Name: name, Object: g.object(ns, resource, name)}}}
	for range 1 + g.rng.IntN(3) {
		g.serial++
		if g.rng.IntN(4) != 0 {
			resource = g.pick([]string{"pods", "persistentvolumeclaims", "services"})
			name = fmt.Sprintf("%s-%d", resourceShort(resource), g.serial)
		}
		id := fmt.Sprintf("rsv-%d", g.serial)
		g.reserved[id] = ns
		ev.Reservations = append(ev.Reservations, ledger.Reservation{ID: id, Resource: resource, Name: name, Object: g.object(ns, resource, name)})
	}
	return ev
}

func (g *streamGen) expire(ns string) ledger.Event {
	var ids []string
	for id, rns := range g.reserved {
		if rns == ns {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	id := "rsv-unknown"
	if len(ids) > 0 {
		id = g.pick(ids)
		delete(g.reserved, id)
	}
	return ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Expire, Namespace: ns, Reservation: id}
}

func (g *streamGen) object(ns, resource, name string) json.RawMessage {
	meta := map[string]any{"name": name, "namespace": ns, "uid": "uid-" + name}
	var o map[string]any
	switch resource {
	case "pods":
		o = g.pod(meta)
	case "persistentvolumeclaims":
		class := g.pick([]string{"standard", "fast", "gold"})
		o = map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
			"spec": map[string]any{"storageClassName": class, "accessModes": []string{"ReadWriteOnce"},
				"resources": map[string]any{"requests": map[string]any{"storage": g.pick([]string{"1Gi", "500Mi", "10G", "2Gi", "1500M"})}}},
			"status": map[string]any{"phase": g.pick([]string{"Pending", "Bound"})}}
	case "services":
		typ := g.pick([]string{"ClusterIP", "NodePort", "LoadBalancer"})
		port := map[string]any{"port": 80, "protocol": "TCP"}
		if typ != "ClusterIP" {
			port["nodePort"] = 30000 + g.rng.IntN(2000)
		}
		o = map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": meta,
			"spec": map[string]any{"type": typ, "ports": []any{port}}}
	case "resourcequotas":
		o = g.quota(meta)
	}
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return b
}

func (g *streamGen) pod(meta map[string]any) map[string]any {
	res := map[string]any{}
	if g.rng.IntN(5) > 0 {
		req := map[string]any{"cpu": g.pick([]string{"100m", "250m", "500m", "1", "1.5", "2"}), "memory": g.pick([]string{"64Mi", "128Mi", "1Gi", "500M", "1G"})}
		res["requests"] = req
		if g.rng.IntN(2) == 0 {
			res["limits"] = map[string]any{"cpu": "2", "memory": g.pick([]string{"2Gi", "1G"})}
		}
	}
	spec := map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx", "resources": res}}}
	if g.rng.IntN(4) == 0 {
		spec["activeDeadlineSeconds"] = 600
	}
	if g.rng.IntN(4) == 0 {
		spec["priorityClassName"] = "high"
	}
	phase := g.pick([]string{"Pending", "Running", "Running", "Running", "Succeeded", "Failed"})
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": map[string]any{"phase": phase}}
}

func (g *streamGen) quota(meta map[string]any) map[string]any {
	spec := map[string]any{}
	switch g.rng.IntN(4) {
	case 0:
		spec["hard"] = map[string]any{"requests.cpu": g.pick([]string{"4", "10", "2500m"}), "requests.memory": g.pick([]string{"8Gi", "10G"}),
			"limits.cpu": "20", "pods": "50", "count/pods": "60"}
	case 1:
		spec["hard"] = map[string]any{"services": "10", "services.nodeports": "3", "services.loadbalancers": "2",
			"persistentvolumeclaims": "10", "requests.storage": g.pick([]string{"100Gi", "50G"}),
			"gold.storageclass.storage.k8s.io/requests.storage": "20Gi"}
	case 2:
		spec["hard"] = map[string]any{"pods": "20", "requests.cpu": "8"}
		spec["scopes"] = []string{g.pick([]string{"NotBestEffort", "Terminating", "NotTerminating"})}
	default:
		spec["hard"] = map[string]any{"pods": "5", "requests.cpu": "2"}
		spec["scopeSelector"] = map[string]any{"matchExpressions": []any{map[string]any{
			"scopeName": "PriorityClass", "operator": "In", "values": []string{"high"}}}}
	}
	return map[string]any{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta, "spec": spec}
}
