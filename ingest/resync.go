package ingest

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
)

// ResyncOptions say which (namespace, resource) a resync input covers when
// the input alone cannot say it.
type ResyncOptions struct {
	// Namespace is given to namespaced objects that name none, and an
	// object of another namespace is rejected. Zero: each object's own
	// namespace (falling back to Options.Namespace).
	Namespace string
	// Resource, with Namespace, declares that the input is the complete
	// list of this resource ("pods", "jobs.batch") in Namespace, so that an
	// empty list removes every such object. Zero: only the (namespace,
	// resource) groups present in the input are resynced.
	Resource string
	// ClusterScoped, with Resource and no Namespace, declares the input the
	// complete list of the cluster-scoped Resource, as Resource does for a
	// namespace; a namespaced object in the input is rejected.
	ClusterScoped bool
	// ResourceVersion is the list's resourceVersion, carried by every
	// resync event: the projection then removes only objects older than
	// the list. Zero: the version the input's one List states
	// (metadata.resourceVersion, as `kubectl get -o json` prints it), if
	// any; else the list's version is not known, and whatever the list
	// lacks is removed.
	ResourceVersion string
}

// ResyncGroup is one resync event appended (or refused).
type ResyncGroup struct {
	Namespace string
	Resource  string
	// Items is the number of objects listed.
	Items int
	// Seq is the stream sequence of the event; zero when not appended.
	Seq uint64
	// Duplicate is set when the same list was appended within the stream's
	// duplicate window.
	Duplicate bool
	// Split is set when the list was too large for one event: its objects
	// were appended as Upserts, then the Resync (at Seq) naming them.
	Split bool
}

// ResyncReport is what Resync did.
type ResyncReport struct {
	Report
	// Groups are the resync events, by namespace then resource.
	Groups []ResyncGroup
}

// Limits of a resync, whose list is held whole until it is appended.
const (
	// ResyncGroupsMax is the number of (namespace, resource) groups one
	// resync input may list.
	ResyncGroupsMax = 10_000
	// ResyncItemsMax is the number of objects one resync input may list.
	ResyncItemsMax = ListItemsMax
)

