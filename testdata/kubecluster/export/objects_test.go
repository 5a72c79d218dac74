package export_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/quotaledger/quota/testdata/kubecluster/kubecluster"
)

var ctx = context.Background()

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

// clusterObjects creates the cluster-scoped kinds the ledger reads: a
// StorageClass, a PriorityClass, a RuntimeClass with overhead, a
// DeviceClass.
func clusterObjects(t *testing.T, c *kubecluster.Cluster) {
	t.Helper()
	_, err := c.Client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "example.com/fast"}, metav1.CreateOptions{})
	must(t, err)
	_, err = c.Client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}, metav1.CreateOptions{})
	must(t, err)
	_, err = c.Client.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata",
		Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("64Mi")}}}, metav1.CreateOptions{})
	must(t, err)
	_, err = c.Client.ResourceV1().DeviceClasses().Create(ctx, &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}, metav1.CreateOptions{})
	must(t, err)
}

// namespaceObjects creates namespace ns with a quota tracking every
// resource the test's objects charge, a LimitRange, and some of every
// namespaced kind.
func namespaceObjects(t *testing.T, c *kubecluster.Cluster, ns string, n *counter) {
	t.Helper()
	c.CreateNamespace(t, ns)
	hard := corev1.ResourceList{
		"pods": q("100"), "requests.cpu": q("100"), "requests.memory": q("100Gi"), "limits.cpu": q("100"), "limits.memory": q("100Gi"),
		"services": q("100"), "services.loadbalancers": q("10"), "services.nodeports": q("10"),
		"persistentvolumeclaims": q("10"), "requests.storage": q("1Ti"), "fast.storageclass.storage.k8s.io/requests.storage": q("1Ti"),
		"configmaps": q("100"), "secrets": q("100"), "replicationcontrollers": q("10"), "resourcequotas": q("10"),
		"count/serviceaccounts": q("100"), "count/limitranges": q("10"), "count/resourceclaims.resource.k8s.io": q("10"),
		"count/widgets.example.com": q("10"), "count/pods": q("100"),
	}
	_, err := c.Client.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
	must(t, err)
	_, err = c.Client.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "terminating"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": q("10"), "requests.cpu": q("10")}, Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}}}, metav1.CreateOptions{})
	must(t, err)
	_, err = c.Client.CoreV1().LimitRanges(ns).Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default: corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("2Gi")}}}}}, metav1.CreateOptions{})
	must(t, err)
	for range 2 {
		createPod(t, c, ns, n, "")
	}
	createPod(t, c, ns, n, "kata")
	createOthers(t, c, ns, n)
}

// createPod creates a pod with requests (and, through the LimitRange,
// default limits), an init container, and runtimeClass when given.
func createPod(t *testing.T, c *kubecluster.Cluster, ns string, n *counter, runtimeClass string) string {
	t.Helper()
	name := n.next("pod")
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			PriorityClassName: "high",
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("700m"), corev1.ResourceMemory: q("1Gi")}}}},
			Containers: []corev1.Container{{Name: "app", Image: "busybox",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("250m"), corev1.ResourceMemory: q("128Mi")}}}},
		}}
	if runtimeClass != "" {
		p.Spec.RuntimeClassName = &runtimeClass
	}
	_, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	must(t, err)
	return name
}

// createOthers creates one of each other namespaced kind.
func createOthers(t *testing.T, c *kubecluster.Cluster, ns string, n *counter) {
	t.Helper()
	class := "fast"
	_, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: n.next("claim")},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q("5Gi")}}}}, metav1.CreateOptions{})
	must(t, err)
	_, err = c.Client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: n.next("lb")},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	must(t, err)
	_, err = c.Client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: n.next("np")},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}, {Port: 443, Name: "https"}}}}, metav1.CreateOptions{})
	if err != nil {
		// Two ports need names.
		_, err = c.Client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: n.next("np")},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80, Name: "http"}, {Port: 443, Name: "https"}}}}, metav1.CreateOptions{})
	}
	must(t, err)
	_, err = c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n.next("cm")}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	must(t, err)
	_, err = c.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: n.next("secret")}, StringData: map[string]string{"password": "hunter2"}}, metav1.CreateOptions{})
	must(t, err)
	zero := int32(0)
	_, err = c.Client.CoreV1().ReplicationControllers(ns).Create(ctx, &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: n.next("rc")},
		Spec: corev1.ReplicationControllerSpec{Replicas: &zero, Selector: map[string]string{"rc": "x"},
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"rc": "x"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}, metav1.CreateOptions{})
	must(t, err)
	_, err = c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: n.next("sa")}}, metav1.CreateOptions{})
	must(t, err)
	_, err = c.Client.ResourceV1().ResourceClaims(ns).Create(ctx, &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: n.next("claim")},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu"}}}}}}, metav1.CreateOptions{})
	must(t, err)
}

