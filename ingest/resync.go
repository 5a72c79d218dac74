package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/object"
)

// ErrResyncIncomplete is the reason given when a resync group is not
// appended because one of its records was rejected: a resync removes every
// object it does not list, so a list with a hole would delete the object
// that fell through it.
var ErrResyncIncomplete = errors.New("resync list is incomplete")

// ResyncOptions say which (namespace, resource) a resync input covers when
// the input alone cannot say it.
type ResyncOptions struct {
	// Namespace is given to namespaced objects that name none, and limits
	// the input to one namespace: an object of another namespace is
	// rejected. Zero: each object's own namespace (falling back to
	// Options.Namespace).
	Namespace string
	// Resource, with Namespace, declares that the input is the complete
	// list of this resource ("pods", "jobs.batch") in Namespace even when
	// it lists nothing: an empty list then removes every such object.
	// Zero: only the (namespace, resource) groups present in the input are
	// resynced.
	Resource string
	// ClusterScoped, with Resource and no Namespace, declares that the
	// input is the complete list of the cluster-scoped Resource
	// ("storageclasses.storage.k8s.io") even when it lists nothing: an
	// empty list then removes every such object. A namespaced object in
	// the input is rejected.
	ClusterScoped bool
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
	// duplicate window and nothing new was written.
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

// Resync reads a complete list of objects (a List or plain objects in JSON
// or YAML, e.g. `kubectl get pods -n NS -o json`; see Parse) and appends,
// per (namespace, resource), one ledger.Resync event carrying the trimmed
// objects: "this is everything of that resource in that namespace now". The
// projector then removes the objects it holds that the list lacks, upserts
// the listed ones and recounts the namespace's quotas; the event stays in
// the log, so replay shows when and why usage changed.
//
// Watch events other than ADDED are rejected: a resync states what exists.
// When any record of the input is rejected, no group is appended
// (ErrResyncIncomplete): the list is not known to be complete.
func (in *Ingester) Resync(ctx context.Context, name string, r io.Reader, opts ResyncOptions) (ResyncReport, error) {
	if opts.ClusterScoped && (opts.Resource == "" || opts.Namespace != "") {
		return ResyncReport{}, fmt.Errorf("%w: a cluster-scoped resync names its resource and no namespace", ErrInvalidOptions)
	}
	if opts.Resource != "" && opts.Namespace == "" && !opts.ClusterScoped {
		return ResyncReport{}, fmt.Errorf("%w: a resync of %s needs a namespace", ErrInvalidOptions, opts.Resource)
	}
	if strings.ContainsAny(opts.Resource, " /") {
		return ResyncReport{}, fmt.Errorf("%w: resource %q", ErrInvalidOptions, opts.Resource)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	run := &run{in: in, ctx: ctx}
	type group struct {
		items []json.RawMessage
		// objects are the items' identities, for a list split over
		// several events.
		objects  []listedObject
		rejected []string
	}
	groups := map[[2]string]*group{}
	get := func(ns, resource string) *group {
		k := [2]string{ns, resource}
		if groups[k] == nil {
			groups[k] = &group{}
		}
		return groups[k]
	}
	if opts.Resource != "" {
		get(opts.Namespace, opts.Resource)
	}
	defaultNS := opts.Namespace
	if defaultNS == "" {
		defaultNS = in.opts.Namespace
	}
	err := Parse(name, r, func(rec Record) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if rec.Err != nil {
			return run.reject(rec, rec.Err.Error())
		}
		if rec.Type != WatchAdded {
			return run.reject(rec, fmt.Sprintf("a resync lists objects; a %s watch event is not one", rec.Type))
		}
		o, err := object.DecodeForQuota(rec.Object)
		if err != nil {
			return run.reject(rec, err.Error())
		}
		if o.Name == "" {
			return run.reject(rec, fmt.Sprintf("%v: %s with generateName %q", ErrNoName, o.Kind, o.GenerateName))
		}
		if !o.ClusterScoped() && o.Namespace == "" {
			if defaultNS == "" {
				return run.reject(rec, fmt.Sprintf("%v: %s %q", ErrNoNamespace, o.Kind, o.Name))
			}
			o.SetNamespace(defaultNS)
		}
		if opts.ClusterScoped && !o.ClusterScoped() {
			return run.reject(rec, fmt.Sprintf("%s %s is in namespace %q, the resync covers the cluster scope", o.Resource, o.Name, o.Namespace))
		}
		g := get(o.Namespace, o.Resource)
		if opts.Namespace != "" && o.Namespace != opts.Namespace {
			g.rejected = append(g.rejected, rec.Source)
			return run.reject(rec, fmt.Sprintf("%s %s is in namespace %q, the resync covers %q", o.Resource, o.Name, o.Namespace, opts.Namespace))
		}
		trimmed, err := o.Trimmed()
		if err != nil {
			g.rejected = append(g.rejected, rec.Source)
			return run.reject(rec, err.Error())
		}
		g.items = append(g.items, trimmed)
		g.objects = append(g.objects, listedObject{name: o.Name, uid: o.UID, resourceVersion: o.ResourceVersion})
		return nil
	})
	if err != nil {
		return ResyncReport{Report: run.report}, fmt.Errorf("resync %s: %w", name, err)
	}

	keys := make([][2]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	report := ResyncReport{}
	recordsRejected := run.report.Rejected
	for _, k := range keys {
		g := groups[k]
		ns, resource := k[0], k[1]
		rg := ResyncGroup{Namespace: ns, Resource: resource, Items: len(g.items)}
		source := fmt.Sprintf("%s (resync %s in %s)", name, resource, nsLabel(ns))
		if recordsRejected > 0 {
			// A rejected record may belong to any group (one that did not
			// parse names none), so no group of this input is complete.
			reason := fmt.Sprintf("%v: not appended, %d records of the input were rejected", ErrResyncIncomplete, recordsRejected)
			if len(g.rejected) > 0 {
				reason += " (this group's: " + strings.Join(g.rejected, ", ") + ")"
			}
			run.report.Rejected++
			run.report.Rejections = append(run.report.Rejections, Rejection{Source: source, Reason: reason})
			report.Groups = append(report.Groups, rg)
			continue
		}
		ev := ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Resync, Resource: resource, Namespace: ns, Items: g.items, Source: name}
		encoded, err := ledger.Encode(ev)
		if err != nil {
			return ResyncReport{Report: run.report}, fmt.Errorf("resync %s: %w", source, err)
		}
		digest := sha256.Sum256(encoded)
		msgID := "resync/" + nsLabel(ns) + "/" + resource + "/sha256:" + hex.EncodeToString(digest[:16])
		if size, limit := len(encoded), int(in.stream.Config().MaxMsgSize); size > limit {
			// Too large for one event: the objects go as Upserts, then a
			// Resync naming them, once every Upsert is in the log.
			upserts, final, reason := splitResync(ev, g.objects, msgID, limit)
			if reason != "" {
				run.report.Rejected++
				run.report.Rejections = append(run.report.Rejections, Rejection{Source: source,
					Reason: fmt.Sprintf("%v: %d bytes, at most %d; %s: start 'quota serve' with a larger --max-event-size", ledger.ErrEventTooLarge, size, limit, reason)})
				report.Groups = append(report.Groups, rg)
				continue
			}
			results, err := in.stream.AppendBatch(ctx, upserts)
			for _, res := range results {
				switch {
				case res.Seq == 0:
				case res.Duplicate:
					run.report.Duplicates++
				default:
					run.report.Appended++
				}
			}
			if err != nil {
				return ResyncReport{Report: run.report, Groups: report.Groups}, fmt.Errorf("resync %s: its objects, before the list of their names: %w", source, err)
			}
			ev, msgID, rg.Split = final, msgID+"/listed", true
		}
		res, err := in.stream.Append(ctx, ev, ledger.AppendOptions{MsgID: msgID})
		if err != nil {
			return ResyncReport{Report: run.report, Groups: report.Groups}, fmt.Errorf("resync %s: %w", source, err)
		}
		rg.Seq, rg.Duplicate = res.Seq, res.Duplicate
		if res.Duplicate {
			run.report.Duplicates++
		} else {
			run.report.Appended++
		}
		// The resync may remove objects; an upsert of one of them must not
		// be skipped later as unchanged.
		in.forget(resource + "/" + ns + "/")
		report.Groups = append(report.Groups, rg)
	}
	report.Report = run.report
	return report, nil
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
	final = ledger.Event{Version: ev.Version, Type: ledger.Resync, Resource: ev.Resource, Namespace: ev.Namespace, Source: ev.Source}
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
	for k := range in.last {
		if strings.HasPrefix(k, prefix) {
			delete(in.last, k)
		}
	}
}

func nsLabel(ns string) string {
	if ns == "" {
		return "cluster scope"
	}
	return ns
}
