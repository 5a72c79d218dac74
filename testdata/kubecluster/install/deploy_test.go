package install

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/quotaledger/quota/testdata/kubecluster/kubecluster"
)

// TestDeployManifestsAreValid renders deploy/ (the base kubectl apply -k
// installs, the external-NATS overlay, the base with the cert-manager
// and ServiceMonitor components, and with the no-client-ca one) with
// kustomize, from credentials `quota
// credentials` wrote, and applies every object to a real kube-apiserver
// with a server-side dry run. The pods of each workload are dry-run too, in
// the namespace deploy/ makes, which enforces the restricted Pod Security
// Standard. cert-manager's and Prometheus Operator's kinds are checked
// against CRDs of the test's own that take any spec: their names and
// scopes are checked, their fields are not.
//
// deploy/ holds no Namespace, so that deleting it keeps the log
// (TestRollbackKeepsTheLog): the namespace comes from deploy/namespace,
// applied for real first, as docs/install.md says. With the narrow-rbac
// component, the exporter's ClusterRole is checked to allow every
// resource the cluster's discovery would give the exporter to stream.
func TestDeployManifestsAreValid(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "deploy")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(repoRoot(t), "deploy"))); err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(dir, "credentials")
	if out, err := exec.Command(kubecluster.Quota(t), "credentials", creds).CombinedOutput(); err != nil {
		t.Fatalf("quota credentials: %v\n%s", err, out)
	}
	serveKey, err := os.ReadFile(filepath.Join(creds, "operator.nk"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "overlays", "external-nats", "serve.nk"), serveKey, 0o600); err != nil {
		t.Fatal(err)
	}
	withComponents := filepath.Join(dir, "overlays", "with-components")
	if err := os.MkdirAll(withComponents, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(withComponents, "kustomization.yaml"), []byte(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../base
components:
- ../../components/cert-manager
- ../../components/servicemonitor
`), 0o644); err != nil {
		t.Fatal(err)
	}

	withoutClientCA := filepath.Join(dir, "overlays", "without-client-ca")
	if err := os.MkdirAll(withoutClientCA, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(withoutClientCA, "kustomization.yaml"), []byte(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../base
components:
- ../../components/no-client-ca
`), 0o644); err != nil {
		t.Fatal(err)
	}

	withNarrowRBAC := componentOverlay(t, dir, "narrow-rbac")
	singleNode := filepath.Join(dir, "overlays", "single-node")

	c := kubecluster.Start(t, kubecluster.Options{})
	installCRDs(t, c)
	newApplier(t, c).apply(t, render(t, filepath.Join(dir, "namespace")))
	caPEM, err := os.ReadFile(filepath.Join(creds, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path string }{
		{"deploy", dir},
		{"overlays/external-nats", filepath.Join(dir, "overlays", "external-nats")},
		{"base with the cert-manager and ServiceMonitor components", withComponents},
		{"base with the narrow-rbac component", withNarrowRBAC},
		{"base with the no-client-ca component", withoutClientCA},
		{"overlays/single-node", singleNode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objects := render(t, tc.path)
			kinds := map[string]int{}
			for _, o := range objects {
				kinds[o.GetKind()]++
			}
			for _, want := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
				"StatefulSet", "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy", "ValidatingWebhookConfiguration", "Secret"} {
				if kinds[want] == 0 {
					t.Errorf("no %s rendered", want)
				}
			}
			checkWebhookConfiguration(t, objects, caPEM, tc.path == withComponents)
			checkServiceMonitors(t, objects)
			checkClaimRetention(t, objects)
			checkServeArgs(t, objects)
			if tc.path == dir {
				checkServeMembers(t, objects)
			}
			if tc.path == withNarrowRBAC {
				checkNarrowRBAC(t, c, objects)
			}
			checkClientCA(t, objects, creds, tc.path != withoutClientCA)
			dryRunApply(t, c, objects)
		})
	}
}

// checkServeArgs checks that quota serve is run as a ledger fed by the
// exporter (reservations released by the feed) and with flags it has.
func checkServeArgs(t *testing.T, objects []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objects {
		if o.GetKind() != "StatefulSet" || o.GetName() != "quota-serve" {
			continue
		}
		var sts appsv1.StatefulSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &sts); err != nil {
			t.Fatal(err)
		}
		args := sts.Spec.Template.Spec.Containers[0].Args
		if !slices.Contains(args, "--reservation-release=feed") {
			t.Errorf("quota serve runs with %v, without --reservation-release=feed", args)
		}
		help, err := exec.Command(kubecluster.Quota(t), "serve", "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("quota serve --help: %v\n%s", err, help)
		}
		for _, a := range args[1:] {
			name, _, _ := strings.Cut(a, "=")
			if !strings.Contains(string(help), "  "+name+" ") {
				t.Errorf("quota serve has no flag %s", name)
			}
		}
		return
	}
	t.Error("no quota-serve StatefulSet rendered")
}

