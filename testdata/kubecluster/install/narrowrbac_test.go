package install

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/discovery"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"

	"github.com/quotaledger/quota/testdata/kubecluster/kubecluster"
)

// checkNarrowRBAC checks, by the RBAC authorizer's own rule matching, that
// the exporter's ClusterRole lets it list and watch every resource it
// would stream from the cluster's discovery (as ingest/export's discover
// picks them: every namespaced resource that quota can count, and the
// cluster-scoped kinds admission reads), custom resources aside.
func checkNarrowRBAC(t *testing.T, c *kubecluster.Cluster, objects []*unstructured.Unstructured) {
	t.Helper()
	var role rbacv1.ClusterRole
	for _, o := range objects {
		if o.GetKind() == "ClusterRole" && o.GetName() == "quota-export" {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
				t.Fatal(err)
			}
		}
	}
	if slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*")
	}) {
		t.Errorf("ClusterRole quota-export still grants every resource: %+v", role.Rules)
	}
	for _, gr := range exportedResources(t, c) {
		for _, verb := range []string{"list", "watch"} {
			if !rbac.RulesAllow(authorizer.AttributesRecord{Verb: verb, APIGroup: gr.Group, Resource: gr.Resource, ResourceRequest: true}, role.Rules...) {
				t.Errorf("ClusterRole quota-export does not allow %s %s", verb, gr)
			}
		}
	}
}

// exportedResources are the resources, custom resources aside, that the
// exporter streams from c: namespaced ones that support create, list,
// watch and delete (events, bindings and componentstatuses aside), and the
// cluster-scoped kinds admission reads.
func exportedResources(t *testing.T, c *kubecluster.Cluster) []schema.GroupResource {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := apiextensionsclient.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := ext.ApiextensionsV1().CustomResourceDefinitions().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	custom := map[schema.GroupResource]bool{}
	for _, crd := range crds.Items {
		custom[schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}] = true
	}
	ignored := []string{"events", "bindings", "componentstatuses"}
	clusterScoped := []string{"storageclasses", "priorityclasses", "runtimeclasses", "deviceclasses"}
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	var out []schema.GroupResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource
			}
			gr := schema.GroupResource{Group: gv.Group, Resource: r.Name}
			countable := r.Namespaced && !slices.Contains(ignored, r.Name) && hasEvery(r.Verbs, "create", "list", "watch", "delete")
			if custom[gr] || !(countable || !r.Namespaced && slices.Contains(clusterScoped, r.Name)) {
				continue
			}
			out = append(out, gr)
		}
	}
	if len(out) < 20 {
		t.Fatalf("discovery found %d resources the exporter streams, want the twenty and more of Kubernetes: %v", len(out), out)
	}
	return out
}

// hasEvery reports whether have holds every one of want.
func hasEvery(have []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// componentOverlay writes a kustomization that takes deploy/base (under
// deploy) with the named components of deploy/components, as an operator's
// own would, and returns its directory.
func componentOverlay(t *testing.T, deploy string, components ...string) string {
	t.Helper()
	dir := filepath.Join(deploy, "overlays", "with-"+strings.Join(components, "-"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../../base\ncomponents:\n"
	for _, c := range components {
		k += "- ../../components/" + c + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
