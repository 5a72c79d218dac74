package projector

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quotaledger/quota/projector/buckets"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/quantity"
)

// TestFoldReservationsDecidedTogether checks a Reserve holding several
// reservations: each is applied as a single Reserve would be, a repeated
// name charges nothing, each expires on its own, and one bad reservation
// drops the event whole.
func TestFoldReservationsDecidedTogether(t *testing.T) {
	base := explainRecords()[:1] // the compute quota of team-a
	pod := func(name, cpu string) json.RawMessage {
		return json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"team-a"},` +
			`"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"` + cpu + `"}}}]}}`)
	}
	at := base[0].Time
	record := func(seq uint64, ev ledger.Event) ledger.Record {
		ev.Version = ledger.EncodingVersion
		return ledger.Record{Seq: seq, Subject: ledger.Subject("team-a"), Namespace: "team-a", Time: at.Add(time.Duration(seq) * time.Second), Event: ev}
	}
	records := append(base,
		record(2, ledger.Event{Type: ledger.Reserve, Namespace: "team-a", ReservationTTL: time.Minute, Reservations: []ledger.Reservation{
			{ID: "r-1", Resource: "pods", Name: "a", Object: pod("a", "250m")},
			{ID: "r-2", Resource: "pods", Name: "b", Object: pod("b", "500m")},
			{ID: "r-3", Resource: "pods", Name: "a", Object: pod("a", "1")}, // a is reserved already
		}}),
		// The second reservation holds a pod of another name: the event
		// is skipped whole, the first reservation included.
		record(3, ledger.Event{Type: ledger.Reserve, Namespace: "team-a", ReservationTTL: time.Minute, Reservations: []ledger.Reservation{
			{ID: "r-4", Resource: "pods", Name: "c", Object: pod("c", "1")},
			{ID: "r-5", Resource: "pods", Name: "d", Object: pod("e", "1")},
		}}),
		record(4, ledger.Event{Type: ledger.Expire, Namespace: "team-a", Reservation: "r-2"}),
		// One event releasing several: r-1, and r-2 again (released
		// already, so nothing changes for it).
		record(5, ledger.Event{Type: ledger.Expire, Namespace: "team-a", Expired: []string{"r-2", "r-1"}}),
	)
	p := openTemp(t)
	applyAll(t, p, records[:2], 10)
	explain := func() string {
		t.Helper()
		e, err := p.Explain("team-a", "compute")
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteExplain(&buf, e); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	if got := explain(); !strings.Contains(got, "pods: used 2 of 10") || !strings.Contains(got, "requests.cpu: used 750m of 4") {
		t.Fatalf("after two reservations and a repeat:\n%s", got)
	}
	applyAll(t, p, records[2:3], 10)
	if got := explain(); !strings.Contains(got, "pods: used 2 of 10") {
		t.Fatalf("a bad reservation changed usage:\n%s", got)
	}
	if skipped := p.skippedSeqs(t); len(skipped) != 1 || skipped[0] != 3 {
		t.Fatalf("skipped = %v, want [3]", skipped)
	}
	applyAll(t, p, records[3:4], 10)
	got := explain()
	if !strings.Contains(got, "pods: used 1 of 10") || !strings.Contains(got, "requests.cpu: used 250m of 4") || !strings.Contains(got, "reserved (r-1,") {
		t.Fatalf("after expiring r-2:\n%s", got)
	}
	checkConsistent(t, p)
	applyAll(t, p, records[4:], 10)
	if got := explain(); !strings.Contains(got, "pods: used 0 of 10") || !strings.Contains(got, "requests.cpu: used 0 of 4") {
		t.Fatalf("after expiring r-2 and r-1 in one event:\n%s", got)
	}
	if skipped := p.skippedSeqs(t); len(skipped) != 1 {
		t.Fatalf("skipped = %v, want only [3]", skipped)
	}
	checkConsistent(t, p)
}

