package projector

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/quotaledger/quota/projector/buckets"

	"github.com/quotaledger/quota/ledger/quantity"
)

// Explanation says, for each quota of a namespace and each resource it
// limits, which objects make up Used and what each is charged.
type Explanation struct {
	Namespace string `json:"namespace"`
	// Applied is the stream sequence the explanation reflects.
	Applied uint64             `json:"applied"`
	Quotas  []QuotaExplanation `json:"quotas"`
}

// QuotaExplanation is one quota's part of an Explanation.
type QuotaExplanation struct {
	Name string `json:"name"`
	// Invalid is Kubernetes' validation message for a quota that charges
	// nothing; Resources is then empty.
	Invalid   string                `json:"invalid,omitempty"`
	Resources []ResourceExplanation `json:"resources"`
}

// ResourceExplanation lists the charges that sum to one resource's Used.
type ResourceExplanation struct {
	Resource string `json:"resource"`
	Used     string `json:"used"`
	Hard     string `json:"hard"`
	// Charges are the non-zero charges, largest first, ties by object.
	// They sum to Used.
	Charges []ObjectCharge `json:"charges"`
}

// ObjectCharge is what one object adds to one quota resource.
type ObjectCharge struct {
	// Object is "resource/name", e.g. "pods/web-1".
	Object string `json:"object"`
	Charge string `json:"charge"`
	// Seq is the stream sequence of the event that set the object's state.
	Seq uint64 `json:"seq"`
	// Reservation is set when the charge is an admission's reservation:
	// for an object the cluster has not reported yet, or, with Update, for
	// an update of the object not reported yet (the charge is then the
	// updated object's).
	Reservation string    `json:"reservation,omitempty"`
	ExpiresAt   time.Time `json:"expiresAt,omitzero"`
	Update      bool      `json:"update,omitempty"`
	// ByFeed says the reservation ends on the feed's progress: it is held
	// until the feed of its resource has passed ExpiresAt.
	ByFeed bool `json:"byFeed,omitempty"`

	amount quantity.Quantity
}

// Explain returns the explanation of namespace's quotas (only the one
// called name, when name is set).
func (p *Projector) Explain(namespace, name string) (*Explanation, error) {
	var e *Explanation
	err := p.read(func(tx *buckets.Set) error {
		var err error
		e, err = ExplainTx(tx, namespace, name)
		return err
	})
	return e, err
}

// ExplainTx reads an explanation from a projection transaction; see
// Explain.
func ExplainTx(tx *buckets.Set, namespace, name string) (*Explanation, error) {
	e := &Explanation{Namespace: namespace, Applied: appliedSeq(tx), Quotas: []QuotaExplanation{}}
	var records []*quotaRecord
	err := forEachQuota(tx, namespace, false, func(r *quotaRecord) error {
		if name == "" || r.Name == name {
			records = append(records, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if name != "" && len(records) == 0 {
		return nil, fmt.Errorf("%w: %s/%s", ErrQuotaNotFound, namespace, name)
	}
	for _, r := range records {
		qe, err := explainQuota(tx, namespace, r)
		if err != nil {
			return nil, err
		}
		e.Quotas = append(e.Quotas, qe)
	}
	return e, nil
}

// explainQuota lists, per resource of quota record r, the objects of
// namespace that r charges, the largest charge first.
func explainQuota(tx *buckets.Set, namespace string, r *quotaRecord) (QuotaExplanation, error) {
	qe := QuotaExplanation{Name: r.Name, Invalid: r.Invalid, Resources: []ResourceExplanation{}}
	q := r.parsed
	if q == nil {
		return qe, nil
	}
	byResource := map[string]*ResourceExplanation{}
	for res, hard := range q.Hard {
		byResource[res] = &ResourceExplanation{Resource: res, Used: r.Used[res].String(), Hard: hard.String(), Charges: []ObjectCharge{}}
	}
	by := map[string]*hold{}
	err := forEachObject(tx, namespace, func(o *objectRecord) error {
		clear(by)
		for res, v := range part(q, o, by) {
			re := byResource[res]
			if re == nil || v.IsZero() {
				continue
			}
			c := ObjectCharge{
				Object: o.Resource + "/" + o.Name, Charge: v.String(), Seq: o.Seq,
				Reservation: o.Reservation, ExpiresAt: o.ExpiresAt, amount: v,
			}
			if h := by[res]; h != nil {
				c.Reservation, c.ExpiresAt, c.Update = h.ID, h.ExpiresAt, true
			}
			if c.Reservation != "" {
				c.ByFeed = tx.Bucket(bucketFeedExpiry).Get(feedExpiryKey(o.Resource, c.ExpiresAt, c.Reservation)) != nil
			}
			re.Charges = append(re.Charges, c)
		}
		return nil
	})
	if err != nil {
		return qe, err
	}
	for _, res := range slices.Sorted(maps.Keys(byResource)) {
		re := byResource[res]
		slices.SortStableFunc(re.Charges, func(a, b ObjectCharge) int {
			return cmp.Or(b.amount.Cmp(a.amount), cmp.Compare(a.Object, b.Object))
		})
		qe.Resources = append(qe.Resources, *re)
	}
	return qe, nil
}

// WriteExplain prints an explanation as text: per quota a header as
// describe prints it, then per resource its objects and charges, largest
// first, reservations marked.
func WriteExplain(w io.Writer, e *Explanation) error {
	var buf bytes.Buffer
	for i, q := range e.Quotas {
		if i > 0 {
			buf.WriteString("\n")
		}
		tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
		fmt.Fprintf(tw, "Name:\t%s\n", q.Name)
		fmt.Fprintf(tw, "Namespace:\t%s\n", e.Namespace)
		if q.Invalid != "" {
			fmt.Fprintf(tw, "Invalid:\t%s\n", q.Invalid)
		}
		tw.Flush()
		for _, r := range q.Resources {
			fmt.Fprintf(&buf, "\n%s: used %s of %s\n", r.Resource, r.Used, r.Hard)
			if len(r.Charges) == 0 {
				buf.WriteString("  (no object is charged)\n")
				continue
			}
			tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
			fmt.Fprintf(tw, "  OBJECT\tCHARGE\tSEQ\tNOTE\n")
			for _, c := range r.Charges {
				note := ""
				if c.Reservation != "" {
					ends := "expires"
					if c.ByFeed {
						ends = "held until the feed passes"
					}
					note = fmt.Sprintf("reserved (%s, %s %s)", c.Reservation, ends, c.ExpiresAt.UTC().Format(time.RFC3339))
					if c.Update {
						note = "update " + note
					}
				}
				fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\n", c.Object, c.Charge, c.Seq, note)
			}
			tw.Flush()
		}
	}
	out := buf.String()
	for strings.Contains(out, " \n") {
		out = strings.ReplaceAll(out, " \n", "\n")
	}
	_, err := io.WriteString(w, out)
	return err
}
