package quota

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Resource names quota reads and charges, as Kubernetes spells them.
const (
	ResourcePods                   = "pods"
	ResourceCPU                    = "cpu"
	ResourceMemory                 = "memory"
	ResourceEphemeralStorage       = "ephemeral-storage"
	ResourceRequestsCPU            = "requests.cpu"
	ResourceRequestsMemory         = "requests.memory"
	ResourceRequestsEphemeral      = "requests.ephemeral-storage"
	ResourceLimitsCPU              = "limits.cpu"
	ResourceLimitsMemory           = "limits.memory"
	ResourceLimitsEphemeral        = "limits.ephemeral-storage"
	ResourceStorage                = "storage"
	ResourceRequestsStorage        = "requests.storage"
	ResourcePersistentVolumeClaims = "persistentvolumeclaims"
	ResourceServices               = "services"
	ResourceServicesLoadBalancers  = "services.loadbalancers"
	ResourceServicesNodePorts      = "services.nodeports"
	ResourceSecrets                = "secrets"
	ResourceConfigMaps             = "configmaps"
	ResourceReplicationControllers = "replicationcontrollers"
	ResourceQuotas                 = "resourcequotas"

	hugePagesPrefix         = "hugepages-"
	requestsPrefix          = "requests."
	requestsHugePagesPrefix = "requests.hugepages-"
	storageClassSuffix      = ".storageclass.storage.k8s.io/"
	countPrefix             = "count/"
	defaultNamespacePrefix  = "kubernetes.io/"
)

// Scope names of ResourceQuota spec.scopes and scopeSelector.
const (
	ScopeTerminating               = "Terminating"
	ScopeNotTerminating            = "NotTerminating"
	ScopeBestEffort                = "BestEffort"
	ScopeNotBestEffort             = "NotBestEffort"
	ScopePriorityClass             = "PriorityClass"
	ScopeCrossNamespacePodAffinity = "CrossNamespacePodAffinity"
	ScopeVolumeAttributesClass     = "VolumeAttributesClass"
)

