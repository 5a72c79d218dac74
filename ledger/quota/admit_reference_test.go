package quota

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/ledger/quantity"
)

// refAdmit is Admit as first written: the quotas' required names sorted,
// every intermediate list a fresh map, and the new usage built as masks of
// masks. Admit must decide every request as it does, down to the message
// and each quota's used.
func refAdmit(req AdmitRequest) Decision {
	states := make([]QuotaState, 0, len(req.Quotas))
	for _, s := range req.Quotas {
		if s.Quota != nil && s.Quota.Invalid == "" {
			states = append(states, s)
		}
	}
	slices.SortFunc(states, func(a, b QuotaState) int { return strings.Compare(a.Quota.Name, b.Quota.Name) })
	d := Decision{Allowed: true, Code: http.StatusOK, Used: make(map[string]ResourceList, len(states))}
	for _, s := range states {
		d.Used[s.Quota.Name] = s.Used
	}
	o := req.Object
	if req.Operation == Delete || o == nil || !handles(&req) {
		return d
	}
	var input Charge
	if req.Charge != nil {
		input = *req.Charge
	} else {
		var err error
		if input, err = Evaluate(o, req.Now); err != nil {
			return internalError(d, err)
		}
	}
	d.Charge = input

	limitedScopes := matchedLimitedScopes(input, req.Limited)
	var limitedNames []string
	for _, l := range req.Limited {
		if l.APIGroup == o.Group && l.Resource == o.GroupResource().Resource {
			limitedNames = append(limitedNames, limitedByDefault(input.Usage, l)...)
		}
	}

	var interesting []int
	restricted := map[string]bool{}
	var restrictedScopes []ScopeRequirement
	for i, s := range states {
		for _, sc := range s.Quota.Scopes {
			if scopeMatches(sc, input) {
				restrictedScopes = append(restrictedScopes, sc)
			}
		}
		if !s.Quota.Matches(input) {
			continue
		}
		required := refMatchingResources(o.Resource, s.Quota.Hard.Names())
		if msg := constraints(o, required); msg != "" {
			return forbidden(d, o, fmt.Sprintf("failed quota: %s: %s", s.Quota.Name, msg))
		}
		var unknown []string
		for _, r := range required {
			if _, ok := s.Used[r]; !ok {
				unknown = append(unknown, r)
			}
		}
		if len(unknown) > 0 {
			return forbidden(d, o, fmt.Sprintf("status unknown for quota: %s, resources: %s", s.Quota.Name, joinSorted(required)))
		}
		interesting = append(interesting, i)
		for _, r := range required {
			restricted[r] = true
		}
	}

	if neg := negativeNames(input.Usage); len(neg) > 0 {
		return forbidden(d, o, "quota usage is negative for resource(s): "+strings.Join(neg, ","))
	}

	delta := make(map[int]ResourceList, len(interesting))
	for _, i := range interesting {
		delta[i] = input.Usage
	}
	var deltaNoQuota ResourceList
	if req.Operation == Create && len(interesting) == 0 {
		deltaNoQuota = input.Usage
	}
	if req.Operation == Update {
		if req.OldObject == nil {
			return forbidden(d, o, "unable to get previous usage since prior version of object was not found")
		}
		if req.OldObject.ResourceVersion != "" {
			prev, err := Evaluate(req.OldObject, req.Now)
			if err != nil {
				return internalError(d, err)
			}
			growth := SubtractNonNegative(input.Usage, prev.Usage)
			if len(interesting) == 0 {
				deltaNoQuota = growth
			}
			for _, i := range interesting {
				if states[i].Quota.Matches(prev) {
					delta[i] = growth
				}
			}
		} else if len(interesting) == 0 {
			deltaNoQuota = input.Usage
		}
	}
	for i, l := range delta {
		l = refRemoveZeros(l)
		if len(l) == 0 {
			delete(delta, i)
		} else {
			delta[i] = l
		}
	}
	if len(interesting) != 0 {
		if len(delta) == 0 {
			return d
		}
	} else if len(refRemoveZeros(deltaNoQuota)) == 0 {
		return d
	}

	var uncovered []string
	for _, n := range limitedNames {
		if !restricted[n] {
			uncovered = append(uncovered, n)
		}
	}
	if len(uncovered) > 0 {
		return forbidden(d, o, "insufficient quota to consume: "+joinSorted(uncovered))
	}
	if missing := uncoveredScopes(limitedScopes, restrictedScopes); len(missing) > 0 {
		// Kubernetes returns this one as a plain error, which the API
		// server reports as an internal error with the bare message.
		parts := make([]string, len(missing))
		for i, m := range missing {
			parts[i] = fmt.Sprint(m)
		}
		d.Allowed = false
		d.Code = http.StatusInternalServerError
		d.Reason = ""
		d.Message = "insufficient quota to match these scopes: [" + strings.Join(parts, " ") + "]"
		return d
	}

	newUsed := make(map[string]ResourceList, len(states))
	for k, v := range d.Used {
		newUsed[k] = v
	}
	for _, i := range interesting {
		l, ok := delta[i]
		if !ok {
			continue
		}
		q := states[i].Quota
		requested := q.Mask(l)
		used := refAdd(states[i].Used, requested)
		if ok, exceeded := lessThanOrEqual(maskNames(used, requested.Names()), q.Hard); !ok {
			return forbidden(d, o, fmt.Sprintf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
				q.Name, maskNames(requested, exceeded), maskNames(states[i].Used, exceeded), maskNames(q.Hard, exceeded)))
		}
		newUsed[q.Name] = used
	}
	d.Used = newUsed
	return d
}

