// Package namespace checks the namespaces the clients of cmd/quota are
// given (-n, or a manifest's own) before anything is sent.
//
// A namespace the check refuses has no subject of its own ("team.a"
// would be two subject tokens), so no server could ever answer for it.
//
// # Caveats
//
// The empty namespace passes: it means "the default", which each client
// fills in.
package namespace

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Check refuses a namespace that Kubernetes would not take as a name (a
// DNS-1123 label).
func Check(ns string) error {
	if ns == "" {
		return nil
	}
	if problems := validation.IsDNS1123Label(ns); len(problems) > 0 {
		return fmt.Errorf("namespace %q is not a valid name: %s", ns, strings.Join(problems, "; "))
	}
	return nil
}
