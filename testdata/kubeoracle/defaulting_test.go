package kubeoracle

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"

	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger"

	"github.com/quotaledger/quota/ledger/quota"
)

// TestDefaultedManifestUsage compares what a raw pod manifest charges once
// the API server has defaulted it (requests from limits, quantities
// rounded up to 1m) with no LimitRange: Kubernetes' defaulting,
// conversion, validation and pod evaluator against the ledger's Default,
// Validate and Evaluate. A manifest the API server refuses must be refused
// by the ledger with the same message.
func TestDefaultedManifestUsage(t *testing.T) {
	m := newMismatches(t, "defaulted manifest")
	for i := 0; i < cases(t, 6000); i++ {
		r := caseRand(m.seed, m.name, i)
		pod := genPod(r, podShape{})
		delete(pod["spec"].(obj), "overhead")
		m.compare(i, obj{"pod": pod}, checkManifest)
	}
	m.done()
}

// TestLimitRangerManifestUsage compares the same with one or two random
// LimitRanges in the namespace: the LimitRanger plugin's defaults
// (PodMutateLimitFunc) and checks (PodValidateLimitFunc), their 403
// message, and what the pod then charges.
func TestLimitRangerManifestUsage(t *testing.T) {
	m := newMismatches(t, "limit ranger")
	skipped := 0
	for i := 0; i < cases(t, 6000); i++ {
		r := caseRand(m.seed, m.name, i)
		pod := genPod(r, podShape{})
		delete(pod["spec"].(obj), "overhead")
		// Both sides get the LimitRanges in name order (lr0, lr1), the
		// ledger's rule; Kubernetes' own informer order is a draw.
		var ranges []any
		for j := 0; j < 1+r.IntN(2); j++ {
			ranges = append(ranges, genLimitRange(r, fmt.Sprintf("lr%d", j)))
		}
		if m.compare(i, obj{"pod": pod, "limitRanges": ranges}, checkManifest).skip {
			skipped++
		}
	}
	t.Logf("%d cases with an invalid LimitRange skipped", skipped)
	m.done()
}

// storedLimitRange is a LimitRange as the API server keeps it (defaulted),
// or nil when its validation refuses it.
func storedLimitRange(tree any) *corev1.LimitRange {
	var lr corev1.LimitRange
	if json.Unmarshal(mustJSON(tree), &lr) != nil {
		return nil
	}
	legacyscheme.Scheme.Default(&lr)
	var internal api.LimitRange
	if legacyscheme.Scheme.Convert(&lr, &internal, nil) != nil {
		return nil
	}
	if len(validation.ValidateLimitRange(&internal)) > 0 {
		return nil
	}
	var out corev1.LimitRange
	if json.Unmarshal(mustJSON(&lr), &out) != nil {
		return nil
	}
	return &out
}