// Resync reads a complete list of objects (a List or plain objects, e.g.
// `kubectl get pods -n NS -o json`; see Parse) and appends, per
// (namespace, resource), one ledger.Resync event carrying the trimmed
// objects: "this is everything of that resource in that namespace now".
// The projector then removes the objects it holds that the list lacks and
// upserts the listed ones; the event stays in the log, so replay shows
// when and why usage changed.
//
// Watch events other than ADDED are rejected: a resync states what exists.
// When any record of the input is rejected, no group is appended
// (ErrResyncIncomplete), nor is an input over ResyncGroupsMax groups or
// ResyncItemsMax objects (ErrResyncTooLarge).
//
// The same input again appends nothing when the last event of each of its
// namespaces is its own resync (within the stream's duplicate window);
// after any other event of a namespace, its groups there are appended
// again, as they may undo that event. An event another writer appends
// between two groups of one namespace is not seen by the next run.
func (in *Ingester) Resync(ctx context.Context, name string, r io.Reader, opts ResyncOptions) (ResyncReport, error) {
	if err := opts.validate(); err != nil {
		return ResyncReport{}, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	run := &run{in: in, ctx: ctx}
	groups, err := in.readResync(ctx, run, name, r, opts)
	if err != nil {
		return ResyncReport{Report: run.report}, fmt.Errorf("resync %s: %w", name, err)
	}
	// The groups are appended by namespace, then resource.
	var appended []ResyncGroup
	keys := groups.sortedKeys()
	if rejected := run.report.Rejected; rejected > 0 {
		for _, k := range keys {
			appended = append(appended, refuseResyncGroup(run, name, k, groups.byKey[k], rejected))
		}
		return ResyncReport{Report: run.report, Groups: appended}, nil
	}
	for i := 0; i < len(keys); {
		j := i
		for j < len(keys) && keys[j][0] == keys[i][0] {
			j++
		}
		rgs, err := in.appendResyncNamespace(ctx, run, name, keys[i:j], groups)
		appended = append(appended, rgs...)
		if err != nil {
			return ResyncReport{Report: run.report, Groups: appended}, err
		}
		i = j
	}
	return ResyncReport{Report: run.report, Groups: appended}, nil
}

// appendResyncNamespace appends the groups of keys, all of one namespace.
// Their message IDs name the input's groups in the namespace and the
// namespace's last event before them, so that the same input again, with
// no other event of the namespace after it, is a duplicate, and after
// another event is new. The error is the stream's.
func (in *Ingester) appendResyncNamespace(ctx context.Context, run *run, name string, keys [][2]string, groups *resyncGroups) ([]ResyncGroup, error) {
	ns := keys[0][0]
	var rgs []ResyncGroup
	events := make([]ledger.Event, len(keys))
	lists := make([]string, len(keys))
	for i, k := range keys {
		events[i] = ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Resync, Resource: k[1], Namespace: ns,
			ResourceVersion: groups.resourceVersion, Items: groups.byKey[k].items, Source: name}
		encoded, err := ledger.Encode(events[i])
		if err != nil {
			return rgs, fmt.Errorf("resync %s: %w", resyncSource(name, k), err)
		}
		digest := sha256.Sum256(encoded)
		lists[i] = "resync/" + nsLabel(ns) + "/" + k[1] + "/sha256:" + hex.EncodeToString(digest[:16])
	}
	input := sha256.Sum256([]byte(strings.Join(lists, "\n")))
	tag := "/in/" + hex.EncodeToString(input[:8]) + "/after/"
	lastSeq, lastID, err := in.stream.LastSubjectEvent(ctx, ns)
	if err != nil {
		return rgs, fmt.Errorf("resync %s in %s: %w", name, nsLabel(ns), err)
	}
	after := lastSeq
	if _, rest, ok := strings.Cut(lastID, tag); ok {
		// The namespace's last event is this input's: the same IDs make
		// it a duplicate.
		seq, _, _ := strings.Cut(rest, "/")
		if prev, err := strconv.ParseUint(seq, 10, 64); err == nil {
			after = prev
		}
	}
	for i, k := range keys {
		rg, err := in.appendResyncGroup(ctx, run, name, k, groups.byKey[k], events[i], lists[i]+tag+strconv.FormatUint(after, 10))
		rgs = append(rgs, rg)
		if err != nil {
			return rgs, err
		}
	}
	return rgs, nil
}

func resyncSource(name string, k [2]string) string {
	return fmt.Sprintf("%s (resync %s in %s)", name, k[1], nsLabel(k[0]))
}

// refuseResyncGroup refuses group k: recordsRejected says the input is
// not a complete list.
func refuseResyncGroup(run *run, name string, k [2]string, g *resyncGroup, recordsRejected int) ResyncGroup {
	// A rejected record may belong to any group (one that did not parse
	// names none), so no group of this input is complete.
	reason := fmt.Sprintf("%v: not appended, %d records of the input were rejected", ErrResyncIncomplete, recordsRejected)
	if len(g.rejected) > 0 {
		reason += " (this group's: " + strings.Join(g.rejected, ", ") + ")"
	}
	run.report.refuse(resyncSource(name, k), reason)
	return ResyncGroup{Namespace: k[0], Resource: k[1], Items: len(g.items)}
}

func (opts ResyncOptions) validate() error {
	if opts.ClusterScoped && (opts.Resource == "" || opts.Namespace != "") {
		return fmt.Errorf("%w: a cluster-scoped resync names its resource and no namespace", ErrInvalidOptions)
	}
	if opts.Resource != "" && opts.Namespace == "" && !opts.ClusterScoped {
		return fmt.Errorf("%w: a resync of %s needs a namespace", ErrInvalidOptions, opts.Resource)
	}
	if strings.ContainsAny(opts.Resource, " /") {
		return fmt.Errorf("%w: resource %q", ErrInvalidOptions, opts.Resource)
	}
	return nil
}

// resyncGroup is the listed objects of one (namespace, resource).
type resyncGroup struct {
	items []json.RawMessage
	// objects are the items' identities, for a list split over several
	// events.
	objects  []listedObject
	rejected []string
}

