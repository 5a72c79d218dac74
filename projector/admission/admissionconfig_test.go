package admission

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/ledger/quota"
)

// The concept page's example: "cluster-services" pods only where a quota
// covers them.
const clusterServicesConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: "ResourceQuota"
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ResourceQuotaConfiguration
    limitedResources:
    - resource: pods
      matchScopes:
      - scopeName: PriorityClass
        operator: In
        values: ["cluster-services"]
`

var clusterServices = []quota.LimitedResource{{Resource: "pods", MatchScopes: []quota.ScopeRequirement{
	{ScopeName: quota.ScopePriorityClass, Operator: quota.OperatorIn, Values: []string{"cluster-services"}}}}}

var gpus = []quota.LimitedResource{{Resource: "pods", MatchContains: []string{"nvidia.com/gpu"}}}

func TestLoadLimitedResources(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string // the first is loaded
		want  []quota.LimitedResource
		err   string // a part of the error; "" for none
	}{
		{name: "inline", files: map[string]string{"admission.yaml": clusterServicesConfig}, want: clusterServices},
		{name: "plugin file by relative path, deprecated kind", files: map[string]string{
			"admission.yaml":  "apiVersion: apiserver.k8s.io/v1alpha1\nkind: AdmissionConfiguration\nplugins:\n- name: LimitRanger\n  path: missing.yaml\n- name: ResourceQuota\n  path: conf/quota.yaml\n",
			"conf/quota.yaml": "apiVersion: resourcequota.admission.k8s.io/v1beta1\nkind: Configuration\nlimitedResources:\n- resource: pods\n  matchContains: [\"nvidia.com/gpu\"]\n",
		}, want: gpus},
		{name: "plugin configuration alone, JSON", files: map[string]string{
			"quota.json": `{"apiVersion":"apiserver.config.k8s.io/v1","kind":"ResourceQuotaConfiguration","limitedResources":[{"resource":"pods","matchContains":["nvidia.com/gpu"]}]}`,
		}, want: gpus},
		{name: "v1 kind Configuration", files: map[string]string{
			"quota.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: Configuration\nlimitedResources:\n- resource: pods\n  matchContains: [nvidia.com/gpu]\n",
		}, want: gpus},
		{name: "no ResourceQuota plugin", files: map[string]string{
			"admission.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventRateLimit\n  path: eventconfig.yaml\n",
		}},
		{name: "misspelt field", files: map[string]string{
			"admission.yaml": strings.Replace(clusterServicesConfig, "limitedResources", "limitedResource", 1),
		}, err: `plugins[0] (ResourceQuota) configuration: json: unknown field "limitedResource"`},
		{name: "resource missing", files: map[string]string{
			"quota.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources:\n- matchContains: [gpu]\n",
		}, err: "limitedResources[0].resource: Required value"},
		{name: "another kind", files: map[string]string{
			"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n",
		}, err: `apiVersion "v1" kind "Pod" is neither`},
		{name: "plugin file missing", files: map[string]string{
			"admission.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: ResourceQuota\n  path: gone.yaml\n",
		}, err: "plugins[0] (ResourceQuota) path"},
		{name: "not YAML", files: map[string]string{"admission.yaml": "plugins: [\n"}, err: "admission.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var first string
			for name, text := range tt.files {
				path := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(name, "admission") || first == "" && !strings.Contains(name, "/") {
					first = path
				}
			}
			got, err := LoadLimitedResources(first)
			if tt.err != "" {
				if err == nil || !errors.Is(err, ErrAdmissionConfig) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one wrapping ErrAdmissionConfig and containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if _, err := LoadLimitedResources(filepath.Join(t.TempDir(), "none.yaml")); !errors.Is(err, ErrAdmissionConfig) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// TestResponderAppliesLimitedResources checks that a responder configured
// with limitedResources refuses, on dry runs and reserving creates alike,
// what Kubernetes' ResourceQuota plugin refuses under the same
// configuration, and lets the same pods through where a quota covers them.
func TestResponderAppliesLimitedResources(t *testing.T) {
	srv, _, _ := ledgertest.StartServer(t)
	limited := append(append([]quota.LimitedResource(nil), clusterServices...), gpus...)
	r := startReplica(t, srv.ClientURL(), Config{Limited: limited})
	upsert(t, r.stream, quotaManifest("covered", "services", map[string]string{"pods": "10", "requests.nvidia.com/gpu": "4"}))
	// The PriorityClass scope of a quota in "covered".
	upsert(t, r.stream, `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"cluster-services","namespace":"covered","uid":"uid-quota-cs"},"spec":{"hard":{"pods":"10"},"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"In","values":["cluster-services"]}]}}}`)
	upsert(t, r.stream, quotaManifest("plain", "pods", map[string]string{"pods": "10"}))
	upsert(t, r.stream, `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"cluster-services","uid":"uid-pc"},"value":1000000}`)
	r.catchUp(t)

	critical := func(ns, name string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"spec":{"priorityClassName":"cluster-services","containers":[{"name":"c","image":"i"}]}}`
	}
	gpu := func(ns, name string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"spec":{"containers":[{"name":"c","image":"i","resources":{"requests":{"nvidia.com/gpu":"1"},"limits":{"nvidia.com/gpu":"1"}}}]}}`
	}
	for _, dryRun := range []bool{true, false} {
		suffix := "-reserve"
		if dryRun {
			suffix = "-dry"
		}
		cases := []struct {
			ns, pod string
			code    int32
			message string
		}{
			{"plain", critical("plain", "critical"+suffix), 500, `insufficient quota to match these scopes: [{PriorityClass In [cluster-services]}]`},
			{"plain", gpu("plain", "gpu"+suffix), 403, `pods "gpu` + suffix + `" is forbidden: insufficient quota to consume: requests.nvidia.com/gpu`},
			{"plain", podManifest("plain", "web"+suffix, ""), 0, ""},
			{"covered", critical("covered", "critical"+suffix), 0, ""},
			{"covered", gpu("covered", "gpu"+suffix), 0, ""},
		}
		for i, c := range cases {
			resp := ask(t, r.client, c.ns, review(fmt.Sprintf("uid%s-%d", suffix, i), admissionv1.Create, c.ns, c.pod, "", dryRun))
			if c.code == 0 {
				if !resp.Allowed {
					t.Errorf("dry run %v, %s: refused: %+v", dryRun, c.pod, resp.Result)
				}
				continue
			}
			if resp.Allowed || resp.Result == nil || resp.Result.Code != c.code || resp.Result.Message != c.message {
				t.Errorf("dry run %v, %s: got %+v, want %d %q", dryRun, c.pod, resp.Result, c.code, c.message)
			}
		}
	}
}