// Scope selector operators.
const (
	OperatorIn           = "In"
	OperatorNotIn        = "NotIn"
	OperatorExists       = "Exists"
	OperatorDoesNotExist = "DoesNotExist"
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// podResources are the names the pod evaluator matches exactly.
var podResources = setOf(countPrefix+"pods", ResourceCPU, ResourceMemory, ResourceEphemeralStorage,
	ResourceRequestsCPU, ResourceRequestsMemory, ResourceRequestsEphemeral,
	ResourceLimitsCPU, ResourceLimitsMemory, ResourceLimitsEphemeral, ResourcePods)

// mustSpecify are the resources every container must state when a quota
// tracks them; Kubernetes keeps this list closed for compatibility.
var mustSpecify = setOf(ResourceCPU, ResourceMemory, ResourceRequestsCPU, ResourceRequestsMemory,
	ResourceLimitsCPU, ResourceLimitsMemory)

var standardResources = setOf(ResourceCPU, ResourceMemory, ResourceEphemeralStorage,
	ResourceRequestsCPU, ResourceRequestsMemory, ResourceRequestsEphemeral,
	ResourceLimitsCPU, ResourceLimitsMemory, ResourceLimitsEphemeral, ResourcePods, ResourceQuotas,
	ResourceServices, ResourceReplicationControllers, ResourceSecrets, ResourceConfigMaps,
	ResourcePersistentVolumeClaims, ResourceStorage, ResourceRequestsStorage,
	ResourceServicesNodePorts, ResourceServicesLoadBalancers)

var standardQuotaResources = setOf(ResourceCPU, ResourceMemory, ResourceEphemeralStorage,
	ResourceRequestsCPU, ResourceRequestsMemory, ResourceRequestsStorage, ResourceRequestsEphemeral,
	ResourceLimitsCPU, ResourceLimitsMemory, ResourceLimitsEphemeral, ResourcePods, ResourceQuotas,
	ResourceServices, ResourceReplicationControllers, ResourceSecrets, ResourcePersistentVolumeClaims,
	ResourceConfigMaps, ResourceServicesNodePorts, ResourceServicesLoadBalancers)

var integerResources = setOf(ResourcePods, ResourceQuotas, ResourceServices, ResourceReplicationControllers,
	ResourceSecrets, ResourceConfigMaps, ResourcePersistentVolumeClaims, ResourceServicesNodePorts,
	ResourceServicesLoadBalancers)

var standardScopes = setOf(ScopeTerminating, ScopeNotTerminating, ScopeBestEffort, ScopeNotBestEffort,
	ScopePriorityClass, ScopeCrossNamespacePodAffinity, ScopeVolumeAttributesClass)

var podComputeQuotaResources = setOf(ResourceCPU, ResourceMemory, ResourceLimitsCPU, ResourceLimitsMemory,
	ResourceRequestsCPU, ResourceRequestsMemory)

var pvcQuotaResources = setOf(ResourcePersistentVolumeClaims, ResourceRequestsStorage)

func isHugePages(name string) bool { return strings.HasPrefix(name, hugePagesPrefix) }

func isQuotaHugePages(name string) bool {
	return strings.HasPrefix(name, hugePagesPrefix) || strings.HasPrefix(name, requestsHugePagesPrefix)
}

func isStandardResourceName(name string) bool {
	return standardResources[name] || isQuotaHugePages(name)
}

func isStandardQuotaResourceName(name string) bool {
	return standardQuotaResources[name] || isQuotaHugePages(name)
}

// isNativeResource reports whether name is in the kubernetes.io domain;
// unqualified names are.
func isNativeResource(name string) bool {
	return !strings.Contains(name, "/") || strings.Contains(name, defaultNamespacePrefix)
}

// isExtendedResourceName reports whether name is an extended resource as
// a container would request it (example.com/gpu).
func isExtendedResourceName(name string) bool {
	if isNativeResource(name) || strings.HasPrefix(name, requestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(requestsPrefix+name)) == 0
}

// isExtendedResourceNameForQuota reports whether name is an extended
// resource as a quota names it (requests.example.com/gpu).
func isExtendedResourceNameForQuota(name string) bool {
	return !isNativeResource(name) && strings.HasPrefix(name, requestsPrefix)
}

func isIntegerResourceName(name string) bool {
	return integerResources[name] || isExtendedResourceName(name)
}

// scopeValidForResource reports whether a quota with scope may track a
// standard resource.
func scopeValidForResource(scope, name string) bool {
	switch scope {
	case ScopeTerminating, ScopeNotTerminating, ScopeNotBestEffort, ScopePriorityClass, ScopeCrossNamespacePodAffinity:
		return name == ResourcePods || podComputeQuotaResources[name]
	case ScopeBestEffort:
		return name == ResourcePods
	case ScopeVolumeAttributesClass:
		return pvcQuotaResources[name]
	default:
		return true
	}
}

// legacyCountNames are the object counts that predate count/<resource>.
var legacyCountNames = map[string]string{
	"pods":                   ResourcePods,
	"services":               ResourceServices,
	"persistentvolumeclaims": ResourcePersistentVolumeClaims,
	"secrets":                ResourceSecrets,
	"configmaps":             ResourceConfigMaps,
	"replicationcontrollers": ResourceReplicationControllers,
	"resourcequotas":         ResourceQuotas,
}

// evaluatorProduces reports whether the evaluator for resource (a
// group-qualified plural) produces the resource name.
func evaluatorProduces(resource, name string) bool {
	switch resource {
	case "pods":
		return podResources[name] || strings.HasPrefix(name, hugePagesPrefix) ||
			strings.HasPrefix(name, requestsHugePagesPrefix) || isExtendedResourceNameForQuota(name)
	case "persistentvolumeclaims":
		if name == countPrefix+resource || pvcQuotaResources[name] {
			return true
		}
		return strings.HasSuffix(name, storageClassSuffix+ResourcePersistentVolumeClaims) ||
			strings.HasSuffix(name, storageClassSuffix+ResourceRequestsStorage)
	case "services":
		return name == countPrefix+resource || name == ResourceServices ||
			name == ResourceServicesLoadBalancers || name == ResourceServicesNodePorts
	}
	if name == countPrefix+resource {
		return true
	}
	legacy, ok := legacyCountNames[resource]
	return ok && name == legacy
}
