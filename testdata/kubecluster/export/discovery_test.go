package export_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

// TestExportPartialDiscovery registers an aggregated API whose server does
// not exist, so that discovery of its group fails: the exporter says so,
// the other streams go on, and a custom resource created afterwards is
// still found and streamed.
func TestExportPartialDiscovery(t *testing.T) {
	c, l, n := populated(t, nil)
	x := startExporter(t, c, l, "exporter-0")
	x.waitReady(t)
	converge(t, c, l, x.Logs)

	agg, err := aggregator.NewForConfig(c.Config)
	must(t, err)
	port := int32(443)
	_, err = agg.ApiregistrationV1().APIServices().Create(ctx, &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1.broken.example.com"},
		Spec: apiregistrationv1.APIServiceSpec{Group: "broken.example.com", Version: "v1",
			Service:               &apiregistrationv1.ServiceReference{Namespace: "default", Name: "nowhere", Port: &port},
			InsecureSkipTLSVerify: true, GroupPriorityMinimum: 100, VersionPriority: 100},
	}, metav1.CreateOptions{})
	must(t, err)
	deadline := time.Now().Add(convergeTimeout)
	for !strings.Contains(x.Logs.String(), "discovery of an API group failed") {
		if time.Now().After(deadline) {
			t.Fatalf("the exporter did not report the failed group\n%s", x.Logs)
		}
		time.Sleep(pollInterval)
	}
	mutate(t, c, "team-a", n)
	createWidgetCRD(t, c)
	createWidget(t, c, "team-a", "w1")
	converge(t, c, l, x.Logs)
}
