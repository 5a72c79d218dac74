package projector

import (
	"reflect"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger/quantity"
	"github.com/quotaledger/quota/ledger/quota"
)

// TestObjectRecordRoundTrip checks that the binary record keeps every
// field, formats of quantities included, with holds and without.
func TestObjectRecordRoundTrip(t *testing.T) {
	charge := func(cpu string, pc string) quota.Charge {
		return quota.Charge{
			Resource: "pods",
			Usage: quota.ResourceList{
				"pods":            quantity.MustParse("1"),
				"requests.memory": quantity.MustParse("0.5Ki"),
				"requests.cpu":    quantity.MustParse(cpu),
			},
			Scope: quota.ScopeFacts{Pod: true, BestEffort: true, PriorityClass: pc, VolumeAttributesClasses: []string{"a"}},
		}
	}
	reserved := &objectRecord{
		Resource: "pods", Namespace: "ns", Name: "web", UID: "u1", Kind: "Pod",
		Object:      []byte(`{"kind":"Pod"}`),
		Charge:      charge("250m", "high"),
		Seq:         42,
		Reservation: "r1",
		ExpiresAt:   time.Date(2026, 11, 22, 3, 0, 0, 5, time.UTC),
	}
	held := &objectRecord{
		Resource: "pods", Namespace: "ns", Name: "db", Kind: "Pod",
		Object: []byte(`{"kind":"Pod"}`),
		Charge: charge("1", ""),
		Seq:    43,
		Holds: []hold{
			{ID: "u2", ExpiresAt: time.Date(2026, 11, 22, 3, 1, 0, 0, time.UTC), Charge: charge("1500m", "")},
			{ID: "u3", ExpiresAt: time.Date(2026, 11, 22, 3, 2, 0, 7, time.UTC), Charge: charge("2", "low")},
		},
	}
	for _, in := range []*objectRecord{reserved, held} {
		b := encodeObjectRecord(in)
		if b[0] != objectRecordVersion {
			t.Errorf("%s: version %d, want %d", in.Name, b[0], objectRecordVersion)
		}
		out, err := decodeObjectRecord(b)
		if err != nil {
			t.Fatal(err)
		}
		sameUsage := func(what string, want, got *quota.Charge) {
			for name, q := range want.Usage {
				g := got.Usage[name]
				if g.Cmp(q) != 0 || g.Format() != q.Format() {
					t.Errorf("%s %s: got %s (%v), want %s (%v)", what, name, g, g.Format(), q, q.Format())
				}
			}
			if len(got.Usage) != len(want.Usage) {
				t.Errorf("%s: got %d resources, want %d", what, len(got.Usage), len(want.Usage))
			}
			want.Usage, got.Usage = nil, nil
		}
		sameUsage(in.Name, &in.Charge, &out.Charge)
		if len(out.Holds) != len(in.Holds) {
			t.Fatalf("%s: got %d holds, want %d", in.Name, len(out.Holds), len(in.Holds))
		}
		for i := range in.Holds {
			sameUsage(in.Name+" hold "+in.Holds[i].ID, &in.Holds[i].Charge, &out.Holds[i].Charge)
		}
		if !reflect.DeepEqual(in, out) {
			t.Errorf("got %+v\nwant %+v", out, in)
		}
		for i := range b {
			if _, err := decodeObjectRecord(b[:i]); err == nil {
				t.Errorf("%s: a record cut to %d bytes decoded", in.Name, i)
			}
		}
	}
}
