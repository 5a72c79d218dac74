package export

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// fullKinds are the resources whose fields quota reads, beyond their
// identity: they are read whole (and trimmed at once). The cluster-scoped
// ones feed admission (defaults, RuntimeClass overhead, device classes).
var fullKinds = map[schema.GroupResource]bool{
	{Group: "", Resource: "pods"}:                             true,
	{Group: "", Resource: "persistentvolumeclaims"}:           true,
	{Group: "", Resource: "services"}:                         true,
	{Group: "", Resource: "resourcequotas"}:                   true,
	{Group: "", Resource: "limitranges"}:                      true,
	{Group: "resource.k8s.io", Resource: "resourceclaims"}:    true,
	{Group: "storage.k8s.io", Resource: "storageclasses"}:     true,
	{Group: "scheduling.k8s.io", Resource: "priorityclasses"}: true,
	{Group: "node.k8s.io", Resource: "runtimeclasses"}:        true,
	{Group: "resource.k8s.io", Resource: "deviceclasses"}:     true,
}

// ignoredKinds are the namespaced resources Kubernetes' quota ignores by
// default (k8s.io/kubernetes/pkg/quota/v1/install): events would be a
// firehose for nothing a quota counts.
var ignoredKinds = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:              true,
	{Group: "events.k8s.io", Resource: "events"}: true,
	{Group: "", Resource: "bindings"}:            true,
	{Group: "", Resource: "componentstatuses"}:   true,
}

// countableVerbs are the verbs Kubernetes' quota controller requires of a
// resource it may count.
var countableVerbs = []string{"create", "list", "watch", "delete"}

// discovered is the outcome of one discovery.
type discovered struct {
	// resources are the resources to stream, by Name.
	resources map[string]resource
	// failed are the API groups that could not be discovered: their
	// streams keep running as they are.
	failed map[string]error
}

// discover finds what to stream, as Kubernetes' quota controller finds
// what it may count: the preferred version of every resource that
// supports create, list, watch and delete, namespaced; plus the
// cluster-scoped kinds admission reads. A group that fails is reported in
// failed, and the others are still returned.
func discover(dc discovery.DiscoveryInterface) (discovered, error) {
	lists, err := dc.ServerPreferredResources()
	d := discovered{resources: map[string]resource{}, failed: map[string]error{}}
	if err != nil {
		var groupErr *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &groupErr) || len(lists) == 0 {
			return d, fmt.Errorf("discover the API server's resources: %w", err)
		}
		for gv, e := range groupErr.Groups {
			d.failed[gv.Group] = e
		}
	}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource
			}
			gr := schema.GroupResource{Group: gv.Group, Resource: r.Name}
			res := resource{GVR: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced}
			switch {
			case fullKinds[gr] && hasVerbs(r, "list", "watch"):
			case r.Namespaced && !ignoredKinds[gr] && hasVerbs(r, countableVerbs...):
				res.MetadataOnly = true
			default:
				continue
			}
			d.resources[res.Name()] = res
		}
	}
	return d, nil
}

func hasVerbs(r metav1.APIResource, verbs ...string) bool {
	for _, v := range verbs {
		if !slices.Contains(r.Verbs, v) {
			return false
		}
	}
	return true
}
