package object

import (
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is one Kubernetes object as the ledger keeps it: its identity and,
// for the kinds whose fields quota accounting reads, the typed value.
type Object struct {
	APIVersion string
	Kind       string
	// Resource is the group-qualified plural resource, as quota names it in
	// count/<resource>: "pods", "jobs.batch", "widgets.example.com".
	Resource        string
	Namespace       string // empty for cluster-scoped kinds
	Name            string
	GenerateName    string
	UID             string
	ResourceVersion string
	// Value is the typed object (*corev1.Pod, *corev1.PersistentVolumeClaim,
	// ...) for kinds that quota reads beyond identity; nil for the others.
	Value runtime.Object
}

// Decode reads one Kubernetes object from JSON.
func Decode(raw []byte) (*Object, error) { panic("TODO") }

// Trimmed returns the object's JSON reduced to the fields quota accounting
// reads. Decode(Trimmed()) evaluates to the same charges as the original.
func (o *Object) Trimmed() ([]byte, error) { panic("TODO") }

// Key identifies the object within the ledger: resource, namespace, name.
func (o *Object) Key() string { return o.Resource + "/" + o.Namespace + "/" + o.Name }
