package install

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/quotaledger/quota/testdata/kubecluster/kubecluster"
)

// TestRollbackKeepsTheLog installs deploy/ as docs/install.md says
// (deploy/namespace first, then deploy/), rolls it back as it says (the
// webhook configuration, then everything `kubectl delete -k deploy/
// --ignore-not-found` deletes: the objects deploy/ renders), and installs
// it again: the namespace and the claim that holds the log are never
// deleted, and the StatefulSet made again names the same claim.
//
// No kube-controller-manager runs here. The StatefulSet controller would
// make the claim data-quota-serve-0 from the volumeClaimTemplate; the test
// makes it as that controller does under the Retain policy (no owner
// reference, so the garbage collector would leave it too). The namespace
// controller would empty a deleted namespace, claim included, and remove
// it; here a deleted namespace stays Terminating with everything in it.
// So the test asserts that nothing is being deleted at all (no
// deletionTimestamp on the namespace or the claim), not merely that the
// claim is still there; and that the rendered set holds neither.
func TestRollbackKeepsTheLog(t *testing.T) {
	dir := deployWithCredentials(t)
	namespace := render(t, filepath.Join(dir, "namespace"))
	objects := render(t, dir)
	if len(namespace) != 1 || namespace[0].GetKind() != "Namespace" || namespace[0].GetName() != "quota-system" {
		t.Fatalf("deploy/namespace renders %v, want the Namespace quota-system alone", names(namespace))
	}
	for _, o := range objects {
		if o.GetKind() == "Namespace" || o.GetKind() == "PersistentVolumeClaim" {
			t.Errorf("deploy/ renders %s %s, which kubectl delete -k deploy/ would delete", o.GetKind(), o.GetName())
		}
	}
	checkClaimRetention(t, objects)

	c := kubecluster.Start(t, kubecluster.Options{})
	a := newApplier(t, c)
	a.apply(t, namespace)
	a.apply(t, objects)
	claim := createClaim(t, c, objects)

	// The rollback of docs/install.md.
	ctx := context.Background()
	if err := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "quota-ledger", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("kubectl delete validatingwebhookconfiguration quota-ledger: %v", err)
	}
	// Without --ignore-not-found, kubectl reports the webhook
	// configuration deleted just before, and exits 1.
	if missing := a.delete(t, objects); !slices.Equal(missing, []string{"ValidatingWebhookConfiguration quota-ledger"}) {
		t.Errorf("kubectl delete -k deploy/ found no %v, want only the webhook configuration deleted before", missing)
	}
	for _, o := range objects {
		if _, err := a.resource(t, o).Get(ctx, o.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s after the rollback: %v, want it deleted", o.GetKind(), o.GetName(), err)
		}
	}
	checkKept(t, c, claim)

	a.apply(t, namespace)
	a.apply(t, objects)
	checkKept(t, c, claim)
}

// deployWithCredentials copies deploy/ into a directory of the test's own
// and writes its credentials with `quota credentials`, as docs/install.md
// says; it returns the copy.
func deployWithCredentials(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "deploy")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(repoRoot(t), "deploy"))); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(kubecluster.Quota(t), "credentials", filepath.Join(dir, "credentials")).CombinedOutput(); err != nil {
		t.Fatalf("quota credentials: %v\n%s", err, out)
	}
	return dir
}

// checkClaimRetention checks that the StatefulSet of quota serve keeps its
// claims when it is deleted or scaled down.
func checkClaimRetention(t *testing.T, objects []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objects {
		if o.GetKind() != "StatefulSet" || o.GetName() != "quota-serve" {
			continue
		}
		var s appsv1.StatefulSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &s); err != nil {
			t.Fatal(err)
		}
		p := s.Spec.PersistentVolumeClaimRetentionPolicy
		if p == nil || p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
			t.Errorf("StatefulSet quota-serve: persistentVolumeClaimRetentionPolicy %+v, want Retain when deleted and when scaled", p)
		}
		return
	}
	t.Error("no StatefulSet quota-serve rendered")
}

