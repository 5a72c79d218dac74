package export

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/quotaledger/quota/ledger/object"
)

// Reading as protobuf.
//
// The API server's watch cache encodes each event once per format its
// watchers ask for, and its own clients (the kubelet, the scheduler, the
// controllers) read protobuf: a watcher reading JSON makes it encode every
// event of the resource a second time, in the costlier format. So the
// exporter reads the built-in kinds it reads whole as protobuf, decoded
// into their k8s.io/api types and trimmed from those, and the built-in
// kinds it only counts as protobuf PartialObjectMetadata. Custom resources
// and the kinds of aggregated APIs, which may have no protobuf, are read
// as JSON. Each request also accepts JSON, which the API server answers
// with where it has no protobuf for the kind; the decoders read either.

// Formats a resource is read in.
const (
	// readJSON: raw JSON, trimmed from its bytes (trim).
	readJSON = iota
	// readTyped: protobuf (or JSON) decoded into the kind's k8s.io/api
	// type, whose fields the ledger reads (protobufKinds).
	readTyped
	// readMetadata: protobuf (or JSON) PartialObjectMetadata of a
	// built-in kind.
	readMetadata
)

// protobufKinds are the kinds read whole as typed values, in the one
// version whose k8s.io/api type the ledger trims from; true when the
// ledger keeps the typed value (ledger/object decodes the kind into that
// type), false when it keeps the identity only. Another version of these
// kinds is read as JSON, as ledger/object reads it.
var protobufKinds = map[schema.GroupVersionKind]bool{
	{Version: "v1", Kind: "Pod"}:                                       true,
	{Version: "v1", Kind: "PersistentVolumeClaim"}:                     true,
	{Version: "v1", Kind: "Service"}:                                   true,
	{Version: "v1", Kind: "ResourceQuota"}:                             true,
	{Version: "v1", Kind: "LimitRange"}:                                true,
	{Group: "resource.k8s.io", Version: "v1", Kind: "ResourceClaim"}:   true,
	{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass"}:     true,
	{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass"}: true,
	{Group: "node.k8s.io", Version: "v1", Kind: "RuntimeClass"}:        true,
	{Group: "resource.k8s.io", Version: "v1", Kind: "DeviceClass"}:     false,
}

// AcceptProtobuf is what the exporter's typed client accepts: protobuf,
// and JSON where the API server has no protobuf for a kind.
const AcceptProtobuf = "application/vnd.kubernetes.protobuf,application/json"

// format is how r is read.
func (r resource) format() int {
	gvk := r.GVR.GroupVersion().WithKind(r.Kind)
	if r.MetadataOnly {
		// client-go's scheme holds the kinds kube-apiserver serves
		// itself; a custom resource or an aggregated API's kind is not
		// in it.
		if scheme.Scheme.Recognizes(gvk) {
			return readMetadata
		}
		return readJSON
	}
	if _, ok := protobufKinds[gvk]; ok {
		return readTyped
	}
	return readJSON
}

// trimTyped turns a typed object of the API server (a k8s.io/api value
// or a PartialObjectMetadata) into an item of kind apiVersion/kind,
// trimmed to the bytes trim makes of the same object's JSON.
func trimTyped(obj runtime.Object, apiVersion, kind string) (*item, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("read the metadata of %s: %w", kind, err)
	}
	it := &item{
		ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion()},
		written:    lastWrite(m),
	}
	o := &object.Object{
		APIVersion: apiVersion, Kind: kind,
		Name: m.GetName(), GenerateName: m.GetGenerateName(), Namespace: m.GetNamespace(),
		UID: string(m.GetUID()), ResourceVersion: m.GetResourceVersion(),
		DeletionGracePeriodSeconds: m.GetDeletionGracePeriodSeconds(),
	}
	if ts := m.GetDeletionTimestamp(); ts != nil {
		t := ts.Time.UTC()
		o.DeletionTimestamp = &t
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("trim %s: apiVersion %q: %w", kind, apiVersion, err)
	}
	if _, partial := obj.(*metav1.PartialObjectMetadata); !partial && protobufKinds[gv.WithKind(kind)] {
		o.Value = obj
	}
	var trimmed []byte
	if o.Name != "" || o.GenerateName != "" {
		trimmed, err = o.Trimmed()
	}
	if trimmed == nil || err != nil {
		// What ledger/object would refuse to read: ingest rejects the
		// object as it came, with its reason, into the dead-letter
		// stream. The exporter drops nothing itself.
		return it, asJSON(obj, apiVersion, kind, it)
	}
	it.trimmed = object.WithResourceVersion(trimmed, m.GetResourceVersion())
	return it, nil
}