// resyncGroups are the groups of one resync input.
type resyncGroups struct {
	byKey map[[2]string]*resyncGroup
	items int
	// resourceVersion is the list's (ResyncOptions.ResourceVersion).
	resourceVersion string
}

// get returns the group of (ns, resource), nil when the input already has
// ResyncGroupsMax others.
func (g *resyncGroups) get(ns, resource string) *resyncGroup {
	k := [2]string{ns, resource}
	if g.byKey[k] == nil {
		if len(g.byKey) >= ResyncGroupsMax {
			return nil
		}
		g.byKey[k] = &resyncGroup{}
	}
	return g.byKey[k]
}

func (g *resyncGroups) sortedKeys() [][2]string {
	return slices.SortedFunc(maps.Keys(g.byKey), func(a, b [2]string) int {
		return cmp.Or(strings.Compare(a[0], b[0]), strings.Compare(a[1], b[1]))
	})
}

// readResync reads a resync input into its groups, rejecting (into run)
// what cannot be listed.
func (in *Ingester) readResync(ctx context.Context, run *run, name string, r io.Reader, opts ResyncOptions) (*resyncGroups, error) {
	groups := &resyncGroups{byKey: map[[2]string]*resyncGroup{}, resourceVersion: opts.ResourceVersion}
	if opts.Resource != "" {
		groups.get(opts.Namespace, opts.Resource)
	}
	defaultNS := opts.Namespace
	if defaultNS == "" {
		defaultNS = in.opts.Namespace
	}
	// Without a version in opts, the list's own is taken when the whole
	// input is one List that states it.
	lists := map[string]bool{}
	err := Parse(name, r, func(rec Record) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		lists[rec.ListResourceVersion] = true
		o, reason := in.resyncObject(run, &rec, defaultNS)
		if reason != "" {
			return run.reject(rec, reason)
		}
		if opts.ClusterScoped && !o.ClusterScoped() {
			return run.reject(rec, fmt.Sprintf("%s %s is in namespace %q, the resync covers the cluster scope", o.Resource, o.Name, o.Namespace))
		}
		g := groups.get(o.Namespace, o.Resource)
		if g == nil || groups.items >= ResyncItemsMax {
			return run.reject(rec, fmt.Sprintf("%v: more than %d groups or %d objects; split the input by namespace", ErrResyncTooLarge, ResyncGroupsMax, ResyncItemsMax))
		}
		if opts.Namespace != "" && o.Namespace != opts.Namespace {
			g.rejected = append(g.rejected, rec.Source)
			return run.reject(rec, fmt.Sprintf("%s %s is in namespace %q, the resync covers %q", o.Resource, o.Name, o.Namespace, opts.Namespace))
		}
		trimmed, err := o.Trimmed()
		if err != nil {
			g.rejected = append(g.rejected, rec.Source)
			return run.reject(rec, err.Error())
		}
		// The item keeps its version, which the projection fences by.
		g.items = append(g.items, object.WithResourceVersion(trimmed, o.ResourceVersion))
		g.objects = append(g.objects, listedObject{name: o.Name, uid: o.UID, resourceVersion: o.ResourceVersion})
		groups.items++
		return nil
	})
	if groups.resourceVersion == "" && len(lists) == 1 {
		for rv := range lists {
			groups.resourceVersion = rv
		}
	}
	return groups, err
}

// resyncObject decodes one record of a resync input, or says why it
// cannot be listed. A plain object's fields are checked as IngestFile
// checks them; the record then names the line of the first problem.
func (in *Ingester) resyncObject(run *run, rec *Record, defaultNS string) (*object.Object, string) {
	if rec.Err != nil {
		return nil, rec.Err.Error()
	}
	if rec.Type != WatchAdded {
		return nil, fmt.Sprintf("a resync lists objects; a %s watch event is not one", rec.Type)
	}
	o, warn, reason := in.readObject(rec)
	run.report.Warnings = listed(run.report.Warnings, warn...)
	if reason != "" {
		return nil, reason
	}
	return o, place(o, false, defaultNS)
}