// createClaim creates the claim of quota serve's first replica, as the
// StatefulSet controller would from its volumeClaimTemplate, and returns
// it.
func createClaim(t *testing.T, c *kubecluster.Cluster, objects []*unstructured.Unstructured) *corev1.PersistentVolumeClaim {
	t.Helper()
	for _, o := range objects {
		if o.GetKind() != "StatefulSet" || o.GetName() != "quota-serve" {
			continue
		}
		var s appsv1.StatefulSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &s); err != nil {
			t.Fatal(err)
		}
		template := s.Spec.VolumeClaimTemplates[0]
		claim := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: template.Name + "-" + s.Name + "-0", Labels: s.Spec.Selector.MatchLabels},
			Spec:       template.Spec,
		}
		claim, err := c.Client.CoreV1().PersistentVolumeClaims(s.Namespace).Create(context.Background(), claim, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create the claim of StatefulSet %s: %v", s.Name, err)
		}
		if claim.Name != "data-quota-serve-0" {
			t.Errorf("the StatefulSet's first claim is %s, want data-quota-serve-0 as docs/install.md names it", claim.Name)
		}
		return claim
	}
	t.Fatal("no StatefulSet quota-serve rendered")
	return nil
}

// checkKept checks that the namespace and the claim are the ones made at
// the install, and that neither is being deleted.
func checkKept(t *testing.T, c *kubecluster.Cluster, claim *corev1.PersistentVolumeClaim) {
	t.Helper()
	ctx := context.Background()
	ns, err := c.Client.CoreV1().Namespaces().Get(ctx, claim.Namespace, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace %s: %v", claim.Namespace, err)
	}
	if ns.DeletionTimestamp != nil || ns.Status.Phase != corev1.NamespaceActive {
		t.Errorf("namespace %s is %s since %v, want it Active and not deleted", ns.Name, ns.Status.Phase, ns.DeletionTimestamp)
	}
	got, err := c.Client.CoreV1().PersistentVolumeClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("claim %s: %v", claim.Name, err)
	}
	if got.UID != claim.UID || got.DeletionTimestamp != nil {
		t.Errorf("claim %s: UID %s, deleted since %v; want the claim of the install (UID %s), not deleted", got.Name, got.UID, got.DeletionTimestamp, claim.UID)
	}
}

// applier applies and deletes rendered objects as kubectl does, by their
// kinds' REST mappings.
type applier struct {
	mapper meta.RESTMapper
	dyn    dynamic.Interface
}

func newApplier(t *testing.T, c *kubecluster.Cluster) *applier {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), dyn: dyn}
}

// resource is where o lives on the API server.
func (a *applier) resource(t *testing.T, o *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvk := o.GroupVersionKind()
	mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s %s: %v", gvk, o.GetName(), err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return a.dyn.Resource(mapping.Resource).Namespace(o.GetNamespace())
	}
	return a.dyn.Resource(mapping.Resource)
}

// apply applies every object (server-side, as kubectl apply
// --server-side does).
func (a *applier) apply(t *testing.T, objects []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objects {
		if _, err := a.resource(t, o).Apply(context.Background(), o.GetName(), o, metav1.ApplyOptions{FieldManager: "kubectl", Force: true}); err != nil {
			t.Fatalf("apply %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

// delete deletes every object, as kubectl delete -f does (in the
// background), and returns those it did not find, which kubectl delete
// reports and exits 1 for unless given --ignore-not-found.
func (a *applier) delete(t *testing.T, objects []*unstructured.Unstructured) (missing []string) {
	t.Helper()
	background := metav1.DeletePropagationBackground
	for _, o := range objects {
		err := a.resource(t, o).Delete(context.Background(), o.GetName(), metav1.DeleteOptions{PropagationPolicy: &background})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, o.GetKind()+" "+o.GetName())
		case err != nil:
			t.Errorf("delete %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	return missing
}

// names lists the kinds and names of objects, for messages.
func names(objects []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objects {
		out = append(out, o.GetKind()+" "+o.GetName())
	}
	return out
}
