package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// Accept headers of a metadata-only read: the API server sends each
// object's metadata alone (a secret's data never leaves the cluster).
const (
	acceptMetadataList = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	acceptMetadata     = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	acceptJSON         = "application/json"
)

// ListPageSize is the number of objects asked for per list request.
const ListPageSize = 500

// resource is one kind the exporter streams.
type resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	// MetadataOnly says only the objects' metadata is read: the kind is
	// only counted.
	MetadataOnly bool
}

// Name is the resource as the ledger and quota's count/<resource> name it:
// "pods", "jobs.batch".
func (r resource) Name() string {
	if r.GVR.Group == "" {
		return r.GVR.Resource
	}
	return r.GVR.Resource + "." + r.GVR.Group
}

func (r resource) apiVersion() string { return r.GVR.GroupVersion().String() }

func (r resource) path() string {
	if r.GVR.Group == "" {
		return "/api/" + r.GVR.Version + "/" + r.GVR.Resource
	}
	return "/apis/" + r.GVR.Group + "/" + r.GVR.Version + "/" + r.GVR.Resource
}

// listWatch lists and watches one resource in every namespace, in the
// format it is read in (protobuf.go), and trims each object as it is
// decoded: a Reflector's ListerWatcher whose objects are items. It
// implements cache.ListerWatcherWithContext.
type listWatch struct {
	// client reads raw JSON; typed reads protobuf into k8s.io/api types;
	// meta reads PartialObjectMetadata.
	client *rest.RESTClient
	typed  *rest.RESTClient
	meta   metadata.Interface
	res    resource
	// events observes what happens to the stream: lists, watches and the
	// errors that end them.
	events listWatchEvents
}

type listWatchEvents interface {
	// listing is called before each list; it returns a resourceVersion to
	// resume from instead of listing, or "".
	listing() (resumeRV string)
	listFailed(err error)
	watching()
	watchError(status *metav1.Status)
}

// IsWatchListSemanticsUnSupported keeps the Reflector to a list followed
// by a watch: every list is followed by a resync, which a streamed
// watch-list would not show.
func (lw *listWatch) IsWatchListSemanticsUnSupported() bool { return true }

func (lw *listWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw *listWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

func (lw *listWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if opts.Continue == "" {
		if rv := lw.events.listing(); rv != "" {
			return &itemList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}, nil
		}
	}
	// Pages of ListPageSize, read as the latest state (a resourceVersion
	// of "0" would let the watch cache answer with everything at once):
	// only one page is held untrimmed.
	opts.ResourceVersion, opts.ResourceVersionMatch, opts.Limit = "", "", ListPageSize
	list := &itemList{}
	for {
		pageCtx, cancel := context.WithTimeout(ctx, RequestTimeout)
		var (
			page listPage
			err  error
		)
		if lw.res.format() == readJSON {
			page, err = lw.listJSON(pageCtx, opts)
		} else {
			page, err = lw.listTyped(pageCtx, opts)
		}
		cancel()
		var failed requestError
		switch {
		case errors.As(err, &failed):
			if ctx.Err() == nil {
				lw.events.listFailed(failed.err)
			}
			return nil, failed.err
		case err != nil:
			return nil, fmt.Errorf("list %s: %w", lw.res.Name(), err)
		}
		list.Items = append(list.Items, page.items...)
		if list.ResourceVersion == "" {
			list.ResourceVersion = page.resourceVersion
		}
		if page.continueToken == "" {
			return list, nil
		}
		opts.Continue = page.continueToken
	}
}

// listPage is one page of a list, its objects trimmed into items.
type listPage struct {
	items                          []item
	resourceVersion, continueToken string
}

// requestError is a list request that failed, as opposed to a response
// that could not be decoded.
type requestError struct{ err error }

func (e requestError) Error() string { return e.err.Error() }

