package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/quotaledger/quota/ledger/object"
)

// item is one object as the exporter holds it: its identity and its
// trimmed JSON, the form ingest appends. Nothing holds an object untrimmed
// beyond the decoding of one response page or watch event.
type item struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	// trimmed is the object trimmed to what the ledger reads, with its
	// resourceVersion (which names its message ID); or, for an object
	// the ledger cannot decode, the object as it came, for ingest to
	// reject into the dead-letter stream with its reason.
	trimmed []byte
	// written is the object's latest write the API server recorded (its
	// managedFields' times and its creation), for the lag
	// metric; zero when it records none.
	written time.Time
}

func (i *item) DeepCopyObject() runtime.Object {
	c := *i
	i.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.trimmed = bytes.Clone(i.trimmed)
	return &c
}

// itemList is a list of items, as the Reflector reads a list response.
type itemList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []item
}

func (l *itemList) DeepCopyObject() runtime.Object {
	c := &itemList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	c.Items = make([]item, len(l.Items))
	for i := range l.Items {
		c.Items[i] = *l.Items[i].DeepCopyObject().(*item)
	}
	return c
}

// trim turns one object of the API server (raw JSON, with or without its
// apiVersion and kind, perhaps a PartialObjectMetadata) into an item of
// kind apiVersion/kind.
func trim(raw []byte, apiVersion, kind string) (*item, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("decode %s: %w", kind, err)
	}
	var meta metav1.ObjectMeta
	if err := json.Unmarshal(fields["metadata"], &meta); err != nil {
		return nil, fmt.Errorf("decode %s metadata: %w", kind, err)
	}
	fields["apiVersion"], _ = json.Marshal(apiVersion)
	fields["kind"], _ = json.Marshal(kind)
	full, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	it := &item{ObjectMeta: metav1.ObjectMeta{Name: meta.Name, Namespace: meta.Namespace, UID: meta.UID, ResourceVersion: meta.ResourceVersion}, written: lastWrite(&meta)}
	o, err := object.Decode(full)
	if err != nil {
		// Ingest rejects it again, with this reason, into the dead-letter
		// stream: the exporter drops nothing itself.
		it.trimmed = full
		return it, nil
	}
	trimmed, err := o.Trimmed()
	if err != nil {
		it.trimmed = full
		return it, nil
	}
	it.trimmed = object.WithResourceVersion(trimmed, meta.ResourceVersion)
	return it, nil
}

// lastWrite is the latest time meta records a write of its object at.
func lastWrite(meta metav1.Object) time.Time {
	// Not the deletionTimestamp: it is the end of the grace period, in
	// the future when the deletion is asked.
	latest := meta.GetCreationTimestamp().Time
	for _, f := range meta.GetManagedFields() {
		if f.Time != nil && f.Time.After(latest) {
			latest = f.Time.Time
		}
	}
	return latest
}
