package replay

import (
	"fmt"
	"maps"
	"slices"

	"github.com/quotaledger/quota/ledger/quota"
	"github.com/quotaledger/quota/projector"
	"github.com/quotaledger/quota/projector/buckets"
)

// Difference is one way in which two projections disagree, in terms an
// operator reads: which namespace, which quota or object, which field, and
// the value on each side ("absent" when one side lacks the entry).
type Difference struct {
	// Bucket, Namespace and Entry are the differing entry's Bucket,
	// Namespace and Name (projector.Entry).
	Bucket    string `json:"bucket"`
	Namespace string `json:"namespace,omitempty"`
	Entry     string `json:"entry"`
	// Field is the part of the entry that differs: "used requests.cpu",
	// "charge memory", "present".
	Field string `json:"field"`
	// Live and Rebuilt are the values on each side.
	Live    string `json:"live"`
	Rebuilt string `json:"rebuilt"`
}

// String prints the difference as one line.
func (d Difference) String() string {
	where := d.Entry
	if d.Namespace != "" {
		where = "namespace " + d.Namespace + " " + d.Entry
	}
	return fmt.Sprintf("%s: %s: live %s, rebuilt %s", where, d.Field, d.Live, d.Rebuilt)
}

// Compare lists every difference between two projections (live and
// rebuilt), bucket by bucket and key by key, in key order. Entries whose
// bytes are equal are equal; entries that differ are read (projector.ReadEntry) and
// compared part by part, so the report names the quota resource or the
// object charge that drifted. An empty result means the buckets hold the
// same bytes.
func Compare(live, rebuilt *buckets.Set) []Difference {
	var out []Difference
	for _, name := range projector.Buckets() {
		projector.DiffBuckets(live, rebuilt, name, func(k, lv, rv []byte) {
			out = append(out, compareEntry(name, k, lv, rv)...)
		})
	}
	return out
}

// compareEntry reports how the live and rebuilt values of one key, which
// differ in their bytes, differ for an operator. A single stored value is
// reported as it is on each side. A record missing on one side is
// reported as "present", one that does not decode as "stored bytes";
// otherwise each quantity and each field that differs is reported, and
// the stored bytes when none does.
func compareEntry(bucket string, key, lv, rv []byte) []Difference {
	l, r := projector.ReadEntry(bucket, key, lv), projector.ReadEntry(bucket, key, rv)
	d := func(field, lval, rval string) Difference {
		return Difference{Bucket: bucket, Namespace: l.Namespace, Entry: l.Name, Field: field, Live: lval, Rebuilt: rval}
	}
	var out []Difference
	if !l.Record {
		for i, f := range l.Fields {
			out = append(out, d(f.Name, f.Value, r.Fields[i].Value))
		}
		return out
	}
	switch {
	case lv == nil || rv == nil:
		return []Difference{d("present", l.Summary, r.Summary)}
	case l.Err != nil || r.Err != nil:
		return []Difference{d("stored bytes", l.Summary, r.Summary)}
	}
	for i, list := range l.Lists {
		out = append(out, compareLists(list.Name, list.List, r.Lists[i].List, d)...)
	}
	for i, f := range l.Fields {
		if !f.SameAs(r.Fields[i]) {
			out = append(out, d(f.Name, f.Value, r.Fields[i].Value))
		}
	}
	if len(out) == 0 {
		out = append(out, d("stored bytes", storedBytes(lv), storedBytes(rv)))
	}
	return out
}

// compareLists reports each resource whose quantity differs, by value or
// by print (a figure equal in value but printed otherwise is drift too:
// describe would show it).
func compareLists(field string, l, r quota.ResourceList, d func(field, l, r string) Difference) []Difference {
	names := slices.AppendSeq(slices.Collect(maps.Keys(l)), maps.Keys(r))
	slices.Sort(names)
	var out []Difference
	for _, n := range slices.Compact(names) {
		lq, lok := l[n]
		rq, rok := r[n]
		ls, rs := "absent", "absent"
		if lok {
			ls = lq.String()
		}
		if rok {
			rs = rq.String()
		}
		if ls != rs || lok != rok || (lok && lq.Cmp(rq) != 0) {
			out = append(out, d(field+" "+n, ls, rs))
		}
	}
	return out
}

// storedBytes prints stored bytes, "absent" for none.
func storedBytes(v []byte) string {
	if v == nil {
		return "absent"
	}
	return fmt.Sprintf("%q", v)
}
