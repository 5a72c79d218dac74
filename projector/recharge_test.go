package projector

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/quotaledger/quota/ledger/quantity"
	"github.com/quotaledger/quota/ledger/quota"
)

// TestRechargeWithoutTheHistory plays a projection folded under other
// rules: the file says an older rules version, and every object's charge
// and every quota's used are what those rules gave (here: wrong, doubled
// cpu). Recharge alone, with no event of the log, brings every charge
// and used back to what this build's fold of the same events gives.
func TestRechargeWithoutTheHistory(t *testing.T) {
	records := benchRecords(t, 3, 60)
	want := openTemp(t)
	applyAll(t, want, records, 50)

	p := openTemp(t)
	applyAll(t, p, records, 50)
	set := p.view.Load().Clone()
	var objects []*objectRecord
	if err := forEachObjectPrefix(set, nil, func(r *objectRecord) error { objects = append(objects, r); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, r := range objects {
		next := *r
		next.Charge.Usage = quota.ResourceList{}
		for name, v := range r.Charge.Usage {
			next.Charge.Usage[name] = v.Add(v)
		}
		if err := putObject(set, &next); err != nil {
			t.Fatal(err)
		}
	}
	var quotas []*quotaRecord
	if err := forEachQuota(set, "", true, func(r *quotaRecord) error { quotas = append(quotas, r); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, r := range quotas {
		c := r.clone()
		c.parsed = r.parsed
		c.Used = quota.ResourceList{"pods": quantity.MustParse("999")}
		if err := putQuota(set, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.Bucket(bucketMeta).Put(keyRules, seqBytes(RulesVersion-1)); err != nil {
		t.Fatal(err)
	}
	p.set, p.rules = set, RulesVersion-1
	p.view.Store(set.Snapshot())
	if diff := chargeDiff(t, p, want); diff == "" {
		t.Fatal("the doctored projection does not differ; the test checks nothing")
	}

	if err := p.Recharge(); err != nil {
		t.Fatal(err)
	}
	if p.Rules() != RulesVersion {
		t.Fatalf("rules %d after Recharge, want %d", p.Rules(), RulesVersion)
	}
	if diff := chargeDiff(t, p, want); diff != "" {
		t.Fatalf("after Recharge the projection differs from this build's fold: %s", diff)
	}
}

// chargeDiff names the first object whose charge, or quota whose used,
// differs between two projections; "" when none does.
func chargeDiff(t *testing.T, got, want *Projector) string {
	t.Helper()
	charges := func(p *Projector) map[string]string {
		out := map[string]string{}
		err := forEachObjectPrefix(p.View(), nil, func(r *objectRecord) error {
			out[string(objectKey(r.Namespace, r.Resource, r.Name))] = string(appendCharge(nil, &r.Charge))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		err = forEachQuota(p.View(), "", true, func(r *quotaRecord) error {
			used := ""
			for _, name := range slices.Sorted(maps.Keys(r.Used)) {
				used += name + "=" + r.Used[name].String() + ","
			}
			out["quota "+r.Namespace+"/"+r.Name] = used
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	g, w := charges(got), charges(want)
	for _, k := range slices.Sorted(maps.Keys(w)) {
		if g[k] != w[k] {
			return fmt.Sprintf("%q: %q, want %q", k, g[k], w[k])
		}
	}
	if len(g) != len(w) {
		return fmt.Sprintf("%d entries, want %d", len(g), len(w))
	}
	return ""
}
