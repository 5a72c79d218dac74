package credentials

import (
	"bytes"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// written writes a set of credentials at now into a new directory.
func written(t *testing.T, now time.Time) Config {
	t.Helper()
	cfg := Config{Dir: filepath.Join(t.TempDir(), "credentials"), APIServerDir: "/etc/kubernetes/quota-webhook"}
	if err := write(cfg, now); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func readFiles(t *testing.T, dir string, names ...string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = b
	}
	return out
}

func poolOf(t *testing.T, path string) *x509.CertPool {
	t.Helper()
	ca, err := readCertificate(path)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool
}

// TestRenewKeepsTheCAs renews a set 200 days after it was written: the
// CAs, the NATS keys and the API server's files are the same bytes; the
// serving and client pairs are new, expire later, and verify against the
// CAs as they were written, which is what kube-apiserver's caBundle and
// the webhook's --client-ca hold.
func TestRenewKeepsTheCAs(t *testing.T) {
	t0 := time.Now()
	cfg := written(t, t0)
	for _, f := range Files() {
		fi, err := os.Stat(filepath.Join(cfg.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %04o, want 0600", f, fi.Mode().Perm())
		}
	}
	var kept []string
	for _, f := range Files() {
		if !strings.Contains(strings.Join(Renewed(), " "), f) {
			kept = append(kept, f)
		}
	}
	before := readFiles(t, cfg.Dir, Files()...)
	oldServing, err := readCertificate(filepath.Join(cfg.Dir, CertFile))
	if err != nil {
		t.Fatal(err)
	}

	t1 := t0.Add(200 * 24 * time.Hour)
	if err := renew(Config{Dir: cfg.Dir}, t1); err != nil {
		t.Fatal(err)
	}
	after := readFiles(t, cfg.Dir, Files()...)
	for _, f := range kept {
		if !bytes.Equal(before[f], after[f]) {
			t.Errorf("renew changed %s", f)
		}
	}
	for _, f := range Renewed() {
		if bytes.Equal(before[f], after[f]) {
			t.Errorf("renew left %s as it was", f)
		}
	}
	serving, err := readCertificate(filepath.Join(cfg.Dir, CertFile))
	if err != nil {
		t.Fatal(err)
	}
	if !serving.NotAfter.After(oldServing.NotAfter) {
		t.Errorf("renewed serving certificate expires %s, not after the old one's %s", serving.NotAfter, oldServing.NotAfter)
	}
	if _, err := serving.Verify(x509.VerifyOptions{
		DNSName: "quota-webhook.quota-system.svc", Roots: poolOf(t, filepath.Join(cfg.Dir, CAFile)),
		CurrentTime: t1, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		t.Errorf("the renewed serving certificate against the caBundle written first: %v", err)
	}
	client, err := readCertificate(filepath.Join(cfg.Dir, ClientCertFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Verify(x509.VerifyOptions{
		Roots: poolOf(t, filepath.Join(cfg.Dir, ClientCAFile)), CurrentTime: t1, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		t.Errorf("the renewed client certificate against the client CA written first: %v", err)
	}
	// Each CA vouches for its own side only.
	if _, err := client.Verify(x509.VerifyOptions{Roots: poolOf(t, filepath.Join(cfg.Dir, CAFile)), CurrentTime: t1,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("the client certificate verifies against the serving CA")
	}
}

// TestRenewedCertificatesEndWithTheirCA renews shortly before the CAs
// expire: the new certificates end when their CA does, not after.
func TestRenewedCertificatesEndWithTheirCA(t *testing.T) {
	t0 := time.Now()
	cfg := written(t, t0)
	if err := renew(cfg, t0.Add(CAValidity-100*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{{CAFile, CertFile}, {ClientCAFile, ClientCertFile}} {
		ca, err := readCertificate(filepath.Join(cfg.Dir, pair[0]))
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := readCertificate(filepath.Join(cfg.Dir, pair[1]))
		if err != nil {
			t.Fatal(err)
		}
		if !leaf.NotAfter.Equal(ca.NotAfter) {
			t.Errorf("%s expires %s, want %s as its CA %s", pair[1], leaf.NotAfter, ca.NotAfter, pair[0])
		}
	}
}

// TestRenewRefuses names each reason Renew does not sign, and checks that
// nothing was written.
func TestRenewRefuses(t *testing.T) {
	t0 := time.Now()
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, dir string)
		at    time.Time
		want  error
		says  string
	}{
		{"without the CA key, as credentials written before it was kept", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, CAKeyFile)); err != nil {
				t.Fatal(err)
			}
		}, t0, ErrNoCAKey, "quota credentials NEWDIR"},
		{"without the client CA key", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, ClientCAKeyFile)); err != nil {
				t.Fatal(err)
			}
		}, t0, ErrNoCAKey, ClientCAKeyFile},
		{"a CA key others may read", func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, CAKeyFile), 0o644); err != nil {
				t.Fatal(err)
			}
		}, t0, ErrCAKeyExposed, "chmod 600"},
		{"a CA key of another CA", func(t *testing.T, dir string) {
			b, err := os.ReadFile(filepath.Join(dir, ClientCAKeyFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, CAKeyFile), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, t0, ErrCAKeyMismatch, CAKeyFile},
		{"a CA about to expire", func(*testing.T, string) {}, t0.Add(CAValidity - 10*24*time.Hour), ErrCAExpiring, "write a new set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := written(t, t0)
			tc.spoil(t, cfg.Dir)
			before := readFiles(t, cfg.Dir, Renewed()...)
			err := renew(cfg, tc.at)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("renew: %v; want %v saying %q", err, tc.want, tc.says)
			}
			after := readFiles(t, cfg.Dir, Renewed()...)
			for f := range before {
				if !bytes.Equal(before[f], after[f]) {
					t.Errorf("a refused renew changed %s", f)
				}
			}
		})
	}
}

