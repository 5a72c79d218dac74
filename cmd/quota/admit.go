package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/quotaledger/quota/projector/admission"
)

func newAdmitCommand(g *globalFlags) *cobra.Command {
	var (
		file      string
		namespace string
		dryRun    bool
	)
	cmd := &cobra.Command{
		Use:   "admit -f FILE [-n NS] [--dry-run]",
		Short: "Ask whether an object may be created under the namespace's quotas",
		Long: `admit asks the ledger whether the object in FILE (JSON or YAML: a Pod, PVC,
Service or any counted kind, as a raw manifest) may be created. It prints
'allowed', or the 403 message Kubernetes would give.

Without --dry-run an allowed object's usage is reserved until its creation
event arrives or the reservation expires.

Exit status: 0 allowed, 1 denied, 2 error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, err := readManifest(file)
			if err != nil {
				return withCode(exitError, err)
			}
			var meta struct {
				APIVersion string            `json:"apiVersion"`
				Kind       string            `json:"kind"`
				Metadata   metav1.ObjectMeta `json:"metadata"`
			}
			if err := json.Unmarshal(raw, &meta); err != nil {
				return withCode(exitError, fmt.Errorf("%s: %w", file, err))
			}
			ns := namespace
			if ns == "" {
				ns = meta.Metadata.Namespace
			}
			if ns == "" {
				ns = "default"
			}
			gv, err := schema.ParseGroupVersion(meta.APIVersion)
			if err != nil {
				return withCode(exitError, fmt.Errorf("%s: %w", file, err))
			}
			review := admissionv1.AdmissionReview{
				TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
				Request: &admissionv1.AdmissionRequest{
					UID:       types.UID(newUID()),
					Kind:      metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: meta.Kind},
					Name:      meta.Metadata.Name,
					Namespace: ns,
					Operation: admissionv1.Create,
					Object:    runtime.RawExtension{Raw: raw},
					DryRun:    &dryRun,
				},
			}
			body, err := json.Marshal(review)
			if err != nil {
				return withCode(exitError, err)
			}
			nc, err := g.connect("quota admit")
			if err != nil {
				return withCode(exitError, err)
			}
			defer nc.Close()
			msg, err := nc.Request(admission.SubjectPrefix+ns, body, requestTimeout)
			if err != nil {
				return withCode(exitError, fmt.Errorf("ask the ledger: %w", err))
			}
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(msg.Data, &out); err != nil || out.Response == nil {
				return withCode(exitError, fmt.Errorf("bad reply from the ledger: %v", err))
			}
			resp := out.Response
			if resp.Allowed {
				fmt.Fprintln(cmd.OutOrStdout(), "allowed")
				return nil
			}
			if resp.Result == nil {
				return withCode(exitError, errors.New("the ledger denied without a status"))
			}
			if resp.Result.Code == 403 {
				fmt.Fprintln(cmd.OutOrStdout(), resp.Result.Message)
				return silentExit(exitFailed)
			}
			return withCode(exitError, fmt.Errorf("the ledger could not decide (%d): %s", resp.Result.Code, resp.Result.Message))
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "filename", "f", "", "manifest to admit (JSON or YAML; - for standard input)")
	f.StringVarP(&namespace, "namespace", "n", "", "namespace (default: the manifest's, else \"default\")")
	f.BoolVar(&dryRun, "dry-run", false, "decide only; reserve nothing")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// readManifest reads one object from a JSON or YAML file and returns JSON.
func readManifest(file string) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	if file == "-" {
		b, err = io.ReadAll(io.LimitReader(os.Stdin, manifestSizeMax+1))
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, err
	}
	if len(b) > manifestSizeMax {
		return nil, fmt.Errorf("%s: larger than %d bytes", file, manifestSizeMax)
	}
	raw, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s: not JSON or YAML: %w", file, err)
	}
	return raw, nil
}

// manifestSizeMax bounds a manifest given to admit, as the API server
// bounds a request body.
const manifestSizeMax = 3 << 20

// newUID names one admission request (and so its reservation).
func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
