package quota

import "errors"

var (
	// ErrNoObject is returned when an object argument is nil.
	ErrNoObject = errors.New("no object")
	// ErrNoValue is returned by Evaluate when a pod, claim or service comes
	// without its typed value (an Object not made by object.Decode).
	ErrNoValue = errors.New("object has no typed value")
	// ErrNotResourceQuota is returned by FromObject for any other kind.
	ErrNotResourceQuota = errors.New("not a ResourceQuota")
	// ErrRuntimeClassNotFound is the reason of Default's refusal of a pod
	// naming a RuntimeClass the environment does not hold.
	ErrRuntimeClassNotFound = errors.New("runtime class not found")
	// ErrRuntimeClassNameEmpty is the reason of Default's failure on a pod
	// naming the RuntimeClass "", which Kubernetes' RuntimeClass plugin
	// cannot look up.
	ErrRuntimeClassNameEmpty = errors.New("empty RuntimeClass name")
	// ErrNodeSelectorConflict is the reason of Default's refusal of a pod
	// whose node selector gives a label of its RuntimeClass's selector
	// another value.
	ErrNodeSelectorConflict = errors.New("node selector conflicts with its RuntimeClass's")
	// ErrOverheadMismatch is the reason of Default's refusal of a pod
	// stating an overhead different from its RuntimeClass's.
	ErrOverheadMismatch = errors.New("pod overhead does not match its RuntimeClass")
	// ErrOverheadWithoutRuntimeClass is the reason of Default's refusal of
	// a pod stating an overhead that no RuntimeClass of its defines.
	ErrOverheadWithoutRuntimeClass = errors.New("pod overhead without a RuntimeClass overhead")
	// ErrServiceAccountNotFound is the reason of Default's refusal of a
	// pod naming a ServiceAccount its namespace does not have.
	ErrServiceAccountNotFound = errors.New("service account not found")
	// ErrPriorityClassNotFound is the reason of Default's refusal of a pod
	// naming a PriorityClass the environment does not hold.
	ErrPriorityClassNotFound = errors.New("priority class not found")
	// ErrPriorityMismatch is the reason of Default's refusal of a pod
	// stating a priority or preemption policy other than its
	// PriorityClass's.
	ErrPriorityMismatch = errors.New("priority differs from its PriorityClass's")
	// ErrLimitRange is the reason of Validate's refusal of a pod or claim
	// outside a LimitRange of its namespace.
	ErrLimitRange = errors.New("outside a LimitRange")
)

// RefusedError is a refusal by one of the admission plugins that run
// before quota's (ServiceAccount, Priority, RuntimeClass, LimitRanger), in
// that plugin's words: Kubernetes' 403 message is the object's forbidden
// prefix and Error. errors.Is matches it to its Reason.
type RefusedError struct {
	Reason  error
	Message string
}

func (e *RefusedError) Error() string { return e.Message }

func (e *RefusedError) Unwrap() error { return e.Reason }

// PlainError is a failure of an admission plugin that runs before quota's
// that Kubernetes does not word as a refusal: the plugin returns a plain
// error, which the API server reports with code 500, no reason and the
// bare message, Error. errors.Is matches it to its Reason.
type PlainError struct {
	Reason  error
	Message string
}

func (e *PlainError) Error() string { return e.Message }

func (e *PlainError) Unwrap() error { return e.Reason }

// InvalidError is the API server's refusal of an object that fails its
// validation, which comes before any validating admission plugin: a 422
// (reason Invalid) whose message is Error, naming the object by its kind
// ("Pod \"web\" is invalid: ...").
type InvalidError struct{ Message string }

func (e *InvalidError) Error() string { return e.Message }
