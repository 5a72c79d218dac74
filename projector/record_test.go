package projector

import (
	"reflect"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger/quantity"
	"github.com/quotaledger/quota/ledger/quota"
)

// TestObjectRecordRoundTrip checks that the binary record keeps every
// field, formats of quantities included.
func TestObjectRecordRoundTrip(t *testing.T) {
	in := &objectRecord{
		Resource: "pods", Namespace: "ns", Name: "web", UID: "u1", Kind: "Pod",
		Object: []byte(`{"kind":"Pod"}`),
		Charge: quota.Charge{
			Resource: "pods",
			Usage: quota.ResourceList{
				"pods":            quantity.MustParse("1"),
				"requests.memory": quantity.MustParse("512").WithFormat(quantity.BinarySI),
				"requests.cpu":    quantity.MustParse("250m"),
			},
			Scope: quota.ScopeFacts{Pod: true, BestEffort: true, PriorityClass: "high", VolumeAttributesClasses: []string{"a"}},
		},
		Seq:         42,
		Reservation: "r1",
		ExpiresAt:   time.Date(2026, 11, 22, 3, 0, 0, 5, time.UTC),
	}
	b, err := encodeObjectRecord(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeObjectRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	for name, q := range in.Charge.Usage {
		got := out.Charge.Usage[name]
		if got.Cmp(q) != 0 || got.Format() != q.Format() {
			t.Errorf("%s: got %s (%v), want %s (%v)", name, got, got.Format(), q, q.Format())
		}
	}
	in.Charge.Usage, out.Charge.Usage = nil, nil
	if !reflect.DeepEqual(in, out) {
		t.Errorf("got %+v\nwant %+v", out, in)
	}
	for i := range b {
		if _, err := decodeObjectRecord(b[:i]); err == nil {
			t.Errorf("a record cut to %d bytes decoded", i)
		}
	}
}
