package projector

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/ledger/quota"
)

// Difference is one way in which two projections disagree, in terms an
// operator reads: which namespace, which quota or object, which field, and
// the value on each side ("absent" when one side lacks the entry).
type Difference struct {
	// Bucket is the storage bucket the entry lives in.
	Bucket string `json:"bucket"`
	// Namespace is the namespace of the entry, "" for the whole
	// projection or a cluster-scoped object.
	Namespace string `json:"namespace,omitempty"`
	// Entry names the entry: "quota compute", "object pods/web-1",
	// "applied seq".
	Entry string `json:"entry"`
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

const absent = "absent"

// Compare lists every difference between two projections (live and
// rebuilt), bucket by bucket and key by key, in key order. Entries whose
// bytes are equal are equal; entries that differ are decoded and compared
// field by field, so the report names the quota resource or the object
// charge that drifted. An empty result means the buckets hold the same
// bytes.
func Compare(live, rebuilt *bolt.Tx) []Difference {
	var out []Difference
	for _, name := range allBuckets {
		lb, rb := live.Bucket(name), rebuilt.Bucket(name)
		mergeKeys(lb, rb, func(k, lv, rv []byte) {
			out = append(out, compareEntry(string(name), k, lv, rv)...)
		})
	}
	return out
}

// mergeKeys walks two buckets in key order and calls fn for every key whose
// values differ (nil for the side that lacks the key). A missing bucket is
// an empty one.
func mergeKeys(a, b *bolt.Bucket, fn func(k, av, bv []byte)) {
	var ca, cb *bolt.Cursor
	var ka, va, kb, vb []byte
	if a != nil {
		ca = a.Cursor()
		ka, va = ca.First()
	}
	if b != nil {
		cb = b.Cursor()
		kb, vb = cb.First()
	}
	for ka != nil || kb != nil {
		switch c := compareKeys(ka, kb); {
		case c < 0:
			fn(ka, va, nil)
			ka, va = ca.Next()
		case c > 0:
			fn(kb, nil, vb)
			kb, vb = cb.Next()
		default:
			if !bytes.Equal(va, vb) {
				fn(ka, va, vb)
			}
			ka, va = ca.Next()
			kb, vb = cb.Next()
		}
	}
}

// compareKeys orders keys with nil (an exhausted cursor) last.
func compareKeys(a, b []byte) int {
	switch {
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return bytes.Compare(a, b)
}

func compareEntry(bucket string, key, lv, rv []byte) []Difference {
	switch bucket {
	case string(bucketMeta):
		return []Difference{{Bucket: bucket, Entry: "meta " + string(key), Field: "value", Live: metaValue(key, lv), Rebuilt: metaValue(key, rv)}}
	case string(bucketSubjects):
		return []Difference{{Bucket: bucket, Namespace: string(key), Entry: "subject", Field: "last applied seq", Live: seqValue(lv), Rebuilt: seqValue(rv)}}
	case string(bucketObjects):
		return compareObjects(bucket, key, lv, rv)
	case string(bucketQuotas):
		return compareQuotas(bucket, key, lv, rv)
	case string(bucketReserved):
		return []Difference{{Bucket: bucket, Entry: "reservation " + string(key), Field: "object", Live: keyValue(lv), Rebuilt: keyValue(rv)}}
	case string(bucketExpiry):
		entry := fmt.Sprintf("expiry key %q", key)
		if len(key) >= 8 {
			entry = fmt.Sprintf("reservation %s expiring %s", key[8:], time.Unix(0, int64(binary.BigEndian.Uint64(key[:8]))).UTC().Format(time.RFC3339Nano))
		}
		return []Difference{{Bucket: bucket, Entry: entry, Field: "object", Live: keyValue(lv), Rebuilt: keyValue(rv)}}
	case string(bucketDeadlines):
		ns, name, _ := strings.Cut(string(key), "\x00")
		return []Difference{{Bucket: bucket, Namespace: ns, Entry: strings.ReplaceAll(name, "\x00", "/"), Field: "deadline", Live: timeValue(lv), Rebuilt: timeValue(rv)}}
	case string(bucketSkipped):
		return []Difference{{Bucket: bucket, Entry: fmt.Sprintf("skipped record seq %s", seqValue(key)), Field: "reason", Live: skippedValue(lv), Rebuilt: skippedValue(rv)}}
	}
	return []Difference{{Bucket: bucket, Entry: fmt.Sprintf("key %q", key), Field: "bytes", Live: rawValue(lv), Rebuilt: rawValue(rv)}}
}

func metaValue(key, v []byte) string {
	switch {
	case v == nil:
		return absent
	case bytes.Equal(key, keyAppliedTime) && len(v) == 8:
		return time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC().Format(time.RFC3339Nano)
	case len(v) == 8:
		return seqValue(v)
	}
	return rawValue(v)
}

func seqValue(v []byte) string {
	if v == nil {
		return absent
	}
	if len(v) != 8 {
		return rawValue(v)
	}
	return fmt.Sprint(binary.BigEndian.Uint64(v))
}

func keyValue(v []byte) string {
	if v == nil {
		return absent
	}
	return strings.ReplaceAll(string(v), "\x00", "/")
}

func rawValue(v []byte) string {
	if v == nil {
		return absent
	}
	return fmt.Sprintf("%q", v)
}

func skippedValue(v []byte) string {
	if v == nil {
		return absent
	}
	var s skippedRecord
	if err := json.Unmarshal(v, &s); err != nil {
		return rawValue(v)
	}
	return fmt.Sprintf("%q", s.Reason)
}

func compareObjects(bucket string, key, lv, rv []byte) []Difference {
	parts := strings.SplitN(string(key), "\x00", 3)
	ns, entry := "", keyValue(key)
	if len(parts) == 3 {
		ns, entry = parts[0], "object "+parts[1]+"/"+parts[2]
	}
	d := func(field, l, r string) Difference {
		return Difference{Bucket: bucket, Namespace: ns, Entry: entry, Field: field, Live: l, Rebuilt: r}
	}
	l, lerr := decodeObjectSide(lv)
	r, rerr := decodeObjectSide(rv)
	switch {
	case lv == nil || rv == nil:
		return []Difference{d("present", objectSummary(lv, l, lerr), objectSummary(rv, r, rerr))}
	case lerr != nil || rerr != nil:
		return []Difference{d("stored bytes", objectSummary(lv, l, lerr), objectSummary(rv, r, rerr))}
	}
	var out []Difference
	out = append(out, compareLists("charge", l.Charge.Usage, r.Charge.Usage, d)...)
	if a, b := scopeString(l.Charge), scopeString(r.Charge); a != b {
		out = append(out, d("scope facts", a, b))
	}
	if l.Reservation != r.Reservation {
		out = append(out, d("reservation", orNone(l.Reservation), orNone(r.Reservation)))
	}
	if !l.ExpiresAt.Equal(r.ExpiresAt) {
		out = append(out, d("reservation expiry", l.ExpiresAt.String(), r.ExpiresAt.String()))
	}
	if a, b := holdsString(l.Holds), holdsString(r.Holds); a != b {
		out = append(out, d("update holds", a, b))
	}
	if l.Seq != r.Seq {
		out = append(out, d("set by seq", fmt.Sprint(l.Seq), fmt.Sprint(r.Seq)))
	}
	if l.UID != r.UID {
		out = append(out, d("uid", orNone(l.UID), orNone(r.UID)))
	}
	if !bytes.Equal(l.Object, r.Object) {
		out = append(out, d("object", fmt.Sprintf("%d bytes", len(l.Object)), fmt.Sprintf("%d bytes", len(r.Object))))
	}
	if len(out) == 0 {
		out = append(out, d("stored bytes", rawValue(lv), rawValue(rv)))
	}
	return out
}

func compareQuotas(bucket string, key, lv, rv []byte) []Difference {
	parts := strings.SplitN(string(key), "\x00", 2)
	ns, entry := "", keyValue(key)
	if len(parts) == 2 {
		ns, entry = parts[0], "quota "+parts[1]
	}
	d := func(field, l, r string) Difference {
		return Difference{Bucket: bucket, Namespace: ns, Entry: entry, Field: field, Live: l, Rebuilt: r}
	}
	var l, r quotaRecord
	lerr, rerr := decodeSide(lv, &l), decodeSide(rv, &r)
	switch {
	case lv == nil || rv == nil:
		return []Difference{d("present", quotaSummary(lv, &l, lerr), quotaSummary(rv, &r, rerr))}
	case lerr != nil || rerr != nil:
		return []Difference{d("stored bytes", quotaSummary(lv, &l, lerr), quotaSummary(rv, &r, rerr))}
	}
	var out []Difference
	out = append(out, compareLists("used", l.Used, r.Used, d)...)
	if l.Invalid != r.Invalid {
		out = append(out, d("invalid", orNone(l.Invalid), orNone(r.Invalid)))
	}
	if !bytes.Equal(l.Object, r.Object) {
		out = append(out, d("spec", string(l.Object), string(r.Object)))
	}
	if l.Seq != r.Seq {
		out = append(out, d("set by seq", fmt.Sprint(l.Seq), fmt.Sprint(r.Seq)))
	}
	if len(out) == 0 {
		out = append(out, d("stored bytes", rawValue(lv), rawValue(rv)))
	}
	return out
}

// compareLists reports each resource whose quantity differs, by value or
// by print (a figure equal in value but printed otherwise is drift too:
// describe would show it).
func compareLists(field string, l, r quota.ResourceList, d func(field, l, r string) Difference) []Difference {
	names := make([]string, 0, len(l)+len(r))
	for n := range l {
		names = append(names, n)
	}
	for n := range r {
		if _, ok := l[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []Difference
	for _, n := range names {
		lq, lok := l[n]
		rq, rok := r[n]
		ls, rs := absent, absent
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

func decodeObjectSide(v []byte) (*objectRecord, error) {
	if v == nil {
		return &objectRecord{}, nil
	}
	return decodeObjectRecord(v)
}

func decodeSide(v []byte, into any) error {
	if v == nil {
		return nil
	}
	return json.Unmarshal(v, into)
}

func objectSummary(v []byte, r *objectRecord, err error) string {
	switch {
	case v == nil:
		return absent
	case err != nil:
		return "undecodable: " + err.Error()
	}
	s := "charged " + listString(r.Charge.Usage)
	if r.Reservation != "" {
		s += " (reserved by " + r.Reservation + ")"
	}
	if len(r.Holds) > 0 {
		s += ", update holds " + holdsString(r.Holds)
	}
	return s
}

// holdsString describes an object's update holds: per hold its id,
// expiry, charge and scope facts.
func holdsString(holds []hold) string {
	if len(holds) == 0 {
		return absent
	}
	parts := make([]string, len(holds))
	for i, h := range holds {
		parts[i] = fmt.Sprintf("%s until %s: %s %s", h.ID, h.ExpiresAt.UTC().Format(time.RFC3339Nano), listString(h.Charge.Usage), scopeString(h.Charge))
	}
	return strings.Join(parts, "; ")
}

func quotaSummary(v []byte, r *quotaRecord, err error) string {
	switch {
	case v == nil:
		return absent
	case err != nil:
		return "undecodable: " + err.Error()
	case r.Invalid != "":
		return "invalid: " + r.Invalid
	}
	return "used " + listString(r.Used)
}

// listString prints a resource list as name=value pairs in name order.
func listString(l quota.ResourceList) string {
	if len(l) == 0 {
		return "nothing"
	}
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + l[n].String()
	}
	return strings.Join(parts, ",")
}

func scopeString(c quota.Charge) string {
	b, _ := json.Marshal(c.Scope)
	return string(b)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// timeValue prints a deadlines entry.
func timeValue(v []byte) string {
	if v == nil {
		return absent
	}
	at, state, err := readDeadline(nil, v)
	if err != nil {
		return rawValue(v)
	}
	if state == deadlinePassed {
		return at.Format(time.RFC3339Nano) + ", passed"
	}
	return at.Format(time.RFC3339Nano)
}