// render builds the kustomization at path, as kubectl apply -k does.
func render(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), path)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", path, err)
	}
	var objects []*unstructured.Unstructured
	for _, r := range m.Resources() {
		fields, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		objects = append(objects, &unstructured.Unstructured{Object: fields})
	}
	return objects
}

// checkWebhookConfiguration checks what the ValidatingWebhookConfiguration
// promises: failurePolicy Fail, no side effects on dry runs, a small
// timeout, kube-system and the ledger's namespace exempt, for each of its
// webhooks; pods with their resize, claims and services covered; and the
// CA of the credentials trusted (or cert-manager's injected).
func checkWebhookConfiguration(t *testing.T, objects []*unstructured.Unstructured, caPEM []byte, certManager bool) {
	t.Helper()
	for _, o := range objects {
		if o.GetKind() != "ValidatingWebhookConfiguration" {
			continue
		}
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, &vwc, true); err != nil {
			t.Fatal(err)
		}
		if certManager && vwc.Annotations["cert-manager.io/inject-ca-from"] != "quota-system/quota-webhook" {
			t.Errorf("with cert-manager, no CA injection annotation: %v", vwc.Annotations)
		}
		var resources []string
		for _, w := range vwc.Webhooks {
			if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Fail {
				t.Errorf("%s: failurePolicy %s, want Fail", w.Name, ptrString(w.FailurePolicy))
			}
			if w.SideEffects == nil || *w.SideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun {
				t.Errorf("%s: sideEffects %s, want NoneOnDryRun", w.Name, ptrString(w.SideEffects))
			}
			if w.TimeoutSeconds == nil || *w.TimeoutSeconds > 10 {
				t.Errorf("%s: timeoutSeconds %s, want at most 10", w.Name, ptrString(w.TimeoutSeconds))
			}
			exempt := false
			for _, r := range w.NamespaceSelector.MatchExpressions {
				if r.Key == corev1.LabelMetadataName && r.Operator == metav1.LabelSelectorOpNotIn &&
					slices.Contains(r.Values, "kube-system") && slices.Contains(r.Values, "quota-system") {
					exempt = true
				}
			}
			if !exempt {
				t.Errorf("%s: kube-system and quota-system are not exempt by %s: %+v", w.Name, corev1.LabelMetadataName, w.NamespaceSelector)
			}
			for _, r := range w.Rules {
				resources = append(resources, r.Resources...)
			}
			if !bytes.Equal(w.ClientConfig.CABundle, caPEM) {
				t.Errorf("%s: caBundle is not the credentials' ca.crt (%q)", w.Name, base64.StdEncoding.EncodeToString(w.ClientConfig.CABundle))
			}
		}
		for _, want := range []string{"pods", "pods/resize", "persistentvolumeclaims", "services"} {
			if !slices.Contains(resources, want) {
				t.Errorf("no webhook has a rule for %s", want)
			}
		}
		return
	}
	t.Error("no ValidatingWebhookConfiguration rendered")
}

// checkClientCA checks that the webhook is given, with --client-ca, the
// client-ca.crt of the credentials from a Secret it mounts, or, when
// required is false, no --client-ca at all. The CA keys and kube-apiserver's
// files are in no Secret.
func checkClientCA(t *testing.T, objects []*unstructured.Unstructured, creds string, required bool) {
	t.Helper()
	secrets := map[string]corev1.Secret{}
	var webhook *appsv1.Deployment
	for _, o := range objects {
		switch o.GetKind() {
		case "Secret":
			var s corev1.Secret
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &s); err != nil {
				t.Fatal(err)
			}
			secrets[s.Name] = s
			for key := range s.Data {
				if key == "ca.key" || key == "client-ca.key" || strings.HasPrefix(key, "apiserver-") {
					t.Errorf("Secret %s holds %s, which stays out of the cluster", s.Name, key)
				}
			}
		case "Deployment":
			if o.GetName() == "quota-webhook" {
				webhook = &appsv1.Deployment{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, webhook); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if webhook == nil {
		t.Fatal("no quota-webhook Deployment rendered")
	}
	pod := webhook.Spec.Template.Spec
	var file string
	for _, a := range pod.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--client-ca="); ok {
			file = v
		}
	}
	if !required {
		if file != "" {
			t.Errorf("the webhook is given --client-ca=%s", file)
		}
		return
	}
	want, err := os.ReadFile(filepath.Join(creds, "client-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range pod.Containers[0].VolumeMounts {
		if !strings.HasPrefix(file, m.MountPath+"/") {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				if got := secrets[v.Secret.SecretName].Data[strings.TrimPrefix(file, m.MountPath+"/")]; !bytes.Equal(got, want) {
					t.Errorf("--client-ca=%s is not the credentials' client-ca.crt in Secret %s", file, v.Secret.SecretName)
				}
				return
			}
		}
	}
	t.Errorf("--client-ca=%q is in no Secret the webhook mounts", file)
}