// TestReserveMatchesTheFold checks that NamespaceState's Reserve on a
// Clone, which admission uses to see its own reservations before the
// projection applies them, adds exactly what the fold adds, print format
// included, over charges of every format on several quotas, and leaves the
// state cloned alone.
func TestReserveMatchesTheFold(t *testing.T) {
	quotaObj := func(name, hard string) json.RawMessage {
		return json.RawMessage(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"` + name + `","namespace":"team-a"},"spec":{"hard":` + hard + `}}`)
	}
	pod := func(name, cpu, memory, class string) json.RawMessage {
		return json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"team-a"},` +
			`"spec":{"priorityClassName":"` + class + `","containers":[{"name":"app","resources":{"requests":{"cpu":"` + cpu + `","memory":"` + memory + `"},"limits":{"cpu":"` + cpu + `","memory":"` + memory + `"}}}]}}`)
	}
	var records []ledger.Record
	add := teamARecorder(&records, time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	add(ledger.Event{Type: ledger.Upsert, Resource: "resourcequotas", Namespace: "team-a", Name: "compute",
		Object: quotaObj("compute", `{"requests.cpu":"100","requests.memory":"1Ti","limits.cpu":"100","pods":"1k"}`)})
	add(ledger.Event{Type: ledger.Upsert, Resource: "resourcequotas", Namespace: "team-a", Name: "counts", Object: quotaObj("counts", `{"count/pods":"50"}`)})
	add(ledger.Event{Type: ledger.Upsert, Resource: "resourcequotas", Namespace: "team-a", Name: "high",
		Object: json.RawMessage(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"high","namespace":"team-a"},"spec":{"hard":{"requests.memory":"10G"},"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"In","values":["high"]}]}}}`)})
	add(ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "team-a", Name: "running", Object: pod("running", "1500m", "1000Mi", "high")})
	p := openTemp(t)
	applyAll(t, p, records, 10)
	if skipped := p.skippedSeqs(t); len(skipped) > 0 {
		t.Fatalf("skipped %v", skipped)
	}
	st, err := p.Namespace("team-a")
	if err != nil {
		t.Fatal(err)
	}
	start := usedStrings(st)
	owned := st.Clone()
	charges := []struct{ cpu, memory, class string }{
		{"250m", "128Mi", ""}, {"1", "1G", "high"}, {"0.5", "100M", "high"}, {"2", "512Ki", ""},
		{"1e-3", "1Gi", "high"}, {"3", "2e9", ""}, {"100m", "1.5Gi", "high"},
	}
	for i, c := range charges {
		name := "new-" + string(rune('a'+i))
		obj := pod(name, c.cpu, c.memory, c.class)
		add(ledger.Event{Type: ledger.Reserve, Namespace: "team-a", ReservationTTL: time.Minute,
			Reservations: []ledger.Reservation{{ID: "r-" + name, Resource: "pods", Name: name, Object: obj}}})
		rec := &records[len(records)-1]
		applyAll(t, p, records[len(records)-1:], 1)
		e := evaluateRecord(rec)
		if e[0].err != nil {
			t.Fatal(e[0].err)
		}
		owned.Reserve(e[0].charge)
		folded, err := p.Namespace("team-a")
		if err != nil {
			t.Fatal(err)
		}
		for q := range folded.Quotas {
			want := usedString(folded.Quotas[q].Used)
			if got := usedString(owned.Quotas[q].Used); got != want {
				t.Fatalf("after reserving %s (%s, %s): quota %s: Reserve gives %s, the fold %s", name, c.cpu, c.memory, folded.Quotas[q].Quota.Name, got, want)
			}
		}
	}
	if got := usedStrings(st); !slices.Equal(got, start) {
		t.Fatalf("the state read before the reservations changed: %v, was %v", got, start)
	}
	checkConsistent(t, p)
}

// usedStrings is usedString of each of st's quotas.
func usedStrings(st *NamespaceState) []string {
	var out []string
	for _, q := range st.Quotas {
		out = append(out, usedString(q.Used))
	}
	return out
}

func usedString(l map[string]quantity.Quantity) string {
	var parts []string
	for name, q := range l {
		parts = append(parts, name+"="+q.String())
	}
	sortStrings(parts)
	return strings.Join(parts, ",")
}

// TestExpiredReservationsReadsTheExpiryIndex checks that expired
// reservations come soonest first from the expiry index, that confirmed,
// expired and replaced reservations leave it, and that a schema 1 file,
// which had no index, gets one when opened.
func TestExpiredReservationsReadsTheExpiryIndex(t *testing.T) {
	pod := func(name string) json.RawMessage {
		return json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"team-a"},"spec":{"containers":[{"name":"app"}]}}`)
	}
	at := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	var records []ledger.Record
	add := teamARecorder(&records, at)
	// Expiries: a at +1s+30s, b at +2s+10s, c at +3s+20s, d at +4s+5s.
	for _, r := range []struct {
		name string
		ttl  time.Duration
	}{{"a", 30 * time.Second}, {"b", 10 * time.Second}, {"c", 20 * time.Second}, {"d", 5 * time.Second}} {
		add(ledger.Event{Type: ledger.Reserve, Resource: "pods", Namespace: "team-a", Name: r.name, Object: pod(r.name), Reservation: "r-" + r.name, ReservationTTL: r.ttl})
	}
	add(ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "team-a", Name: "c", Object: pod("c")}) // confirms c
	add(ledger.Event{Type: ledger.Expire, Namespace: "team-a", Reservation: "r-d"})
	dir := t.TempDir()
	path := dir + "/projection.db"
	p, err := Open(Config{Path: path, NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	applyAll(t, p, records, 2)
	ids := func(p *Projector, now time.Time) string {
		t.Helper()
		expired, err := p.ExpiredReservations(now, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range expired {
			out = append(out, e.ID+"@"+e.Namespace+"/"+e.Resource+"/"+e.Name)
		}
		return strings.Join(out, " ")
	}
	if got, want := ids(p, at.Add(time.Hour)), "r-b@team-a/pods/b r-a@team-a/pods/a"; got != want {
		t.Errorf("expired an hour later: %q, want %q", got, want)
	}
	if got, want := ids(p, at.Add(12*time.Second)), ""; got != want {
		t.Errorf("expired at +12s: %q, want none (b expires at +12s, not before)", got)
	}
	if got, want := ids(p, at.Add(12*time.Second+1)), "r-b@team-a/pods/b"; got != want {
		t.Errorf("expired just after +12s: %q, want %q", got, want)
	}
	checkConsistent(t, p)
	p.Close()
}

// teamARecorder returns a function that appends an event of namespace
// team-a to records as the next record, one second after the previous
// one, the first a second after at.
func teamARecorder(records *[]ledger.Record, at time.Time) func(ledger.Event) {
	return func(ev ledger.Event) {
		ev.Version = ledger.EncodingVersion
		seq := uint64(len(*records) + 1)
		*records = append(*records, ledger.Record{Seq: seq, Subject: ledger.Subject("team-a"), Namespace: "team-a", Time: at.Add(time.Duration(seq) * time.Second), Event: ev})
	}
}

// TestFoldUpdateHolds follows an update's reservation (a hold) through
// the fold: it charges the growth, or, for a quota the update brings the
// object into, the object's whole charge; two holds of one object charge
// the larger; the object's own event releases the holds its charge covers
// and no other; expiry and deletion release them. At each reservation
// NamespaceState.Hold on a Clone gives what the fold gives, and
// the state comes out the same applied in batches of any size.
func TestFoldUpdateHolds(t *testing.T) {
	quotaObj := func(name, spec string) json.RawMessage {
		return json.RawMessage(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"` + name + `","namespace":"team-a"},"spec":` + spec + `}`)
	}
	pvc := func(name, size, class string) json.RawMessage {
		return json.RawMessage(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"` + name + `","namespace":"team-a","resourceVersion":"7"},` +
			`"spec":{"accessModes":["ReadWriteOnce"],"volumeAttributesClassName":"` + class + `","resources":{"requests":{"storage":"` + size + `"}}}}`)
	}
	var records []ledger.Record
	at := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	add := teamARecorder(&records, at)
	update := func(id, name, size, class string) {
		add(ledger.Event{Type: ledger.Reserve, Namespace: "team-a", ReservationTTL: time.Minute,
			Reservations: []ledger.Reservation{{ID: id, Resource: "persistentvolumeclaims", Name: name, Object: pvc(name, size, class), Operation: ledger.HoldOperation}}})
	}
	upsert := func(name, size, class string) {
		add(ledger.Event{Type: ledger.Upsert, Resource: "persistentvolumeclaims", Namespace: "team-a", Name: name, Object: pvc(name, size, class)})
	}
	add(ledger.Event{Type: ledger.Upsert, Resource: "resourcequotas", Namespace: "team-a", Name: "storage",
		Object: quotaObj("storage", `{"hard":{"requests.storage":"100Gi","persistentvolumeclaims":"10"}}`)})
	add(ledger.Event{Type: ledger.Upsert, Resource: "resourcequotas", Namespace: "team-a", Name: "gold",
		Object: quotaObj("gold", `{"hard":{"requests.storage":"10Gi"},"scopeSelector":{"matchExpressions":[{"scopeName":"VolumeAttributesClass","operator":"In","values":["gold"]}]}}`)})
	upsert("db", "4Gi", "silver")
	upsert("logs", "1Gi", "silver")
	steps := []struct {
		what string
		do   func()
		// storage and gold are the quotas' requests.storage after the step.
		storage, gold string
		// held are the update holds left, "object:id".
		held string
	}{
		{"an update grows db to 8Gi", func() { update("u1", "db", "8Gi", "silver") }, "9Gi", "0", "db:u1"},
		{"an update moves db to gold at 6Gi: the larger of the two holds in storage, all of it in gold", func() { update("u2", "db", "6Gi", "gold") }, "9Gi", "6Gi", "db:u1 db:u2"},
		{"the same request again holds nothing more", func() { update("u2", "db", "6Gi", "gold") }, "9Gi", "6Gi", "db:u1 db:u2"},
		{"an update to the size logs has holds nothing", func() { update("u3", "logs", "1Gi", "silver") }, "9Gi", "6Gi", "db:u1 db:u2"},
		{"an update of a claim the projection lacks holds nothing", func() { update("u4", "ghost", "50Gi", "silver") }, "9Gi", "6Gi", "db:u1 db:u2"},
		{"status churn of db covers neither hold", func() { upsert("db", "4Gi", "silver") }, "9Gi", "6Gi", "db:u1 db:u2"},
		{"db reported at 8Gi covers u1 only", func() { upsert("db", "8Gi", "silver") }, "9Gi", "6Gi", "db:u2"},
		{"u2 expires", func() { add(ledger.Event{Type: ledger.Expire, Namespace: "team-a", Reservation: "u2"}) }, "9Gi", "0", ""},
		{"an update grows logs to 3Gi", func() { update("u5", "logs", "3Gi", "silver") }, "11Gi", "0", "logs:u5"},
		{"two updates of logs in one event charge the larger", func() {
			add(ledger.Event{Type: ledger.Reserve, Namespace: "team-a", ReservationTTL: time.Minute, Reservations: []ledger.Reservation{
				{ID: "u6", Resource: "persistentvolumeclaims", Name: "logs", Object: pvc("logs", "5Gi", "silver"), Operation: ledger.HoldOperation},
				{ID: "u7", Resource: "persistentvolumeclaims", Name: "logs", Object: pvc("logs", "4Gi", "gold"), Operation: ledger.HoldOperation},
			}})
		}, "13Gi", "4Gi", "logs:u5 logs:u6 logs:u7"},
		{"logs is deleted with its holds", func() {
			add(ledger.Event{Type: ledger.Delete, Resource: "persistentvolumeclaims", Namespace: "team-a", Name: "logs"})
		}, "8Gi", "0", ""},
	}
	p := openTemp(t)
	applyAll(t, p, records, 10)
	for _, s := range steps {
		n := len(records)
		s.do()
		rec := &records[n]
		var owned *NamespaceState
		var reserved bool
		before, err := p.Namespace("team-a")
		if err != nil {
			t.Fatal(err)
		}
		if rec.Event.Type == ledger.Reserve {
			// What admission's view would charge, read before the fold.
			owned = before.Clone()
			h, err := p.Objects()
			if err != nil {
				t.Fatal(err)
			}
			// Several updates in one event are decided one after the
			// other, each on the object as the previous one leaves it.
			chained := map[string]Stored{}
			for i, r := range rec.Event.Reservations {
				held, ok := chained[r.Name]
				if !ok {
					if held, err = h.ForUpdate("team-a", r.Resource, r.Name); err != nil {
						t.Fatal(err)
					}
				}
				if h.Reserved(r.ID) {
					continue
				}
				var added bool
				chained[r.Name], added = owned.Hold(held, evaluateRecord(rec)[i].charge)
				reserved = reserved || added
			}
			h.Close()
		}
		applyAll(t, p, records[n:], 1)
		if skipped := p.skippedSeqs(t); len(skipped) > 0 {
			t.Fatalf("%s: skipped %v", s.what, skipped)
		}
		st, err := p.Namespace("team-a")
		if err != nil {
			t.Fatal(err)
		}
		used := map[string]string{}
		for _, q := range st.Quotas {
			used[q.Quota.Name] = q.Used["requests.storage"].String()
		}
		if used["storage"] != s.storage || used["gold"] != s.gold {
			t.Errorf("%s: storage %s, gold %s; want %s, %s", s.what, used["storage"], used["gold"], s.storage, s.gold)
		}
		if owned != nil {
			if got, want := usedStrings(owned), usedStrings(st); !slices.Equal(got, want) {
				t.Errorf("%s: Hold gives %v, the fold %v", s.what, got, want)
			}
			if !reserved && !slices.Equal(usedStrings(st), usedStrings(before)) {
				t.Errorf("%s: the fold charged a hold Hold said it would not apply", s.what)
			}
		}
		if got := heldString(t, p); got != s.held {
			t.Errorf("%s: holds %q, want %q", s.what, got, s.held)
		}
		if s.held == "db:u1" {
			// explain names the hold behind db's figure.
			e, err := p.Explain("team-a", "storage")
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := WriteExplain(&buf, e); err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`persistentvolumeclaims/db +8Gi +[0-9]+ +update reserved \(u1, expires 2026-11-22T06:01:`).MatchString(buf.String()) {
				t.Errorf("%s: explain does not show db's hold:\n%s", s.what, buf.String())
			}
		}
		checkConsistent(t, p)
	}
	e, err := p.ExpiredReservations(at.Add(time.Hour), 10)
	if err != nil || len(e) != 0 {
		t.Fatalf("expired reservations left: %v %v", e, err)
	}
	// The same records in other batch sizes give the same file.
	want := dump(t, p)
	for _, batch := range []int{1, 3, 100} {
		q := openTemp(t)
		applyAll(t, q, records, batch)
		if got := dump(t, q); got != want {
			t.Errorf("batches of %d give another state:\n%s\nwant\n%s", batch, got, want)
		}
	}
}

// heldString lists team-a's update holds as "object:id", in key order.
func heldString(t *testing.T, p *Projector) string {
	t.Helper()
	var out []string
	err := p.read(func(tx *buckets.Set) error {
		return forEachObject(tx, "team-a", func(r *objectRecord) error {
			for _, h := range r.Holds {
				out = append(out, r.Name+":"+h.ID)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

// TestFoldConfirmsPlaceholderReservations checks that a create reserved
// under a placeholder (offered with a generateName and no name) is
// confirmed by the ADDED event of a new object with that generateName and
// a generated name, the first placeholder by id when there are several,
// and by nothing else: not an object of another generateName, not one
// whose name does not start with it, not an update of an existing object.
func TestFoldConfirmsPlaceholderReservations(t *testing.T) {
	pod := func(name, generateName, cpu string) json.RawMessage {
		gen := ""
		if generateName != "" {
			gen = `"generateName":"` + generateName + `",`
		}
		return json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{` + gen + `"name":"` + name + `","namespace":"team-a"},` +
			`"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"` + cpu + `"}}}]}}`)
	}
	var records []ledger.Record
	add := teamARecorder(&records, time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC))
	add(ledger.Event{Type: ledger.Upsert, Resource: "resourcequotas", Namespace: "team-a", Name: "compute",
		Object: json.RawMessage(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"compute","namespace":"team-a"},"spec":{"hard":{"requests.cpu":"10","pods":"10"}}}`)})
	reserve := func(id, generateName, cpu string) {
		name := PlaceholderName(generateName, id)
		add(ledger.Event{Type: ledger.Reserve, Namespace: "team-a", ReservationTTL: time.Minute,
			Reservations: []ledger.Reservation{{ID: id, Resource: "pods", Name: name, Object: pod(name, generateName, cpu)}}})
	}
	upsert := func(name, generateName, cpu string) {
		add(ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "team-a", Name: name, Object: pod(name, generateName, cpu)})
	}
	steps := []struct {
		what string
		do   func()
		// pods and cpu are the quota's usage after the step; left the
		// placeholders still reserved.
		pods, cpu, left string
	}{
		{"two creates of web- and one of job- reserved", func() {
			reserve("r2", "web-", "200m")
			reserve("r1", "web-", "100m")
			reserve("r3", "job-", "1")
		}, "3", "1300m", "job-reserved-r3 web-reserved-r1 web-reserved-r2"},
		{"an object of another generateName confirms none of them", func() { upsert("db-k2x9q", "db-", "1") }, "4", "2300m", "job-reserved-r3 web-reserved-r1 web-reserved-r2"},
		{"a name that does not start with its generateName confirms none", func() { upsert("other", "web-", "1") }, "5", "3300m", "job-reserved-r3 web-reserved-r1 web-reserved-r2"},
		{"web-7f2kq confirms r1, the first by id", func() { upsert("web-7f2kq", "web-", "100m") }, "5", "3300m", "job-reserved-r3 web-reserved-r2"},
		{"an update of web-7f2kq confirms nothing more", func() { upsert("web-7f2kq", "web-", "150m") }, "5", "3350m", "job-reserved-r3 web-reserved-r2"},
		{"web-p8d3z confirms r2", func() { upsert("web-p8d3z", "web-", "200m") }, "5", "3350m", "job-reserved-r3"},
		{"a third web- pod has nothing left to confirm", func() { upsert("web-zz9k1", "web-", "200m") }, "6", "3550m", "job-reserved-r3"},
	}
	p := openTemp(t)
	applyAll(t, p, records, 10)
	for _, s := range steps {
		n := len(records)
		s.do()
		applyAll(t, p, records[n:], 2)
		if skipped := p.skippedSeqs(t); len(skipped) > 0 {
			t.Fatalf("%s: skipped %v", s.what, skipped)
		}
		st, err := p.Namespace("team-a")
		if err != nil {
			t.Fatal(err)
		}
		used := st.Quotas[0].Used
		if got := used["pods"].String() + " " + used["requests.cpu"].String(); got != s.pods+" "+s.cpu {
			t.Errorf("%s: used pods, requests.cpu = %s, want %s %s", s.what, got, s.pods, s.cpu)
		}
		var left []string
		err = p.read(func(tx *buckets.Set) error {
			return forEachObject(tx, "team-a", func(r *objectRecord) error {
				if r.Reservation != "" {
					left = append(left, r.Name)
				}
				// A reservation's record keeps no object (the log has
				// it); a reported object's keeps it.
				if reserved, kept := r.Reservation != "", len(r.Object) > 0; reserved == kept {
					t.Errorf("%s: %s/%s reserved %v, object kept %v", s.what, r.Resource, r.Name, reserved, kept)
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(left, " "); got != s.left {
			t.Errorf("%s: reserved %q, want %q", s.what, got, s.left)
		}
		checkConsistent(t, p)
	}
}