func refMatchingResources(resource string, names []string) []string {
	var out []string
	for _, n := range names {
		if evaluatorProduces(resource, n) {
			out = append(out, n)
		}
	}
	return out
}

// refAdd is Kubernetes' quota.Add: a+b for every resource in either
// list, a resource only in b copied, so the sum keeps the format rules of
// quantity.Add.
func refAdd(a, b ResourceList) ResourceList {
	out := make(ResourceList, len(a)+len(b))
	for k, v := range a {
		if w, ok := b[k]; ok {
			v = v.Add(w)
		}
		out[k] = v
	}
	for k, w := range b {
		if _, ok := out[k]; !ok {
			out[k] = w
		}
	}
	return out
}

func refRemoveZeros(l ResourceList) ResourceList {
	out := make(ResourceList, len(l))
	for k, v := range l {
		if !v.IsZero() {
			out[k] = v
		}
	}
	return out
}

// admitGenerator makes random admission requests: pods from podGenerator
// against one to four quotas over names pods produce and names they do
// not, with scopes, usage near the limits, names missing from the status,
// and limitedResources.
type admitGenerator struct {
	podGenerator
}

var generatedHardNames = []string{
	ResourcePods, countPrefix + "pods", ResourceCPU, ResourceRequestsCPU, ResourceLimitsCPU,
	ResourceMemory, ResourceRequestsMemory, ResourceLimitsMemory, ResourceRequestsEphemeral,
	"requests.example.com/gpu", "requests.nvidia.com/gpu", "hugepages-2Mi", "requests.hugepages-2Mi",
	ResourceServices, ResourceSecrets, ResourceRequestsStorage,
}

var generatedLimits = []string{"0", "1", "2", "3", "500m", "1500m", "4", "1Gi", "2Gi", "8Ei", "1000"}

var generatedScopes = []corev1.ResourceQuotaScope{ScopeBestEffort, ScopeNotBestEffort, ScopeTerminating, ScopeNotTerminating}

func (g admitGenerator) quantity(values []string) quantity.Quantity {
	return quantity.MustParse(values[g.r.IntN(len(values))])
}

func (g admitGenerator) quota(name string) QuotaState {
	q := &Quota{Name: name, Hard: ResourceList{}}
	for _, n := range generatedHardNames {
		if g.r.IntN(4) == 0 {
			q.Hard[n] = g.quantity(generatedLimits)
		}
	}
	if g.r.IntN(3) == 0 {
		q.Scopes = append(q.Scopes, ScopeRequirement{ScopeName: generatedScopes[g.r.IntN(len(generatedScopes))], Operator: OperatorExists})
	}
	if g.r.IntN(20) == 0 {
		q.Invalid = "spec.hard: invalid"
	}
	used := ResourceList{}
	for n := range q.Hard {
		if g.r.IntN(12) != 0 {
			used[n] = g.quantity(generatedLimits)
		}
	}
	return QuotaState{Quota: q, Used: used}
}

