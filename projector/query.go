package projector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/quotaledger/quota/projector/buckets"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/quota"
)

// Quotas returns the quotas of one namespace (or of every namespace when
// all is set), optionally only the one called name, as a Kubernetes
// ResourceQuotaList whose status carries the projection's Used.
func (p *Projector) Quotas(namespace, name string, all bool) (*corev1.ResourceQuotaList, error) {
	applied, records, err := p.quotaRecords(namespace, name, all)
	if err != nil {
		return nil, err
	}
	list := quotaList(applied)
	for _, r := range records {
		item, err := r.kubernetesObject()
		if err != nil {
			return nil, err
		}
		list.Items = append(list.Items, *item)
	}
	return list, nil
}

// quotaList is the list Quotas returns, without its items, at the
// applied sequence.
func quotaList(applied uint64) *corev1.ResourceQuotaList {
	return &corev1.ResourceQuotaList{
		TypeMeta: metav1.TypeMeta{Kind: "ResourceQuotaList", APIVersion: "v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(applied, 10)},
		Items:    []corev1.ResourceQuota{},
	}
}

// quotaRecords returns the records Quotas lists, in its order, and the
// sequence the projection had applied when it read them.
func (p *Projector) quotaRecords(namespace, name string, all bool) (applied uint64, records []*quotaRecord, err error) {
	err = p.read(func(tx *buckets.Set) error {
		applied = appliedSeq(tx)
		return forEachQuota(tx, namespace, all, func(r *quotaRecord) error {
			if name == "" || r.Name == name {
				records = append(records, r)
			}
			return nil
		})
	})
	if err != nil {
		return 0, nil, err
	}
	if name != "" && len(records) == 0 {
		return 0, nil, fmt.Errorf("%w: %s/%s", ErrQuotaNotFound, namespace, name)
	}
	return applied, records, nil
}

// quotaReply is the describe reply, QueryReply{List: p.Quotas(...)},
// encoded as json.Marshal encodes it, from each record's encoding
// (quotaRecord.encoded), made once per record.
func (p *Projector) quotaReply(namespace, name string, all bool) ([]byte, error) {
	applied, records, err := p.quotaRecords(namespace, name, all)
	if err != nil {
		return nil, err
	}
	// The list with no items ends in its items' brackets; the items go
	// between them, as json.Marshal would put them.
	b, err := json.Marshal(&QueryReply{List: quotaList(applied)})
	if err != nil {
		return nil, err
	}
	const empty = "[]}}"
	if !bytes.HasSuffix(b, []byte(empty)) {
		return nil, fmt.Errorf("%w: an empty quota list encodes as %s", ErrInvariant, b)
	}
	b = b[:len(b)-len(empty)+1]
	for i, r := range records {
		enc, err := r.encoded()
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, enc...)
	}
	return append(b, empty[1:]...), nil
}

// encoded returns r's Kubernetes object encoded as json.Marshal encodes
// it, made at its first read.
func (r *quotaRecord) encoded() ([]byte, error) {
	encode := func() ([]byte, error) {
		q, err := r.kubernetesObject()
		if err != nil {
			return nil, err
		}
		return json.Marshal(q)
	}
	if r.rendered == nil {
		return encode()
	}
	r.rendered.encodeOnce.Do(func() { r.rendered.enc, r.rendered.encErr = encode() })
	return r.rendered.enc, r.rendered.encErr
}

// kubernetesObject returns the stored record r as the Kubernetes object,
// rendered at its first read. The object's maps and slices are the
// record's: the caller must not change them.
func (r *quotaRecord) kubernetesObject() (*corev1.ResourceQuota, error) {
	if r.rendered == nil {
		return r.resourceQuota()
	}
	r.rendered.once.Do(func() { r.rendered.q, r.rendered.err = r.resourceQuota() })
	return r.rendered.q, r.rendered.err
}

// resourceQuota renders a stored quota as the Kubernetes object: the spec as
// recorded, status.hard as the quota controller last copied it from
// spec.hard, and status.used from the projection.
func (r *quotaRecord) resourceQuota() (*corev1.ResourceQuota, error) {
	var q corev1.ResourceQuota
	if err := json.Unmarshal(r.Object, &q); err != nil {
		return nil, fmt.Errorf("decode stored quota %s/%s: %w", r.Namespace, r.Name, err)
	}
	q.Kind, q.APIVersion = "", ""
	q.Namespace = r.Namespace
	q.Status = corev1.ResourceQuotaStatus{}
	if r.Invalid != "" {
		if q.Annotations == nil {
			q.Annotations = map[string]string{}
		}
		q.Annotations[InvalidAnnotation] = r.Invalid
		return &q, nil
	}
	q.Status.Hard = corev1.ResourceList{}
	for k, v := range q.Spec.Hard {
		q.Status.Hard[k] = v.DeepCopy()
	}
	q.Status.Used = corev1.ResourceList{}
	for k, v := range r.Used {
		// The quota controller writes used only for what it computes; a
		// custom resource's count, which it computes if the cluster
		// serves the resource, is shown once something is counted.
		if tracked, known := quota.UsageTracked(k); !tracked && (known || v.IsZero()) {
			continue
		}
		kq, err := resource.ParseQuantity(v.String())
		if err != nil {
			return nil, fmt.Errorf("%w: quota %s/%s used %s=%q does not parse: %v", ErrInvariant, r.Namespace, r.Name, k, v.String(), err)
		}
		q.Status.Used[corev1.ResourceName(k)] = kq
	}
	return &q, nil
}

// VersionDigests returns, per namespace ("" for the cluster scope), the
// ledger.VersionsDigest of the reported objects of resource the
// projection holds, reservations left out: what an exporter compares a
// fresh list with, to append a resync only where they differ.
func (p *Projector) VersionDigests(resource string) (map[string]string, error) {
	byNamespace := map[string][]ledger.ObjectVersion{}
	err := p.read(func(tx *buckets.Set) error {
		return forEachObjectPrefix(tx, nil, func(r *objectRecord) error {
			if r.Resource == resource && r.Reservation == "" {
				byNamespace[r.Namespace] = append(byNamespace[r.Namespace], ledger.ObjectVersion{Name: r.Name, UID: r.UID, ResourceVersion: r.ResourceVersion})
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(byNamespace))
	for ns, vs := range byNamespace {
		out[ns] = ledger.VersionsDigest(vs)
	}
	return out, nil
}