// asJSON sets it.trimmed to obj's JSON, of kind apiVersion/kind.
func asJSON(obj runtime.Object, apiVersion, kind string, it *item) error {
	raw, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encode %s %s/%s: %w", kind, it.Namespace, it.Name, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return fmt.Errorf("encode %s %s/%s: %w", kind, it.Namespace, it.Name, err)
	}
	fields["apiVersion"], _ = json.Marshal(apiVersion)
	fields["kind"], _ = json.Marshal(kind)
	it.trimmed, err = json.Marshal(fields)
	return err
}

// typedWatch turns the events of a watch of typed objects into events of
// items, and reports a watch's error to the stream, as rawWatch does for
// a JSON watch.
type typedWatch struct {
	lw       *listWatch
	in       watch.Interface
	result   chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func newTypedWatch(lw *listWatch, in watch.Interface) *typedWatch {
	w := &typedWatch{lw: lw, in: in, result: make(chan watch.Event), stop: make(chan struct{})}
	go w.run()
	return w
}

func (w *typedWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.in.Stop()
	})
}

func (w *typedWatch) ResultChan() <-chan watch.Event { return w.result }

func (w *typedWatch) run() {
	defer close(w.result)
	defer w.in.Stop()
	for {
		var in watch.Event
		var ok bool
		select {
		case in, ok = <-w.in.ResultChan():
		case <-w.stop:
			return
		}
		if !ok {
			// A closed connection or a timeout ends the watch; the
			// Reflector watches again from the last resourceVersion.
			return
		}
		ev, err := w.event(in)
		if !w.lw.hand(ev, err, w.result, w.stop) {
			return
		}
	}
}

func (w *typedWatch) event(in watch.Event) (watch.Event, error) {
	switch in.Type {
	case watch.Error:
		status, ok := in.Object.(*metav1.Status)
		if !ok {
			status = &apierrors.FromObject(in.Object).(*apierrors.StatusError).ErrStatus
		}
		return watch.Event{Type: watch.Error, Object: status}, nil
	case watch.Bookmark:
		m, err := meta.Accessor(in.Object)
		if err != nil {
			return watch.Event{}, fmt.Errorf("decode a bookmark of %s: %w", w.lw.res.Name(), err)
		}
		return watch.Event{Type: watch.Bookmark, Object: &item{ObjectMeta: metav1.ObjectMeta{ResourceVersion: m.GetResourceVersion()}}}, nil
	case watch.Added, watch.Modified, watch.Deleted:
		it, err := trimTyped(in.Object, w.lw.res.apiVersion(), w.lw.res.Kind)
		if err != nil {
			return watch.Event{}, err
		}
		return watch.Event{Type: in.Type, Object: it}, nil
	}
	return watch.Event{}, fmt.Errorf("watch of %s: unknown event type %q", w.lw.res.Name(), in.Type)
}

// listTyped lists one page of a resource read as typed values.
func (lw *listWatch) listTyped(ctx context.Context, opts metav1.ListOptions) (listPage, error) {
	var list runtime.Object
	if lw.res.format() == readMetadata {
		l, err := lw.meta.Resource(lw.res.GVR).List(ctx, opts)
		if err != nil {
			return listPage{}, requestError{err}
		}
		list = l
	} else {
		result := lw.typed.Get().AbsPath(lw.res.path()).VersionedParams(&opts, metav1.ParameterCodec).Do(ctx)
		if err := result.Error(); err != nil {
			return listPage{}, requestError{err}
		}
		l, err := result.Get()
		if err != nil {
			return listPage{}, fmt.Errorf("decode the page: %w", err)
		}
		list = l
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return listPage{}, fmt.Errorf("decode the page: %w", err)
	}
	page := listPage{resourceVersion: lm.GetResourceVersion(), continueToken: lm.GetContinue()}
	err = meta.EachListItem(list, func(o runtime.Object) error {
		it, err := trimTyped(o, lw.res.apiVersion(), lw.res.Kind)
		if err != nil {
			return fmt.Errorf("item %d: %w", len(page.items), err)
		}
		page.items = append(page.items, *it)
		return nil
	})
	return page, err
}

// watchTyped watches a resource read as typed values.
func (lw *listWatch) watchTyped(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	var (
		in  watch.Interface
		err error
	)
	if lw.res.format() == readMetadata {
		in, err = lw.meta.Resource(lw.res.GVR).Watch(ctx, opts)
	} else {
		opts.Watch = true
		in, err = lw.typed.Get().AbsPath(lw.res.path()).VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
	}
	if err != nil {
		return nil, err
	}
	return newTypedWatch(lw, in), nil
}
