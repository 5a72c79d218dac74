package admission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/quotaledger/quota/ledger/quota"
)

// ErrAdmissionConfig reports an admission configuration file that cannot
// be used.
var ErrAdmissionConfig = errors.New("admission configuration")

// The kinds LoadLimitedResources reads, by apiVersion.
var (
	admissionConfigurationVersions = map[string]bool{
		"apiserver.config.k8s.io/v1": true,
		"apiserver.k8s.io/v1alpha1":  true, // deprecated in Kubernetes 1.17
	}
	resourceQuotaConfigurationKinds = map[string]map[string]bool{
		"apiserver.config.k8s.io/v1":              {"ResourceQuotaConfiguration": true, "Configuration": true},
		"resourcequota.admission.k8s.io/v1beta1":  {"Configuration": true}, // deprecated in Kubernetes 1.17
		"resourcequota.admission.k8s.io/v1alpha1": {"Configuration": true},
	}
)

// resourceQuotaPlugin is the name of the ResourceQuota admission plugin in
// an AdmissionConfiguration.
const resourceQuotaPlugin = "ResourceQuota"

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

type admissionConfiguration struct {
	typeMeta
	Plugins []struct {
		Name          string          `json:"name"`
		Path          string          `json:"path"`
		Configuration json.RawMessage `json:"configuration"`
	} `json:"plugins"`
}

type resourceQuotaConfiguration struct {
	typeMeta
	LimitedResources []quota.LimitedResource `json:"limitedResources"`
}

// LoadLimitedResources reads the ResourceQuota admission plugin's
// limitedResources from the file kube-apiserver takes as
// --admission-control-config-file: an AdmissionConfiguration whose
// ResourceQuota plugin entry holds its configuration inline or names the
// file that does (a relative path is taken from the configuration file's
// directory, as kube-apiserver takes it), or that plugin configuration on
// its own. Either may be YAML or JSON. An AdmissionConfiguration without a
// ResourceQuota entry limits nothing.
//
// Fields are read strictly: a misspelt field is an error rather than a
// limit silently missing. Every limited resource must name its resource,
// as Kubernetes' validation requires.
func LoadLimitedResources(path string) ([]quota.LimitedResource, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAdmissionConfig, err)
	}
	js, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrAdmissionConfig, path, err)
	}
	var tm typeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrAdmissionConfig, path, err)
	}
	if tm.Kind == "AdmissionConfiguration" && admissionConfigurationVersions[tm.APIVersion] {
		return limitedFromAdmissionConfiguration(path, js)
	}
	limited, err := limitedFromPluginConfiguration(js)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrAdmissionConfig, path, err)
	}
	return limited, nil
}

func limitedFromAdmissionConfiguration(path string, js []byte) ([]quota.LimitedResource, error) {
	var ac admissionConfiguration
	if err := decodeStrict(js, &ac); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrAdmissionConfig, path, err)
	}
	for i, p := range ac.Plugins {
		if p.Name != resourceQuotaPlugin {
			continue
		}
		if len(p.Configuration) > 0 && !bytes.Equal(p.Configuration, []byte("null")) {
			limited, err := limitedFromPluginConfiguration(p.Configuration)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: plugins[%d] (%s) configuration: %w", ErrAdmissionConfig, path, i, p.Name, err)
			}
			return limited, nil
		}
		if p.Path == "" {
			return nil, nil
		}
		pluginPath := p.Path
		if !filepath.IsAbs(pluginPath) {
			pluginPath = filepath.Join(filepath.Dir(path), pluginPath)
		}
		b, err := os.ReadFile(pluginPath)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: plugins[%d] (%s) path: %w", ErrAdmissionConfig, path, i, p.Name, err)
		}
		pjs, err := yaml.YAMLToJSON(b)
		if err == nil {
			var limited []quota.LimitedResource
			if limited, err = limitedFromPluginConfiguration(pjs); err == nil {
				return limited, nil
			}
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrAdmissionConfig, pluginPath, err)
	}
	return nil, nil
}

// limitedFromPluginConfiguration reads the ResourceQuota plugin's own
// configuration.
func limitedFromPluginConfiguration(js []byte) ([]quota.LimitedResource, error) {
	var tm typeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, err
	}
	if !resourceQuotaConfigurationKinds[tm.APIVersion][tm.Kind] {
		return nil, fmt.Errorf("apiVersion %q kind %q is neither an AdmissionConfiguration nor the ResourceQuota plugin's configuration (apiserver.config.k8s.io/v1 ResourceQuotaConfiguration)", tm.APIVersion, tm.Kind)
	}
	var c resourceQuotaConfiguration
	if err := decodeStrict(js, &c); err != nil {
		return nil, err
	}
	for i, l := range c.LimitedResources {
		if l.Resource == "" {
			return nil, fmt.Errorf("limitedResources[%d].resource: Required value", i)
		}
	}
	return c.LimitedResources, nil
}

func decodeStrict(js []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(js))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("more than one document")
	}
	return nil
}
