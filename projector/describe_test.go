package projector

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDescribePrintsUsedInHardsFormat holds the describe text to kubectl's
// rule: a used quantity whose format differs from its hard's is printed as
// a whole number in hard's format, so decimal megabytes under a binary
// quota print as bytes and a binary sum under a decimal one likewise,
// while the JSON keeps the API server's strings.
func TestDescribePrintsUsedInHardsFormat(t *testing.T) {
	q := resource.MustParse
	list := &corev1.ResourceQuotaList{Items: []corev1.ResourceQuota{{
		ObjectMeta: metav1.ObjectMeta{Name: "mixed", Namespace: "team"},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{"requests.memory": q("1Gi"), "limits.memory": q("2G"), "requests.cpu": q("2"), "pods": q("5"), "requests.storage": q("10Gi")},
			Used: corev1.ResourceList{"requests.memory": q("500M"), "limits.memory": q("1536Mi"), "requests.cpu": q("1500m"), "pods": q("1")},
		},
	}}}
	var buf bytes.Buffer
	if err := WriteDescribe(&buf, list); err != nil {
		t.Fatal(err)
	}
	want := `Name:             mixed
Namespace:        team
Resource          Used        Hard
--------          ----        ----
limits.memory     1610612736  2G
pods              1           5
requests.cpu      1500m       2
requests.memory   500000000   1Gi
requests.storage  0           10Gi
`
	if buf.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", buf.String(), want)
	}
}