func (g admitGenerator) request(i int) AdmitRequest {
	p := g.pod(i)
	if g.r.IntN(4) == 0 {
		deadline := int64(30)
		p.Spec.ActiveDeadlineSeconds = &deadline
	}
	if len(p.Spec.Containers) > 0 && g.r.IntN(30) == 0 {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
	}
	o := &object.Object{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: "team", Name: p.Name, Value: p}
	req := AdmitRequest{Operation: Create, Object: o, Now: testNow}
	switch g.r.IntN(8) {
	case 0, 1:
		req.Operation = Update
		// A pod's resources change through its resize subresource; a
		// plain update or one of another subresource is not evaluated.
		req.Subresource = []string{"resize", "resize", "resize", "", "status"}[g.r.IntN(5)]
		if g.r.IntN(6) != 0 {
			old := g.pod(i)
			req.OldObject = &object.Object{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: "team", Name: p.Name, Value: old}
			if g.r.IntN(4) != 0 {
				req.OldObject.ResourceVersion = "7"
			}
		}
	case 2:
		req.Operation = Delete
	}
	for _, k := range g.r.Perm(4)[:g.r.IntN(5)] {
		req.Quotas = append(req.Quotas, g.quota(fmt.Sprintf("q%d", k)))
	}
	switch g.r.IntN(6) {
	case 0:
		req.Limited = []LimitedResource{{Resource: "pods", MatchContains: []string{"gpu"}}}
	case 1:
		req.Limited = []LimitedResource{{Resource: "pods", MatchScopes: []ScopeRequirement{{ScopeName: ScopeBestEffort, Operator: OperatorExists}}}}
	}
	if g.r.IntN(2) == 0 {
		if c, err := Evaluate(o, testNow); err == nil {
			req.Charge = &c
		}
	}
	return req
}

// TestAdmitMatchesTheReference compares Admit with refAdmit on seeded
// random requests, with and without VerdictOnly, and checks that the comparison reached every kind of
// verdict.
func TestAdmitMatchesTheReference(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	g := admitGenerator{podGenerator{rand.New(rand.NewPCG(seed, 11))}}
	verdicts := map[string]int{}
	for i := range 20000 {
		req := g.request(i)
		want := refAdmit(req)
		got := Admit(req)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("request %d (seed %d):\n got %+v\nwant %+v\nquotas %+v", i, seed, got, want, req.Quotas)
		}
		verdictOnly := req
		verdictOnly.VerdictOnly = true
		want.Used = nil
		if v := Admit(verdictOnly); !reflect.DeepEqual(v, want) {
			t.Fatalf("request %d (seed %d), verdict only:\n got %+v\nwant %+v\nquotas %+v", i, seed, v, want, req.Quotas)
		}
		kind := "allowed"
		if !got.Allowed {
			kind = got.Message
			if _, after, ok := strings.Cut(kind, " is forbidden: "); ok {
				kind = after
			}
			kind, _, _ = strings.Cut(kind, ":")
		}
		verdicts[kind]++
	}
	for _, kind := range []string{"allowed", "exceeded quota", "failed quota", "status unknown for quota",
		"insufficient quota to consume", "insufficient quota to match these scopes", "quota usage is negative for resource(s)"} {
		if verdicts[kind] == 0 {
			t.Errorf("no request had the verdict %q; verdicts %v", kind, verdicts)
		}
	}
}

// lessThanOrEqual reports whether every resource of a that b bounds is
// within b, and the sorted names that are not.
func lessThanOrEqual(a, b ResourceList) (bool, []string) {
	var exceeded []string
	for k, v := range a {
		if limit, ok := b[k]; ok && v.Cmp(limit) > 0 {
			exceeded = append(exceeded, k)
		}
	}
	sort.Strings(exceeded)
	return len(exceeded) == 0, exceeded
}
