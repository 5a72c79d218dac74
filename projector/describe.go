package projector

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// InvalidAnnotation is set on a described quota whose spec Kubernetes would
// reject; its value is the validation message. Such a quota has no status.
const InvalidAnnotation = "quota-ledger.io/invalid"

// scopeHelp is the sentence kubectl prints under each scope it knows.
var scopeHelp = map[corev1.ResourceQuotaScope]string{
	corev1.ResourceQuotaScopeTerminating:    "Matches all pods that have an active deadline. These pods have a limited lifespan on a node before being actively terminated by the system.",
	corev1.ResourceQuotaScopeNotTerminating: "Matches all pods that do not have an active deadline. These pods usually include long running pods whose container command is not expected to terminate.",
	corev1.ResourceQuotaScopeBestEffort:     "Matches all pods that do not have resource requirements set. These pods have a best effort quality of service.",
	corev1.ResourceQuotaScopeNotBestEffort:  "Matches all pods that have at least one resource requirement set. These pods have a burstable or guaranteed quality of service.",
}

// WriteDescribe prints quotas in the layout of `kubectl describe quota`:
// each quota is a tab-aligned block (cells padded by two spaces, as
// kubectl's tabwriter does) and blocks are separated by a blank line.
func WriteDescribe(w io.Writer, list *corev1.ResourceQuotaList) error {
	for i := range list.Items {
		if i > 0 {
			if _, err := io.WriteString(w, "\n\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(describeOne(&list.Items[i])); err != nil {
			return err
		}
	}
	return nil
}

func describeOne(q *corev1.ResourceQuota) []byte {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", q.Name)
	fmt.Fprintf(tw, "Namespace:\t%s\n", q.Namespace)
	if len(q.Spec.Scopes) > 0 {
		scopes := make([]string, 0, len(q.Spec.Scopes))
		for _, s := range q.Spec.Scopes {
			scopes = append(scopes, string(s))
		}
		slices.Sort(scopes)
		fmt.Fprintf(tw, "Scopes:\t%s\n", strings.Join(scopes, ", "))
		for _, s := range scopes {
			if help := scopeHelp[corev1.ResourceQuotaScope(s)]; help != "" {
				fmt.Fprintf(tw, " * %s\n", help)
			}
		}
	}
	if msg := q.Annotations[InvalidAnnotation]; msg != "" {
		fmt.Fprintf(tw, "Invalid:\t%s\n", msg)
	}
	fmt.Fprintf(tw, "Resource\tUsed\tHard\n")
	fmt.Fprintf(tw, "--------\t----\t----\n")
	for _, name := range slices.Sorted(maps.Keys(q.Status.Hard)) {
		hard, used := q.Status.Hard[name], q.Status.Used[name]
		if used.Format != hard.Format {
			// kubectl prints used in hard's format, as a whole number
			// (rounded up): 500M of a 1Gi quota prints as 500000000.
			used = *resource.NewQuantity(used.Value(), hard.Format)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, used.String(), hard.String())
	}
	tw.Flush()
	return buf.Bytes()
}