// appendResyncGroup appends ev, the Resync of group k (namespace,
// resource), with msgID, split when too large for one event. The error is
// the stream's.
func (in *Ingester) appendResyncGroup(ctx context.Context, run *run, name string, k [2]string, g *resyncGroup, ev ledger.Event, msgID string) (ResyncGroup, error) {
	ns, resource := k[0], k[1]
	rg := ResyncGroup{Namespace: ns, Resource: resource, Items: len(g.items)}
	source := resyncSource(name, k)
	encoded, err := ledger.Encode(ev)
	if err != nil {
		return rg, fmt.Errorf("resync %s: %w", source, err)
	}
	if size, limit := len(encoded), int(in.stream.Config().MaxMsgSize); size > limit {
		// Too large for one event: the objects go as Upserts, then a
		// Resync naming them, once every Upsert is in the log.
		upserts, final, reason := splitResync(ev, g.objects, msgID, limit)
		if reason != "" {
			run.report.refuse(source, fmt.Sprintf("%v: %d bytes, at most %d; %s: start 'quota serve' with a larger --max-event-size", ledger.ErrEventTooLarge, size, limit, reason))
			return rg, nil
		}
		results, err := in.stream.AppendBatch(ctx, upserts)
		run.report.count(results)
		if err != nil {
			return rg, fmt.Errorf("resync %s: its objects, before the list of their names: %w", source, err)
		}
		ev, msgID, rg.Split = final, msgID+"/listed", true
	}
	res, err := in.stream.Append(ctx, ev, ledger.AppendOptions{MsgID: msgID})
	if err != nil {
		return rg, fmt.Errorf("resync %s: %w", source, err)
	}
	rg.Seq, rg.Duplicate = res.Seq, res.Duplicate
	run.report.count([]ledger.AppendResult{res})
	// The resync may remove objects; an upsert of one of them must not
	// be skipped later as unchanged.
	in.forget(resource + "/" + ns + "/")
	return rg, nil
}

// listedObject is what a split resync's Upsert of one object names.
type listedObject struct {
	name, uid, resourceVersion string
}

// splitResync splits ev, a Resync too large for one event of limit bytes,
// into an Upsert per item (objects says each one's name, uid and
// resourceVersion) and the Resync that names them (Listed), and gives the
// Upserts message IDs from the list's own. It returns why it cannot,
// instead, when an item or the list of names is itself too large.
func splitResync(ev ledger.Event, objects []listedObject, msgID string, limit int) (upserts []ledger.BatchEntry, final ledger.Event, reason string) {
	final = ledger.Event{Version: ev.Version, Type: ledger.Resync, Resource: ev.Resource, Namespace: ev.Namespace,
		ResourceVersion: ev.ResourceVersion, Source: ev.Source}
	for i, item := range ev.Items {
		o := objects[i]
		up := ledger.Event{Version: ev.Version, Type: ledger.Upsert, Resource: ev.Resource, Namespace: ev.Namespace,
			Name: o.name, UID: o.uid, ResourceVersion: o.resourceVersion, Object: item, Source: ev.Source}
		encoded, err := ledger.Encode(up)
		if err != nil {
			return nil, final, fmt.Sprintf("%s %s: %v", ev.Resource, o.name, err)
		}
		if len(encoded) > limit {
			return nil, final, fmt.Sprintf("%s %s alone is %d bytes", ev.Resource, o.name, len(encoded))
		}
		upserts = append(upserts, ledger.BatchEntry{Event: up, MsgID: fmt.Sprintf("%s/%d", msgID, i)})
		final.Listed = append(final.Listed, o.name)
	}
	encoded, err := ledger.Encode(final)
	if err != nil {
		return nil, final, err.Error()
	}
	if len(encoded) > limit {
		return nil, final, fmt.Sprintf("split, the list of its %d names alone is %d bytes", len(final.Listed), len(encoded))
	}
	return upserts, final, ""
}

// forget drops the unchanged-upsert memory of every key with prefix.
func (in *Ingester) forget(prefix string) {
	maps.DeleteFunc(in.last, func(k string, _ [sha256.Size]byte) bool { return strings.HasPrefix(k, prefix) })
}

func nsLabel(ns string) string {
	if ns == "" {
		return "cluster scope"
	}
	return ns
}
