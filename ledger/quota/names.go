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

	// resourceClaims is the resource of dynamic resource allocation's
	// ResourceClaims, and deviceClassSuffix ends the name of the devices
	// a quota allows claims of one DeviceClass to ask for.
	resourceClaims    = "resourceclaims.resource.k8s.io"
	deviceClassSuffix = ".deviceclass.resource.k8s.io/devices"

	// deviceClassResourcePrefix begins the extended resource a container
	// may request of a DeviceClass by its name alone
	// (deviceclass.resource.kubernetes.io/gpu, DRAExtendedResource, on
	// by default since v1.36); a pod is charged it as requests.<name>.
	deviceClassResourcePrefix = "deviceclass.resource.kubernetes.io/"
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

var standardQuotaResources = setOf(ResourceCPU, ResourceMemory, ResourceEphemeralStorage,
	ResourceRequestsCPU, ResourceRequestsMemory, ResourceRequestsStorage, ResourceRequestsEphemeral,
	ResourceLimitsCPU, ResourceLimitsMemory, ResourceLimitsEphemeral, ResourcePods, ResourceQuotas,
	ResourceServices, ResourceReplicationControllers, ResourceSecrets, ResourcePersistentVolumeClaims,
	ResourceConfigMaps, ResourceServicesNodePorts, ResourceServicesLoadBalancers)

// isStandardResourceName: the standard quota resources, and storage.
func isStandardResourceName(name string) bool {
	return standardQuotaResources[name] || name == ResourceStorage || isQuotaHugePages(name)
}

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
// resource as a quota names it (requests.example.com/gpu), a DeviceClass's
// included (requests.deviceclass.resource.kubernetes.io/gpu).
func isExtendedResourceNameForQuota(name string) bool {
	rest, ok := strings.CutPrefix(name, requestsPrefix)
	return ok && (!isNativeResource(name) || strings.HasPrefix(rest, deviceClassResourcePrefix))
}

// isChargedAsExtended reports whether a pod requesting name is charged
// requests.<name> as for an extended resource: an extended resource, or
// one of a DeviceClass.
func isChargedAsExtended(name string) bool {
	return isExtendedResourceName(name) || strings.HasPrefix(name, deviceClassResourcePrefix)
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

// legacyCounts are the resources whose object count predates
// count/<resource>: it is named by the resource itself.
var legacyCounts = setOf(ResourcePods, ResourceServices, ResourcePersistentVolumeClaims, ResourceSecrets,
	ResourceConfigMaps, ResourceReplicationControllers, ResourceQuotas)

// ignoredResources are the resources Kubernetes' quota leaves alone:
// virtual ones that are never stored, and events. No quota is charged for
// them, and their admissions are not evaluated.
var ignoredResources = setOf("bindings", "componentstatuses", "events", "events.events.k8s.io",
	"tokenreviews.authentication.k8s.io", "selfsubjectreviews.authentication.k8s.io",
	"subjectaccessreviews.authorization.k8s.io", "selfsubjectaccessreviews.authorization.k8s.io",
	"localsubjectaccessreviews.authorization.k8s.io", "selfsubjectrulesreviews.authorization.k8s.io")

// servedResources are the namespaced resources a v1.36 API server serves
// by default (its GA APIs) that quota counts: those whose count/<resource>
// the quota controller keeps in every quota that names it.
var servedResources = setOf("pods", "services", "configmaps", "secrets", "serviceaccounts", "endpoints",
	"limitranges", "podtemplates", "replicationcontrollers", "resourcequotas", "persistentvolumeclaims",
	"deployments.apps", "replicasets.apps", "statefulsets.apps", "daemonsets.apps", "controllerrevisions.apps",
	"jobs.batch", "cronjobs.batch", "horizontalpodautoscalers.autoscaling", "poddisruptionbudgets.policy",
	"ingresses.networking.k8s.io", "networkpolicies.networking.k8s.io", "endpointslices.discovery.k8s.io",
	"leases.coordination.k8s.io", "roles.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io",
	"csistoragecapacities.storage.k8s.io", "resourceclaims.resource.k8s.io",
	"resourceclaimtemplates.resource.k8s.io")

// builtinGroups are the API groups of Kubernetes itself ("" is the core
// group): a resource of one of them that servedResources lacks is not
// counted by any cluster, where a resource of another group may be a
// custom resource that some cluster serves.
var builtinGroups = setOf("", "apps", "batch", "autoscaling", "policy", "networking.k8s.io",
	"discovery.k8s.io", "events.k8s.io", "coordination.k8s.io", "rbac.authorization.k8s.io",
	"storage.k8s.io", "certificates.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io",
	"admissionregistration.k8s.io", "flowcontrol.apiserver.k8s.io", "resource.k8s.io", "node.k8s.io",
	"scheduling.k8s.io", "authentication.k8s.io", "authorization.k8s.io", "internal.apiserver.k8s.io",
	"storagemigration.k8s.io")

// UsageTracked reports whether Kubernetes' quota controller computes the
// usage of the hard resource name, and so whether a quota's status.used
// holds it (at zero when nothing is charged): only names some evaluator
// produces are there. A bare extended resource (example.com/gpu, or
// limits.example.com/gpu) is valid in spec.hard but tracked by none, nor
// is the count of an event or of a resource the cluster does not serve.
// known is false for the count of a resource outside Kubernetes' own
// groups, which a cluster counts only if it serves it as a custom
// resource: the ledger reads no CustomResourceDefinitions to tell.
func UsageTracked(name string) (tracked, known bool) {
	for _, r := range []string{"pods", "persistentvolumeclaims", "services", resourceClaims} {
		if evaluatorProduces(r, name) {
			return true, true
		}
	}
	resource, ok := strings.CutPrefix(name, countPrefix)
	if !ok {
		return legacyCounts[name], true
	}
	if servedResources[resource] {
		return true, true
	}
	_, group, _ := strings.Cut(resource, ".")
	if builtinGroups[group] {
		return false, true
	}
	return false, false
}

// evaluatorProduces reports whether the evaluator for resource (a
// group-qualified plural) produces the resource name.
func evaluatorProduces(resource, name string) bool {
	if ignoredResources[resource] {
		return false
	}
	switch resource {
	case "pods":
		return podResources[name] || isQuotaHugePages(name) || isExtendedResourceNameForQuota(name)
	case "persistentvolumeclaims":
		if name == countPrefix+resource || pvcQuotaResources[name] {
			return true
		}
		return strings.HasSuffix(name, storageClassSuffix+ResourcePersistentVolumeClaims) ||
			strings.HasSuffix(name, storageClassSuffix+ResourceRequestsStorage)
	case "services":
		return name == countPrefix+resource || name == ResourceServices ||
			name == ResourceServicesLoadBalancers || name == ResourceServicesNodePorts
	case resourceClaims:
		return name == countPrefix+resource || len(name) > len(deviceClassSuffix) && strings.HasSuffix(name, deviceClassSuffix)
	}
	if name == countPrefix+resource {
		return true
	}
	return legacyCounts[resource] && name == resource
}
