package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// checkNamespace refuses a namespace that Kubernetes would not take as a
// name (a DNS-1123 label) before a client sends anything: such a
// namespace has no subject of its own ("team.a" would be two subject
// tokens), so no server could ever answer for it.
func checkNamespace(ns string) error {
	if ns == "" {
		return nil
	}
	if problems := validation.IsDNS1123Label(ns); len(problems) > 0 {
		return fmt.Errorf("namespace %q is not a valid name: %s", ns, strings.Join(problems, "; "))
	}
	return nil
}
