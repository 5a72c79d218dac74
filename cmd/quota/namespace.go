package main

import "github.com/quotaledger/quota/cmd/internal/namespace"

// checkNamespace refuses a namespace that Kubernetes would not take as a
// name before a client sends anything (namespace.Check).
func checkNamespace(ns string) error { return namespace.Check(ns) }
