package projector

import (
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
	list := &corev1.ResourceQuotaList{
		TypeMeta: metav1.TypeMeta{Kind: "ResourceQuotaList", APIVersion: "v1"},
		Items:    []corev1.ResourceQuota{},
	}
	err := p.read(func(tx *buckets.Set) error {
		list.ResourceVersion = strconv.FormatUint(appliedSeq(tx), 10)
		return forEachQuota(tx, namespace, all, func(r *quotaRecord) error {
			if name != "" && r.Name != name {
				return nil
			}
			item, err := r.kubernetesObject()
			if err != nil {
				return err
			}
			list.Items = append(list.Items, *item)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if name != "" && len(list.Items) == 0 {
		return nil, fmt.Errorf("%w: %s/%s", ErrQuotaNotFound, namespace, name)
	}
	return list, nil
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
