package export_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/quotaledger/quota/testdata/kubecluster/kubecluster"
)

// TestExportRBAC runs the exporter as a ServiceAccount of an API server
// that authorizes by RBAC. Allowed only its Lease, it says which
// permission it lacks, and neither the leader nor a standby is ready (a
// standby could not lead); once the RBAC of docs/export.md is applied,
// it streams, the standby is ready, and the ledger equals the cluster.
func TestExportRBAC(t *testing.T) {
	c, l, _ := populated(t, []string{"--authorization-mode=RBAC"})
	c.CreateNamespace(t, "quota-system")
	_, err := c.Client.CoreV1().ServiceAccounts("quota-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "quota-export"}}, metav1.CreateOptions{})
	must(t, err)

	objects := docRBAC(t)
	var role, binding []any
	for _, o := range objects {
		switch o.(type) {
		case *rbacv1.Role, *rbacv1.RoleBinding:
			role = append(role, o)
		default:
			binding = append(binding, o)
		}
	}
	apply(t, c, role)
	kubeconfig := serviceAccountKubeconfig(t, c, "quota-system", "quota-export")
	x := startExporter(t, c, l, "exporter-rbac", "--kubeconfig", kubeconfig, "--lease-namespace", "quota-system")
	want := "cannot list pods: forbidden, the exporter's ServiceAccount needs list and watch on pods"
	deadline := time.Now().Add(convergeTimeout)
	for !strings.Contains(x.Logs.String(), want) {
		if time.Now().After(deadline) || x.Exited() {
			t.Fatalf("no %q in the exporter's log\n%s", want, x.Logs)
		}
		time.Sleep(pollInterval)
	}
	if code, _, _ := x.get("/readyz"); code != 503 {
		t.Errorf("/readyz = %d while pods cannot be listed, want 503", code)
	}
	standby := startExporter(t, c, l, "exporter-rbac-standby", "--kubeconfig", kubeconfig, "--lease-namespace", "quota-system")
	deadline = time.Now().Add(convergeTimeout)
	for {
		code, body, _ := standby.get("/readyz")
		if code == 503 && strings.Contains(body, "could not lead") && strings.Contains(body, "list pods") {
			break
		}
		if time.Now().After(deadline) || standby.Exited() {
			t.Fatalf("standby /readyz = %d %q, want 503 saying it could not lead, for want of list pods", code, body)
		}
		time.Sleep(pollInterval)
	}

	apply(t, c, binding)
	x.waitReady(t)
	// The standby checks every 30 seconds that it could lead.
	deadline = time.Now().Add(convergeTimeout)
	for {
		code, body, _ := standby.get("/readyz")
		if code == 200 && strings.Contains(body, "standing by") {
			break
		}
		if time.Now().After(deadline) || standby.Exited() {
			t.Fatalf("standby /readyz = %d %q once the RBAC is applied, want 200 standing by\n%s", code, body, standby.Logs)
		}
		time.Sleep(pollInterval)
	}
	converge(t, c, l, x.Logs)
	// Lists that failed were never in the log: the first that succeeds
	// is the initial one, not a relist after a gap.
	if got := x.metric(t, "quota_export_resyncs_total", `reason="initial"`, `resource="pods"`); got != 1 {
		t.Errorf("initial resyncs of pods = %v, want 1", got)
	}
	if got := x.metric(t, "quota_export_resyncs_total", `reason="gap"`); got != 0 {
		t.Errorf("%v resyncs after a gap, want none", got)
	}
}

// docRBAC reads the RBAC objects of docs/export.md's YAML block.
func docRBAC(t *testing.T) []any {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "export.md"))
	must(t, err)
	_, rest, ok := strings.Cut(string(doc), "```yaml\n")
	if !ok {
		t.Fatal("docs/export.md has no yaml block")
	}
	block, _, _ := strings.Cut(rest, "```")
	var out []any
	for _, part := range strings.Split(block, "\n---\n") {
		var head metav1.TypeMeta
		must(t, yaml.Unmarshal([]byte(part), &head))
		var o any
		switch head.Kind {
		case "ClusterRole":
			o = &rbacv1.ClusterRole{}
		case "ClusterRoleBinding":
			o = &rbacv1.ClusterRoleBinding{}
		case "Role":
			o = &rbacv1.Role{}
		case "RoleBinding":
			o = &rbacv1.RoleBinding{}
		default:
			t.Fatalf("docs/export.md: unexpected kind %q", head.Kind)
		}
		must(t, yaml.UnmarshalStrict([]byte(part), o))
		out = append(out, o)
	}
	if len(out) != 4 {
		t.Fatalf("docs/export.md: %d RBAC objects, want 4", len(out))
	}
	return out
}

func apply(t *testing.T, c *kubecluster.Cluster, objects []any) {
	t.Helper()
	rbac := c.Client.RbacV1()
	for _, o := range objects {
		var err error
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			_, err = rbac.ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = rbac.ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = rbac.Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = rbac.RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}
		must(t, err)
	}
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount ns/name, with a token the API server issues.
func serviceAccountKubeconfig(t *testing.T, c *kubecluster.Cluster, ns, name string) string {
	t.Helper()
	hour := int64(3600)
	tr, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	must(t, err)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.Config.TLSClientConfig.CAData, TLSServerName: c.Config.TLSClientConfig.ServerName}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "sa"}
	kc.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, clientcmd.WriteToFile(*kc, path))
	return path
}
