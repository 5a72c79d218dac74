package ledger

import (
	"fmt"
	"strings"
)

// The subject plan (see the package doc): one subject per namespace, and
// ClusterSubject for cluster-scoped objects. Namespaces are DNS labels,
// which cannot contain '_', so "_cluster" never names a namespace.
const (
	// SubjectPrefix starts every event subject.
	SubjectPrefix = "quota.events."
	// SubjectsAll matches every event subject; the event stream binds it.
	SubjectsAll = "quota.events.>"
	// ClusterToken is the subject token of cluster-scoped objects.
	ClusterToken = "_cluster"
	// ClusterSubject carries the events of cluster-scoped objects.
	ClusterSubject = SubjectPrefix + ClusterToken

	// RejectSubjectPrefix starts every dead-letter subject; the token after
	// it names the origin ("ingest", "projector").
	RejectSubjectPrefix = "quota.rejects."
	// RejectSubjectsAll matches every dead-letter subject.
	RejectSubjectsAll = "quota.rejects.>"
)

// Subject returns the subject of namespace ns: ClusterSubject for "" (a
// cluster-scoped object), SubjectPrefix+ns otherwise. It does not validate
// ns; Append does.
func Subject(namespace string) string {
	if namespace == "" {
		return ClusterSubject
	}
	return SubjectPrefix + namespace
}

// NamespaceOf returns the namespace a subject carries: "" for
// ClusterSubject. It fails for a subject outside the plan.
func NamespaceOf(subject string) (string, error) {
	token, ok := strings.CutPrefix(subject, SubjectPrefix)
	if !ok || token == "" || strings.Contains(token, ".") {
		return "", fmt.Errorf("subject %q is not an event subject", subject)
	}
	if token == ClusterToken {
		return "", nil
	}
	if err := ValidateNamespace(token); err != nil {
		return "", fmt.Errorf("subject %q: %w", subject, err)
	}
	return token, nil
}