// mutate updates and deletes objects of ns and creates others: a pod ends
// (Succeeded), a pod and a ConfigMap and a Secret go, a LoadBalancer
// becomes a ClusterIP, the quota's hard changes, new objects come.
func mutate(t *testing.T, c *kubecluster.Cluster, ns string, n *counter) {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	must(t, err)
	if len(pods.Items) >= 2 {
		p := pods.Items[0]
		p.Status.Phase = corev1.PodSucceeded
		_, err := c.Client.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{})
		must(t, err)
		must(t, c.Client.CoreV1().Pods(ns).Delete(ctx, pods.Items[1].Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
	}
	cms, err := c.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	must(t, err)
	for _, cm := range cms.Items {
		if cm.Name != "kube-root-ca.crt" {
			must(t, c.Client.CoreV1().ConfigMaps(ns).Delete(ctx, cm.Name, metav1.DeleteOptions{}))
			break
		}
	}
	secrets, err := c.Client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	must(t, err)
	if len(secrets.Items) > 0 {
		must(t, c.Client.CoreV1().Secrets(ns).Delete(ctx, secrets.Items[0].Name, metav1.DeleteOptions{}))
	}
	services, err := c.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	must(t, err)
	for _, s := range services.Items {
		if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
			s.Spec.Type = corev1.ServiceTypeClusterIP
			for i := range s.Spec.Ports {
				s.Spec.Ports[i].NodePort = 0
			}
			s.Spec.AllocateLoadBalancerNodePorts = nil
			_, err := c.Client.CoreV1().Services(ns).Update(ctx, &s, metav1.UpdateOptions{})
			must(t, err)
			break
		}
	}
	rq, err := c.Client.CoreV1().ResourceQuotas(ns).Get(ctx, "compute", metav1.GetOptions{})
	must(t, err)
	rq.Spec.Hard["requests.cpu"] = q("50")
	_, err = c.Client.CoreV1().ResourceQuotas(ns).Update(ctx, rq, metav1.UpdateOptions{})
	must(t, err)
	createPod(t, c, ns, n, "kata")
	createOthers(t, c, ns, n)
}

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// createWidgetCRD creates the namespaced custom resource widgets.example.com
// and waits until it is served.
func createWidgetCRD(t *testing.T, c *kubecluster.Cluster) {
	t.Helper()
	ext, err := apiextensionsclient.NewForConfig(c.Config)
	must(t, err)
	preserve := true
	_, err = ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}, metav1.CreateOptions{})
	must(t, err)
	dyn, err := dynamic.NewForConfig(c.Config)
	must(t, err)
	deadline := time.Now().Add(convergeTimeout)
	for {
		if _, err := dyn.Resource(widgets).Namespace("default").List(ctx, metav1.ListOptions{}); err == nil {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("widgets.example.com not served within %s: %v", convergeTimeout, err)
		}
		time.Sleep(pollInterval)
	}
}

func createWidget(t *testing.T, c *kubecluster.Cluster, ns, name string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Config)
	must(t, err)
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": 3}}}
	_, err = dyn.Resource(widgets).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
	must(t, err)
}

func deleteWidget(t *testing.T, c *kubecluster.Cluster, ns, name string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Config)
	must(t, err)
	must(t, dyn.Resource(widgets).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}))
}

// deleteWidgetCRD deletes widgets.example.com, with its objects, and waits
// until it is no longer served.
func deleteWidgetCRD(t *testing.T, c *kubecluster.Cluster) {
	t.Helper()
	ext, err := apiextensionsclient.NewForConfig(c.Config)
	must(t, err)
	must(t, ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "widgets.example.com", metav1.DeleteOptions{}))
	deadline := time.Now().Add(convergeTimeout)
	for {
		_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "widgets.example.com", metav1.GetOptions{})
		if err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("widgets.example.com still there after %s", convergeTimeout)
		}
		time.Sleep(pollInterval)
	}
}
