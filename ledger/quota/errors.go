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
	// ErrRuntimeClassNotFound is returned by Default when a pod names a
	// RuntimeClass the environment does not hold.
	ErrRuntimeClassNotFound = errors.New("runtime class not found")
	// ErrOverheadMismatch is returned by Default when a pod states an
	// overhead different from its RuntimeClass's.
	ErrOverheadMismatch = errors.New("pod overhead does not match its RuntimeClass")
)