// listJSON lists one page of a resource read as raw JSON.
func (lw *listWatch) listJSON(ctx context.Context, opts metav1.ListOptions) (listPage, error) {
	accept := acceptJSON
	if lw.res.MetadataOnly {
		accept = acceptMetadataList
	}
	body, err := lw.client.Get().AbsPath(lw.res.path()).SetHeader("Accept", accept).
		VersionedParams(&opts, metav1.ParameterCodec).DoRaw(ctx)
	if err != nil {
		return listPage{}, requestError{err}
	}
	var raw struct {
		Metadata metav1.ListMeta   `json:"metadata"`
		Items    []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return listPage{}, fmt.Errorf("decode the page: %w", err)
	}
	body = nil
	page := listPage{resourceVersion: raw.Metadata.ResourceVersion, continueToken: raw.Metadata.Continue}
	for i, r := range raw.Items {
		it, err := trim(r, lw.res.apiVersion(), lw.res.Kind)
		if err != nil {
			return listPage{}, fmt.Errorf("item %d: %w", i, err)
		}
		page.items = append(page.items, *it)
		raw.Items[i] = nil
	}
	return page, nil
}

func (lw *listWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	lw.events.watching()
	if lw.res.format() != readJSON {
		return lw.watchTyped(ctx, opts)
	}
	opts.Watch = true
	accept := acceptJSON
	if lw.res.MetadataOnly {
		accept = acceptMetadata
	}
	body, err := lw.client.Get().AbsPath(lw.res.path()).SetHeader("Accept", accept).
		VersionedParams(&opts, metav1.ParameterCodec).Stream(ctx)
	if err != nil {
		return nil, err
	}
	w := &rawWatch{lw: lw, body: body, result: make(chan watch.Event), stop: make(chan struct{})}
	go w.run()
	return w, nil
}

// rawWatch decodes a watch response, one JSON watch event after another,
// into items.
type rawWatch struct {
	lw       *listWatch
	body     io.ReadCloser
	result   chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (w *rawWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.body.Close()
	})
}

func (w *rawWatch) ResultChan() <-chan watch.Event { return w.result }

func (w *rawWatch) run() {
	defer close(w.result)
	defer w.body.Close()
	dec := json.NewDecoder(w.body)
	for {
		var frame struct {
			Type   watch.EventType `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&frame); err != nil {
			// A closed connection or a timeout ends the watch; the
			// Reflector watches again from the last resourceVersion.
			return
		}
		ev, err := w.event(frame.Type, frame.Object)
		if !w.lw.hand(ev, err, w.result, w.stop) {
			return
		}
	}
}

// hand hands a watch's next event (or err, which it turns into an error
// event) to result, noting an error event, and says whether the watch
// goes on: not after an error event, nor once stop is closed.
func (lw *listWatch) hand(ev watch.Event, err error, result chan<- watch.Event, stop <-chan struct{}) bool {
	if err != nil {
		status := apierrors.NewInternalError(err).ErrStatus
		ev = watch.Event{Type: watch.Error, Object: &status}
	}
	if ev.Type == watch.Error {
		lw.events.watchError(ev.Object.(*metav1.Status))
	}
	select {
	case result <- ev:
	case <-stop:
		return false
	}
	return ev.Type != watch.Error
}

func (w *rawWatch) event(typ watch.EventType, raw json.RawMessage) (watch.Event, error) {
	switch typ {
	case watch.Error:
		var status metav1.Status
		if err := json.Unmarshal(raw, &status); err != nil {
			return watch.Event{}, fmt.Errorf("decode a watch error of %s: %w", w.lw.res.Name(), err)
		}
		return watch.Event{Type: watch.Error, Object: &status}, nil
	case watch.Bookmark:
		var o struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(raw, &o); err != nil {
			return watch.Event{}, fmt.Errorf("decode a bookmark of %s: %w", w.lw.res.Name(), err)
		}
		return watch.Event{Type: watch.Bookmark, Object: &item{ObjectMeta: o.Metadata}}, nil
	case watch.Added, watch.Modified, watch.Deleted:
		it, err := trim(raw, w.lw.res.apiVersion(), w.lw.res.Kind)
		if err != nil {
			return watch.Event{}, err
		}
		return watch.Event{Type: typ, Object: it}, nil
	}
	return watch.Event{}, fmt.Errorf("watch of %s: unknown event type %q", w.lw.res.Name(), typ)
}

// isGone reports whether status says the resourceVersion asked for is no
// longer in the API server's history (410 Gone, "Expired").
func isGone(status *metav1.Status) bool {
	return status.Code == http.StatusGone || status.Reason == metav1.StatusReasonExpired || status.Reason == metav1.StatusReasonGone
}
