package export

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// apiErrorMessage says what failed at the API server and, when the
// operator can do something about it, what.
func apiErrorMessage(verb string, res resource, err error) string {
	what := res.Name()
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Sprintf("cannot %s %s: forbidden, the exporter's ServiceAccount needs list and watch on %s (apiGroups: [%q]); retrying with backoff", verb, what, res.GVR.Resource, res.GVR.Group)
	case apierrors.IsUnauthorized(err):
		return fmt.Sprintf("cannot %s %s: unauthorized, the exporter's credentials (--kubeconfig, or the in-cluster ServiceAccount token) are refused; retrying with backoff", verb, what)
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("cannot %s %s: the API server no longer serves it; discovery stops its stream", verb, what)
	case isUnreachable(err):
		return fmt.Sprintf("cannot %s %s: the API server is unreachable; retrying with backoff", verb, what)
	}
	return fmt.Sprintf("cannot %s %s; retrying with backoff", verb, what)
}

func isUnreachable(err error) bool {
	var netErr net.Error
	var opErr *net.OpError
	return errors.As(err, &netErr) || errors.As(err, &opErr) || strings.Contains(err.Error(), "connection refused")
}

// natsErrorMessage says that an operation on NATS failed and when it is
// tried again.
func natsErrorMessage(what string, delay time.Duration) string {
	return fmt.Sprintf("%s: NATS unreachable or refusing, retrying in %s", what, delay)
}
