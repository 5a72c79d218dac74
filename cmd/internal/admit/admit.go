package admit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotaledger/quota/cmd/internal/namespace"
	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/projector/admission"
)

// Config is one `quota admit`.
type Config struct {
	// File names the manifest; "-" is standard input. Required.
	File string
	// Namespace is -n. Zero: the manifest's, else "default".
	Namespace string
	// DryRun decides only; nothing is reserved.
	DryRun bool
	// Validation is --validate (strict, warn or ignore). Zero: strict.
	Validation string
	// Ask sends body on subject to the ledger and returns the reply's
	// data; its error is returned as it is.
	Ask func(ctx context.Context, subject string, body []byte) ([]byte, error)
	// Out receives the decision; Err the warnings. Nil: io.Discard.
	Out, Err io.Writer
}

// Validate reports every setting of c that is wrong, in one error.
func (c Config) Validate() error {
	var problems []string
	if err := namespace.Check(c.Namespace); err != nil {
		problems = append(problems, err.Error())
	}
	if _, err := ingest.ParseValidation(c.validation()); err != nil {
		problems = append(problems, err.Error())
	}
	if c.Ask == nil {
		problems = append(problems, "no Ask")
	}
	if len(problems) == 0 {
		return nil
	}
	return invalidConfig(problems)
}

// invalidConfig is ErrInvalidConfig, worded as its problems alone: the
// messages users of the flags know.
type invalidConfig []string

func (e invalidConfig) Error() string { return strings.Join(e, "; ") }
func (e invalidConfig) Unwrap() error { return ErrInvalidConfig }

func (c Config) validation() string {
	if c.Validation == "" {
		return string(ingest.ValidateStrict)
	}
	return c.Validation
}

// Run asks the ledger whether the manifest's object may be created and
// prints "allowed" or the refusal's message on c.Out. It returns
// ErrDenied when the object was refused; any other error says why no
// decision was had.
func Run(ctx context.Context, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Err == nil {
		c.Err = io.Discard
	}
	raw, text, err := ReadManifest(c.File)
	if err != nil {
		return err
	}
	if err := c.checkFields(raw, text); err != nil {
		return err
	}
	review, ns, err := c.review(raw)
	if err != nil {
		return err
	}
	body, err := json.Marshal(review)
	if err != nil {
		return err
	}
	reply, err := c.Ask(ctx, admission.SubjectPrefix+ns, body)
	if err != nil {
		return err
	}
	return c.decision(reply)
}

// checkFields checks the manifest's fields against its kind's before it
// is sent, as kubectl checks one it creates; its values are the server's
// to judge, in Kubernetes' words.
func (c Config) checkFields(raw, text []byte) error {
	validation, _ := ingest.ParseValidation(c.validation())
	unknown := ingest.UnknownFields(ManifestName(c.File), text, raw)
	if len(unknown) == 0 || validation == ingest.ValidateIgnore {
		return nil
	}
	var lines []string
	for _, r := range unknown {
		if validation == ingest.ValidateWarn {
			fmt.Fprintf(c.Err, "%s: warning: %s\n", r.Source, r.Reason)
		}
		lines = append(lines, r.String())
	}
	if validation == ingest.ValidateStrict {
		return errors.New(strings.Join(lines, "\n"))
	}
	return nil
}

// review is the AdmissionReview that asks about the create of raw, and
// the namespace it is asked in.
func (c Config) review(raw []byte) (*admissionv1.AdmissionReview, string, error) {
	var meta struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, "", fmt.Errorf("%s: %w", c.File, err)
	}
	ns := c.Namespace
	if ns == "" {
		ns = meta.Metadata.Namespace
	}
	if own := meta.Metadata.Namespace; own != "" && own != ns {
		// kubectl refuses this before asking the API server.
		return nil, "", fmt.Errorf("%s: the namespace from the provided object %q does not match the namespace %q; give -n %s, or none", c.File, own, ns, own)
	}
	if ns == "" {
		ns = "default"
	}
	if err := namespace.Check(ns); err != nil {
		return nil, "", err
	}
	gv, err := schema.ParseGroupVersion(meta.APIVersion)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", c.File, err)
	}
	dryRun := c.DryRun
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID(admission.NewUID()),
			Kind:      metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: meta.Kind},
			Name:      meta.Metadata.Name,
			Namespace: ns,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
			DryRun:    &dryRun,
		},
	}, ns, nil
}

// decision prints the ledger's reply: its warnings, then "allowed" or
// the refusal (ErrDenied).
func (c Config) decision(reply []byte) error {
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(reply, &out); err != nil || out.Response == nil {
		return fmt.Errorf("bad reply from the ledger: %v", err)
	}
	resp := out.Response
	for _, w := range resp.Warnings {
		fmt.Fprintln(c.Err, "Warning:", w)
	}
	if resp.Allowed {
		fmt.Fprintln(c.Out, "allowed")
		return nil
	}
	if resp.Result == nil {
		return errors.New("the ledger denied without a status")
	}
	if admission.Verdict(resp.Result) {
		fmt.Fprintln(c.Out, resp.Result.Message)
		return ErrDenied
	}
	return fmt.Errorf("the ledger could not decide (%d): %s", resp.Result.Code, resp.Result.Message)
}
