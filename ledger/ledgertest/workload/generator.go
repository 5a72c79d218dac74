package workload

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Watch event types, as the API server spells them.
const (
	Added    = "ADDED"
	Modified = "MODIFIED"
	Deleted  = "DELETED"
)

// Kind is the kind of a generated object.
type Kind uint8

// The kinds the generator writes.
const (
	KindPriorityClass Kind = iota
	KindStorageClass
	KindResourceQuota
	KindPod
	KindPersistentVolumeClaim
	KindService
	kindCount
)

var kindNames = [kindCount]string{"PriorityClass", "StorageClass", "ResourceQuota", "Pod", "PersistentVolumeClaim", "Service"}

func (k Kind) String() string {
	if k < kindCount {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Lifecycle states of a live object.
const (
	podUnscheduled uint8 = iota
	podScheduled
	podRunning
	podSucceeded
	podFailed
)

const (
	claimPending uint8 = iota
	claimBound
)

const (
	serviceCreated uint8 = iota
	serviceUpdated
)

// Mix of the steady part of the stream, in percent.
const (
	// createPercent is the chance that a step creates an object while the
	// live set is below its bound; the rest advance a live object. A pod
	// lives about seven events, so the live set grows by about a quarter of
	// the events until the bound.
	createPercent = 35
	// Of the created objects: pods, then claims; the rest are services.
	createPodPercent   = 72
	createClaimPercent = 13
	// podChurnMax bounds the status updates of one running pod.
	podChurnMax = 6
	// claimResizeMax bounds the resizes of one claim.
	claimResizeMax = 3
)

// live is the state of one existing pod, claim or service: small, because
// a million of them may be held. Everything else about the object (name,
// labels, containers) follows from its id and the seed.
type live struct {
	id       uint64
	born     int64 // event index of creation: the creation time
	deleted  int64 // event index of the deletion request; 0 while not deleting
	ns       int32
	kind     Kind
	state    uint8
	churn    uint8
	restarts uint8
	sizeGi   uint16 // claims: requested storage
}

// Stats describes what a Generator has written so far.
type Stats struct {
	Events int
	Bytes  int64
	// ByType counts events by watch type (ADDED, MODIFIED, DELETED).
	ByType map[string]int
	// ByKind counts events by object kind.
	ByKind map[string]int
	// Live is the number of pods, claims and services that exist now;
	// LiveMax the most that existed at once.
	Live, LiveMax int
	// PodBytesMin and PodBytesMax are the smallest and largest pod objects
	// written (the object, without the watch envelope).
	PodBytesMin, PodBytesMax int
}

// Generator yields the events of one Config one at a time.
type Generator struct {
	cfg      Config
	rng      rng
	index    int    // events written
	rv       uint64 // last resourceVersion
	nextID   uint64
	live     []live
	opening  int // events of the opening: cluster objects, then quotas
	byType   [3]int
	byKind   [kindCount]int
	bytes    int64
	liveMax  int
	podMin   int
	podMax   int
	w        jsonWriter
	lastKind Kind
}

// clusterObjects is the number of cluster-scoped objects that open the
// stream: two PriorityClasses, two StorageClasses.
const clusterObjects = 4

// firstResourceVersion is the resourceVersion of the first event; a real
// cluster's counter is never near zero.
const firstResourceVersion = 100_000

// New returns a generator for cfg.
func New(cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	g := &Generator{
		cfg:     cfg,
		rng:     rng{s: cfg.Seed ^ 0x5eed0fc1a55e7},
		rv:      firstResourceVersion,
		opening: clusterObjects + cfg.Namespaces*QuotasPerNamespace,
	}
	return g, nil
}

// Config returns the configuration with defaults applied.
func (g *Generator) Config() Config { return g.cfg }

// Next appends the next event, one JSON line without its newline, to dst
// and returns it; ok is false once Config.Events events were yielded.
func (g *Generator) Next(dst []byte) (line []byte, ok bool) {
	if g.index >= g.cfg.Events {
		return dst, false
	}
	start := len(dst)
	g.w = jsonWriter{b: dst}
	g.step()
	dst = g.w.b
	g.w.b = nil
	g.index++
	g.bytes += int64(len(dst) - start)
	g.byKind[g.lastKind]++
	return dst, true
}

// Kind returns the kind of the object of the last event Next yielded.
func (g *Generator) Kind() Kind { return g.lastKind }

// Stats reports what was yielded so far.
func (g *Generator) Stats() Stats {
	s := Stats{Events: g.index, Bytes: g.bytes, Live: len(g.live), LiveMax: g.liveMax,
		PodBytesMin: g.podMin, PodBytesMax: g.podMax,
		ByType: map[string]int{}, ByKind: map[string]int{}}
	for i, t := range []string{Added, Modified, Deleted} {
		if g.byType[i] > 0 {
			s.ByType[t] = g.byType[i]
		}
	}
	for k, n := range g.byKind {
		if n > 0 {
			s.ByKind[Kind(k).String()] = n
		}
	}
	return s
}

// Write writes the whole stream of cfg to w, one event per line.
func Write(w io.Writer, cfg Config) (Stats, error) {
	g, err := New(cfg)
	if err != nil {
		return Stats{}, err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	var line []byte
	for {
		var ok bool
		line, ok = g.Next(line[:0])
		if !ok {
			break
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return g.Stats(), fmt.Errorf("write workload event %d: %w", g.index, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return g.Stats(), fmt.Errorf("write workload: %w", err)
	}
	return g.Stats(), nil
}

// now is the stream's clock at event index i.
func (g *Generator) at(i int64) time.Time {
	return g.cfg.Start.Add(time.Duration(i) * StepTime)
}

// begin writes the watch envelope up to the object and assigns the next
// resourceVersion.
func (g *Generator) begin(eventType string, k Kind) uint64 {
	switch eventType {
	case Added:
		g.byType[0]++
	case Modified:
		g.byType[1]++
	case Deleted:
		g.byType[2]++
	}
	g.lastKind = k
	g.rv++
	g.w.open()
	g.w.kv("type", eventType)
	g.w.object("object")
	return g.rv
}

func (g *Generator) end() {
	g.w.close() // object
	g.w.close() // envelope
}

// step writes one event.
func (g *Generator) step() {
	i := g.index
	if i < g.opening {
		if i < clusterObjects {
			g.clusterObject(i)
			return
		}
		q := i - clusterObjects
		g.quota(int32(q/QuotasPerNamespace), q%QuotasPerNamespace)
		return
	}
	bound := g.cfg.LiveObjectsMax
	if len(g.live) == 0 || ((bound == 0 || len(g.live) < bound) && g.rng.intn(100) < createPercent) {
		g.create()
	} else {
		g.advance(g.rng.intn(len(g.live)))
	}
	if len(g.live) > g.liveMax {
		g.liveMax = len(g.live)
	}
}

// pickNamespace skews traffic as clusters are skewed: half of the new
// objects land in the busiest tenth of the namespaces.
func (g *Generator) pickNamespace() int32 {
	n := g.cfg.Namespaces
	if g.rng.intn(2) == 0 {
		return int32(g.rng.intn(max(1, n/10)))
	}
	return int32(g.rng.intn(n))
}

func (g *Generator) create() {
	g.nextID++
	o := live{id: g.nextID, born: int64(g.index), ns: g.pickNamespace()}
	switch r := g.rng.intn(100); {
	case r < createPodPercent:
		o.kind = KindPod
		o.state = podUnscheduled
	case r < createPodPercent+createClaimPercent:
		o.kind = KindPersistentVolumeClaim
		o.state = claimPending
		o.sizeGi = uint16(1 << g.rng.intn(7)) // 1Gi .. 64Gi
	default:
		o.kind = KindService
		o.state = serviceCreated
	}
	g.live = append(g.live, o)
	g.emit(Added, &g.live[len(g.live)-1])
}

// advance moves live object i one step along its lifecycle.
func (g *Generator) advance(i int) {
	o := &g.live[i]
	if o.deleted != 0 {
		g.emit(Deleted, o)
		g.remove(i)
		return
	}
	r := g.rng.intn(100)
	switch o.kind {
	case KindPod:
		switch o.state {
		case podUnscheduled:
			o.state = podScheduled
		case podScheduled:
			o.state = podRunning
		case podRunning:
			switch {
			case o.churn < podChurnMax && r < 55:
				o.churn++
				if r < 15 {
					o.restarts++
				}
			case r < 70:
				o.state = podSucceeded
			case r < 78:
				o.state = podFailed
			default:
				o.deleted = int64(g.index)
			}
		default: // terminal: garbage collected
			o.deleted = int64(g.index)
		}
	case KindPersistentVolumeClaim:
		switch {
		case o.state == claimPending:
			o.state = claimBound
		case o.churn < claimResizeMax && r < 35:
			o.churn++
			o.sizeGi += o.sizeGi/2 + 1
		default:
			o.deleted = int64(g.index)
		}
	case KindService:
		switch {
		case o.state == serviceCreated && serviceTypeOf(o.id, g.cfg.Seed) == serviceLoadBalancer:
			// The cloud controller reports the load balancer's address.
			o.state = serviceUpdated
		case o.churn < 2 && r < 30:
			o.churn++
		case serviceTypeOf(o.id, g.cfg.Seed) == serviceLoadBalancer:
			// Its cleanup finalizer makes the deletion visible first.
			o.deleted = int64(g.index)
		default:
			g.emit(Deleted, o)
			g.remove(i)
			return
		}
	}
	g.emit(Modified, o)
}

func (g *Generator) remove(i int) {
	last := len(g.live) - 1
	g.live[i] = g.live[last]
	g.live = g.live[:last]
}

func (g *Generator) emit(eventType string, o *live) {
	rv := g.begin(eventType, o.kind)
	switch o.kind {
	case KindPod:
		start := len(g.w.b)
		g.pod(o, rv)
		size := len(g.w.b) - start + 1 // with the closing brace
		if g.podMin == 0 || size < g.podMin {
			g.podMin = size
		}
		if size > g.podMax {
			g.podMax = size
		}
	case KindPersistentVolumeClaim:
		g.claim(o, rv)
	case KindService:
		g.service(o, rv)
	}
	g.end()
}

// rng is splitmix64: small, fast, and fixed forever, so that a seed names
// the same stream on every Go version.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a number in [0, n).
func (r *rng) intn(n int) int {
	return int(((r.next() >> 32) * uint64(n)) >> 32)
}

// objectRNG is the random source of one object's fixed attributes.
func objectRNG(seed, id uint64) rng {
	r := rng{s: seed*0x2545f4914f6cdd1d ^ id}
	r.next()
	return r
}

func timeOf(seconds int64) time.Duration { return time.Duration(seconds) * time.Second }

// SplitEvent returns the type and the object of a watch event line, as
// Next writes them.
func SplitEvent(line []byte) (eventType string, object json.RawMessage, err error) {
	var w struct {
		Type   string          `json:"type"`
		Object json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal(line, &w); err != nil {
		return "", nil, fmt.Errorf("workload event: %w", err)
	}
	return w.Type, w.Object, nil
}