// TestWriteRefusesExistingCredentials: a second Write into the same
// directory would lock out the components holding the first keys.
func TestWriteRefusesExistingCredentials(t *testing.T) {
	cfg := written(t, time.Now())
	if err := Write(cfg); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "--renew") {
		t.Fatalf("a second Write: %v; want %v pointing to --renew", err, ErrExists)
	}
	if err := Write(Config{Dir: t.TempDir(), APIServerDir: "etc/quota"}); err == nil || !strings.Contains(err.Error(), "not absolute") {
		t.Errorf("a relative API server directory: %v; want refused", err)
	}
}

// TestAPIServerFiles reads the kubeconfig and the admission configuration
// as kube-apiserver does: the user is named as the Service's host and
// presents the client pair from the API server's directory, which the
// admission configuration names by absolute path.
func TestAPIServerFiles(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), Namespace: "ledger", Service: "hook", APIServerDir: "/srv/quota"}
	if err := Write(cfg); err != nil {
		t.Fatal(err)
	}
	var kc struct {
		APIVersion string `json:"apiVersion"`
		Kind       string
		Users      []struct {
			Name string
			User map[string]string
		}
	}
	files := readFiles(t, cfg.Dir, KubeconfigFile, AdmissionConfigFile)
	if err := yaml.UnmarshalStrict(files[KubeconfigFile], &kc); err != nil {
		t.Fatal(err)
	}
	if kc.Kind != "Config" || len(kc.Users) != 1 || kc.Users[0].Name != "hook.ledger.svc" ||
		kc.Users[0].User["client-certificate"] != "/srv/quota/"+ClientCertFile || kc.Users[0].User["client-key"] != "/srv/quota/"+ClientKeyFile {
		t.Errorf("kubeconfig:\n%s", files[KubeconfigFile])
	}
	var ac struct {
		Kind    string
		Plugins []struct {
			Name          string
			Configuration struct {
				APIVersion     string `json:"apiVersion"`
				Kind           string
				KubeConfigFile string `json:"kubeConfigFile"`
			}
		}
	}
	if err := yaml.Unmarshal(files[AdmissionConfigFile], &ac); err != nil {
		t.Fatal(err)
	}
	if ac.Kind != "AdmissionConfiguration" || len(ac.Plugins) != 1 || ac.Plugins[0].Name != "ValidatingAdmissionWebhook" ||
		ac.Plugins[0].Configuration.Kind != "WebhookAdmissionConfiguration" || ac.Plugins[0].Configuration.KubeConfigFile != "/srv/quota/"+KubeconfigFile {
		t.Errorf("admission configuration:\n%s", files[AdmissionConfigFile])
	}
}
