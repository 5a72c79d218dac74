package credentials

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// Files kube-apiserver reads, from Config.APIServerDir on each
// control-plane host.
const (
	// KubeconfigFile tells kube-apiserver which client pair to present to
	// the webhook's Service.
	KubeconfigFile = "apiserver-kubeconfig.yaml"
	// AdmissionConfigFile is the AdmissionConfiguration that points the
	// ValidatingAdmissionWebhook plugin at KubeconfigFile
	// (--admission-control-config-file).
	AdmissionConfigFile = "admission-config.yaml"
)

// kubeconfig is the kubeconfig of kube-apiserver's webhook client: a user
// named as the Service's host (port 443 goes unnamed), whose client pair
// the API server reads from dir. Given as files, the pair is read again
// when the files change: a renewal needs no restart of the API server.
func kubeconfig(dir, host string) []byte {
	return fmt.Appendf(nil, `# kube-apiserver's client certificate for the quota webhook, written by
# 'quota credentials'. The admission configuration names this file; the user's
# name is the webhook Service's host, which kube-apiserver matches.
apiVersion: v1
kind: Config
users:
- name: %s
  user:
    client-certificate: %s
    client-key: %s
`, strconv.Quote(host), strconv.Quote(filepath.Join(dir, ClientCertFile)), strconv.Quote(filepath.Join(dir, ClientKeyFile)))
}

// admissionConfig is an AdmissionConfiguration whose ValidatingAdmissionWebhook
// plugin reads the kubeconfig in dir. kube-apiserver requires the path to
// be absolute.
func admissionConfig(dir string) []byte {
	return fmt.Appendf(nil, `# kube-apiserver --admission-control-config-file: the validating webhooks'
# client credentials, from the kubeconfig next to it. Written by
# 'quota credentials'; merge its plugin into an admission configuration you
# already have.
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %s
`, strconv.Quote(filepath.Join(dir, KubeconfigFile)))
}