// dryRunApply creates the namespaces (for real: a namespaced object's dry
// run needs its namespace), then applies every object with a server-side
// dry run, and dry-runs a pod of every workload's template.
func dryRunApply(t *testing.T, c *kubecluster.Cluster, objects []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objects {
		if o.GetKind() != "Namespace" {
			continue
		}
		_, err := dyn.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "install-test"})
		if err != nil {
			t.Fatalf("create namespace %s: %v", o.GetName(), err)
		}
	}
	for _, o := range objects {
		gvk := o.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Errorf("%s %s: %v", gvk, o.GetName(), err)
			continue
		}
		var r dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			if o.GetNamespace() == "" {
				t.Errorf("%s %s: namespaced, rendered without a namespace", gvk.Kind, o.GetName())
				continue
			}
			r = dyn.Resource(mapping.Resource).Namespace(o.GetNamespace())
		}
		if _, err := r.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "install-test", DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("server-side dry run of %s %s/%s: %v", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
		dryRunPod(t, c, o)
	}
}

// dryRunPod dry-runs a pod of a workload's template in its namespace, where
// Pod Security admission judges it.
func dryRunPod(t *testing.T, c *kubecluster.Cluster, o *unstructured.Unstructured) {
	t.Helper()
	var template corev1.PodTemplateSpec
	switch o.GetKind() {
	case "Deployment":
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatal(err)
		}
		template = d.Spec.Template
	case "StatefulSet":
		var s appsv1.StatefulSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &s); err != nil {
			t.Fatal(err)
		}
		template = s.Spec.Template
		// The claim of each volume template is a volume of the pod.
		for _, v := range s.Spec.VolumeClaimTemplates {
			template.Spec.Volumes = append(template.Spec.Volumes, corev1.Volume{Name: v.Name,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.Name + "-" + s.Name + "-0"}}})
		}
	default:
		return
	}
	p := &corev1.Pod{ObjectMeta: template.ObjectMeta, Spec: template.Spec}
	p.Name = o.GetName() + "-dry-run"
	// The ServiceAccount is dry-run, not created: the pod names the
	// namespace's default one, which the test creates, and keeps its own
	// automount choice.
	p.Spec.ServiceAccountName = ""
	c.CreateNamespace(t, o.GetNamespace())
	if _, err := c.Client.CoreV1().Pods(o.GetNamespace()).Create(context.Background(), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("a pod of %s %s, dry-run in %s: %v", o.GetKind(), o.GetName(), o.GetNamespace(), err)
	}
}