func checkManifest(tree any) outcome {
	t, ok := tree.(map[string]any)
	if !ok || t["pod"] == nil {
		return outcome{skip: true}
	}
	var ranges []*corev1.LimitRange
	if list, ok := t["limitRanges"].([]any); ok {
		for _, lt := range list {
			lr := storedLimitRange(lt)
			if lr == nil {
				return outcome{skip: true}
			}
			ranges = append(ranges, lr)
		}
	}
	manifest := mustJSON(t["pod"])

	// Kubernetes: defaulting and conversion, LimitRanger's defaults,
	// the registry's preparation, validation, LimitRanger's checks, usage.
	// kubeItems are the errors Kubernetes aggregates into its message, in
	// an order that follows Go map iteration; the ledger's message may
	// list them in any order.
	kubeOut, want := "", corev1.ResourceList(nil)
	var kubeItems []string
	ip, err := defaultedInternalPod(manifest)
	if err != nil {
		return outcome{skip: true}
	}
	for _, lr := range ranges {
		_ = limitranger.PodMutateLimitFunc(lr, ip)
	}
	out, items, skip := kubeValidation(ip)
	if skip {
		return outcome{skip: true}
	}
	if out != "" {
		kubeOut, kubeItems = out, append(kubeItems, items...)
	} else {
		attrs := admission.NewAttributesRecord(ip, nil, api.Kind("Pod").WithVersion("v1"), "ns", ip.Name,
			corev1.Resource("pods").WithVersion("v1"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
		for _, lr := range ranges {
			if err := limitranger.PodValidateLimitFunc(lr, ip); err != nil {
				kubeOut = "forbidden: " + admission.NewForbidden(attrs, err).Error()
				if agg, ok := err.(utilerrors.Aggregate); ok {
					for _, e := range agg.Errors() {
						kubeItems = append(kubeItems, e.Error())
					}
				}
				break
			}
		}
	}
	if kubeOut == "" {
		want, err = kubePods.Usage(ip)
		if err != nil {
			return outcome{kind: "kubernetes cannot evaluate the pod", detail: err.Error()}
		}
	}

	// The ledger: Default, Validate, Evaluate.
	o, err := decodeLedger(manifest)
	if err != nil {
		return outcome{kind: "the ledger cannot read the pod", detail: err.Error()}
	}
	env := quota.Environment{LimitRanges: ranges}
	ledgerOut := ""
	if err := quota.Default(o, env); err != nil {
		ledgerOut = "default refused: " + err.Error()
	} else if err := quota.Validate(o, nil, env); err != nil {
		ledgerOut = ledgerError(o, err)
	}
	if kind := verdictKind(kubeOut, kubeItems, ledgerOut); kind != "" {
		return outcome{kind: kind, detail: "kubernetes: " + kubeOut + "\nledger:     " + ledgerOut}
	}
	if kubeOut != "" {
		return outcome{}
	}
	got, err := quota.Evaluate(o, now)
	if err != nil {
		return outcome{kind: "the ledger cannot evaluate the pod", detail: err.Error()}
	}
	if d := listDiff(want, got.Usage); d != "" {
		return outcome{kind: "usage: " + diffKind(want, got.Usage), detail: d}
	}
	return outcome{}
}

// verdictKind names how the ledger's verdict on a manifest differs from
// Kubernetes' (each "" for an acceptance, else the message with its step's
// prefix), or returns "" when they agree, up to the order of an
// aggregate's items.
func verdictKind(kubeOut string, kubeItems []string, ledgerOut string) string {
	if kubeOut == ledgerOut || sameUpToOrder(kubeOut, kubeItems, ledgerOut) {
		return ""
	}
	switch {
	case kubeOut == "":
		return "kubernetes accepts, the ledger refuses"
	case ledgerOut == "":
		return "kubernetes refuses, the ledger accepts"
	case kubeOut[:4] != ledgerOut[:4]:
		return "refused at a different step"
	}
	return "message differs"
}

// sameUpToOrder reports whether ledger is Kubernetes' message kube with its
// aggregated items (a bracketed, comma-separated list) in another order.
func sameUpToOrder(kube string, items []string, ledger string) bool {
	// An aggregate prints each distinct message once.
	seen := map[string]bool{}
	var distinct []string
	for _, it := range items {
		if !seen[it] {
			seen[it] = true
			distinct = append(distinct, it)
		}
	}
	items = distinct
	if len(items) < 2 || len(kube) != len(ledger) {
		return false
	}
	open := strings.Index(kube, "[")
	if open < 0 || kube[:open] != ledger[:open] || !strings.HasSuffix(ledger, "]") {
		return false
	}
	rest := ledger[open+1 : len(ledger)-1]
	for _, it := range items {
		i := strings.Index(rest, it)
		if i < 0 {
			return false
		}
		rest = rest[:i] + rest[i+len(it):]
	}
	return strings.Trim(rest, ", ") == ""
}

// kubeValidation prepares a pod for creation and runs the API server's
// validation of it: "" when it passes, else the 422 message and each of
// its items. skip is set when the pod is refused for what the ledger does
// not read (a missing name or image): not a manifest to compare.
func kubeValidation(ip *api.Pod) (out string, items []string, skip bool) {
	prepareForCreate(ip)
	errs := validatePod(ip)
	if len(errs) == 0 {
		return "", nil, false
	}
	for _, e := range errs {
		if !strings.Contains(e.Field, "resources") && !strings.Contains(e.Field, "activeDeadlineSeconds") {
			return "", nil, true
		}
	}
	for _, e := range errs {
		items = append(items, e.Error())
	}
	return "invalid: " + apierrors.NewInvalid(api.Kind("Pod"), ip.Name, errs).Error(), items, false
}
