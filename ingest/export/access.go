package export

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultAccessCheckInterval is how often a replica checks that it could
// lead (checkAccess).
const DefaultAccessCheckInterval = 30 * time.Second

// accessState is what the last access check found: "" once the replica
// could lead, else why not.
type accessState struct {
	mu      sync.Mutex
	checked bool
	problem string
}

func (a *accessState) set(problem string) {
	a.mu.Lock()
	a.checked, a.problem = true, problem
	a.mu.Unlock()
}

func (a *accessState) get() (checked bool, problem string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.checked, a.problem
}

// checkAccessLoop checks every AccessCheckInterval, from the start, that
// this replica could lead, until ctx ends.
func (x *Exporter) checkAccessLoop(ctx context.Context) {
	tick := time.NewTicker(x.cfg.AccessCheckInterval)
	defer tick.Stop()
	for {
		problem := x.checkAccess(ctx)
		if ctx.Err() != nil {
			return
		}
		if _, was := x.access.get(); problem != was && problem != "" {
			x.log.Error("this replica could not lead: "+problem, "lease", x.cfg.LeaseNamespace+"/"+x.cfg.LeaseName)
		}
		x.access.set(problem)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// checkAccess says why this replica could not lead, or "" if it could:
// the API server answers discovery, and the replica may list and watch
// every resource discovered in every namespace, and get and update its
// Lease. Each permission is asked with a SelfSubjectAccessReview, which
// reads no object.
func (x *Exporter) checkAccess(ctx context.Context) string {
	d, err := discover(x.discovery)
	if err != nil && len(d.resources) == 0 {
		return fmt.Sprintf("the API server does not answer discovery: %v", err)
	}
	type want struct{ verb, group, resource, namespace, name string }
	var wants []want
	names := make([]string, 0, len(d.resources))
	for name := range d.resources {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		r := d.resources[name]
		for _, verb := range []string{"list", "watch"} {
			wants = append(wants, want{verb, r.GVR.Group, r.GVR.Resource, "", ""})
		}
	}
	for _, verb := range []string{"get", "update"} {
		wants = append(wants, want{verb, "coordination.k8s.io", "leases", x.cfg.LeaseNamespace, x.cfg.LeaseName})
	}
	var denied []string
	for _, w := range wants {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: w.verb, Group: w.group, Resource: w.resource, Namespace: w.namespace, Name: w.name},
		}}
		rctx, cancel := context.WithTimeout(ctx, RequestTimeout)
		got, err := x.client.AuthorizationV1().SelfSubjectAccessReviews().Create(rctx, review, metav1.CreateOptions{})
		cancel()
		if err != nil {
			return fmt.Sprintf("cannot ask the API server what this replica may do: %v", err)
		}
		if !got.Status.Allowed {
			what := w.resource
			if w.group != "" {
				what += "." + w.group
			}
			denied = append(denied, w.verb+" "+what)
		}
	}
	if len(denied) > 0 {
		return fmt.Sprintf("its ServiceAccount may not %s", strings.Join(denied, ", "))
	}
	return ""
}