// installCRDs installs CRDs of cert-manager's Issuer and Certificate and
// Prometheus Operator's ServiceMonitor that take any spec, and waits
// until they are served.
func installCRDs(t *testing.T, c *kubecluster.Cluster) {
	t.Helper()
	client, err := apiextensionsclient.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	preserve := true
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", XPreserveUnknownFields: &preserve,
	}}
	ctx := context.Background()
	for _, crd := range []struct{ group, kind, plural string }{
		{"cert-manager.io", "Issuer", "issuers"},
		{"cert-manager.io", "Certificate", "certificates"},
		{"monitoring.coreos.com", "ServiceMonitor", "servicemonitors"},
	} {
		def := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: crd.plural + "." + crd.group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: crd.group, Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: crd.kind, Plural: crd.plural, ListKind: crd.kind + "List"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true, Schema: schema,
				}},
			},
		}
		if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, def, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create CRD %s: %v", def.Name, err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, def.Name, metav1.GetOptions{})
			if err == nil && established(got) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("CRD %s not established within 30s: %v", def.Name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// ptrString prints what p points to, or "unset".
func ptrString[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// checkServiceMonitors checks that each ServiceMonitor selects a Service
// rendered with it, by the Service's labels, and names a port it has.
func checkServiceMonitors(t *testing.T, objects []*unstructured.Unstructured) {
	t.Helper()
	for _, m := range objects {
		if m.GetKind() != "ServiceMonitor" {
			continue
		}
		match, _, _ := unstructured.NestedStringMap(m.Object, "spec", "selector", "matchLabels")
		endpoints, _, _ := unstructured.NestedSlice(m.Object, "spec", "endpoints")
		found := false
		for _, o := range objects {
			if o.GetKind() != "Service" || o.GetNamespace() != m.GetNamespace() {
				continue
			}
			labels := o.GetLabels()
			selected := len(match) > 0
			for k, v := range match {
				selected = selected && labels[k] == v
			}
			if !selected {
				continue
			}
			found = true
			var svc corev1.Service
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &svc); err != nil {
				t.Fatal(err)
			}
			for _, ep := range endpoints {
				port, _ := ep.(map[string]any)["port"].(string)
				if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == port }) {
					t.Errorf("ServiceMonitor %s: Service %s has no port %q", m.GetName(), svc.Name, port)
				}
			}
		}
		if !found {
			t.Errorf("ServiceMonitor %s selects no Service by %v", m.GetName(), match)
		}
	}
}

// checkServeMembers checks that deploy/ runs quota serve as three members
// of one cluster that survives the loss of any one: a StatefulSet of
// three started together, each routing to every member by its name in a
// headless Service that publishes not-ready pods, with three replicas of
// the log, at most one member down at a time (PodDisruptionBudget), one
// per node, and time to hand over in lame-duck mode when stopped.
func checkServeMembers(t *testing.T, objects []*unstructured.Unstructured) {
	t.Helper()
	var sts appsv1.StatefulSet
	services := map[string]corev1.Service{}
	var pdbSelects bool
	for _, o := range objects {
		switch {
		case o.GetKind() == "StatefulSet" && o.GetName() == "quota-serve":
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &sts); err != nil {
				t.Fatal(err)
			}
		case o.GetKind() == "Service":
			var svc corev1.Service
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &svc); err != nil {
				t.Fatal(err)
			}
			services[svc.Name] = svc
		case o.GetKind() == "PodDisruptionBudget" && o.GetName() == "quota-serve":
			maxUnavailable, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "maxUnavailable")
			component, _, _ := unstructured.NestedString(o.Object, "spec", "selector", "matchLabels", "app.kubernetes.io/component")
			pdbSelects = fmt.Sprint(maxUnavailable) == "1" && component == "serve"
		}
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 || sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("StatefulSet quota-serve: replicas %v, pod management %q; want 3, Parallel", ptrString(sts.Spec.Replicas), sts.Spec.PodManagementPolicy)
	}
	headless := services[sts.Spec.ServiceName]
	if headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses ||
		!slices.ContainsFunc(headless.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == 6222 }) {
		t.Errorf("the StatefulSet's Service %q: %+v; want it headless, publishing not-ready addresses, on port 6222", sts.Spec.ServiceName, headless.Spec)
	}
	if !pdbSelects {
		t.Error("no PodDisruptionBudget quota-serve with maxUnavailable 1 over the serve pods")
	}
	pod := sts.Spec.Template.Spec
	if pod.Affinity == nil || pod.Affinity.PodAntiAffinity == nil || len(pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 || len(pod.TopologySpreadConstraints) == 0 {
		t.Error("the serve pods are not kept apart: no required anti-affinity or no topology spread")
	}
	if c := pod.Containers[0]; c.Lifecycle == nil || c.Lifecycle.PreStop == nil || pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds < 60 {
		t.Errorf("the serve container: preStop %+v, grace %v s; want a preStop and at least 60 s", c.Lifecycle, ptrString(pod.TerminationGracePeriodSeconds))
	}
	var routes string
	for _, a := range pod.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--routes="); ok {
			routes = v
		}
	}
	for i := range 3 {
		if want := fmt.Sprintf("nats://%s-%d.%s:6222", sts.Name, i, sts.Spec.ServiceName); !strings.Contains(routes, want) {
			t.Errorf("--routes=%s does not list member %d as %s", routes, i, want)
		}
	}
	if !slices.Contains(pod.Containers[0].Args, "--replicas=3") {
		t.Errorf("quota serve runs with %v, without --replicas=3", pod.Containers[0].Args)
	}
}
