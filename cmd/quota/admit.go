package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/projector/admission"
)

func newAdmitCommand(g *globalFlags) *cobra.Command {
	var (
		file      string
		namespace string
		dryRun    bool
		validate  string
	)
	cmd := &cobra.Command{
		Use:   "admit -f FILE [-n NS] [--dry-run]",
		Short: "Ask whether an object may be created under the namespace's quotas",
		Long: `admit asks the ledger whether the object in FILE (JSON or YAML: a Pod, PVC,
Service or any counted kind, as a raw manifest) may be created. It prints
'allowed', or the message Kubernetes would refuse it with (a 403 from quota
or another admission plugin, or a 422 for an invalid object). FILE holds one
object: a file of several YAML documents, or a List, is refused.

Without --dry-run an allowed object's usage is reserved until its creation
event arrives or the reservation expires.

The manifest is checked against its kind's fields first, as kubectl checks
one: a field the kind does not have is refused with its path and line
(--validate=warn sends the object with a warning, --validate=ignore without
one). -n, or the manifest's namespace, must be a valid namespace name.

Exit status: 0 allowed, 1 denied, 2 error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkNamespace(namespace); err != nil {
				return withCode(exitError, err)
			}
			validation, err := ingest.ParseValidation(validate)
			if err != nil {
				return withCode(exitError, err)
			}
			raw, text, err := readManifest(file)
			if err != nil {
				return withCode(exitError, err)
			}
			// The manifest's fields are checked against its kind's before
			// it is sent, as kubectl checks one it creates; its values are
			// the server's to judge, in Kubernetes' words.
			if unknown := ingest.UnknownFields(manifestName(file), text, raw); len(unknown) > 0 && validation != ingest.ValidateIgnore {
				var lines []string
				for _, r := range unknown {
					if validation == ingest.ValidateWarn {
						fmt.Fprintf(cmd.ErrOrStderr(), "%s: warning: %s\n", r.Source, r.Reason)
					}
					lines = append(lines, r.String())
				}
				if validation == ingest.ValidateStrict {
					return withCode(exitError, errors.New(strings.Join(lines, "\n")))
				}
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
			if own := meta.Metadata.Namespace; own != "" && own != ns {
				// kubectl refuses this before asking the API server.
				return withCode(exitError, fmt.Errorf("%s: the namespace from the provided object %q does not match the namespace %q; give -n %s, or none", file, own, ns, own))
			}
			if ns == "" {
				ns = "default"
			}
			if err := checkNamespace(ns); err != nil {
				return withCode(exitError, err)
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
			msg, err := g.request(nc, admission.SubjectPrefix+ns, body)
			if err != nil {
				return askError(admission.SubjectPrefix+ns, err, ", or each is still catching up with the stream at its start (its log says so)")
			}
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(msg.Data, &out); err != nil || out.Response == nil {
				return withCode(exitError, fmt.Errorf("bad reply from the ledger: %v", err))
			}
			resp := out.Response
			for _, w := range resp.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "Warning:", w)
			}
			if resp.Allowed {
				fmt.Fprintln(cmd.OutOrStdout(), "allowed")
				return nil
			}
			if resp.Result == nil {
				return withCode(exitError, errors.New("the ledger denied without a status"))
			}
			if admission.Verdict(resp.Result) {
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
	f.StringVar(&validate, "validate", "strict", "what a field of the manifest that its kind does not have does, as kubectl's --validate: strict refuses it, warn sends it with a warning, ignore says nothing (values are judged by the ledger server, as the API server judges them)")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// manifestName is how messages name the manifest file.
func manifestName(file string) string {
	if file == "-" {
		return "standard input"
	}
	return file
}

// readManifest reads the one object of a JSON or YAML file and returns it
// as JSON, and the text it was read from. A file with no object, with
// several (YAML documents separated by "---"), or holding a list is
// refused: admit decides one create.
func readManifest(file string) ([]byte, []byte, error) {
	var (
		b   []byte
		err error
	)
	in := io.Reader(os.Stdin)
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		in = f
	}
	text, err := ingest.Text(in)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	if b, err = io.ReadAll(io.LimitReader(text, manifestSizeMax+1)); err != nil {
		return nil, nil, err
	}
	name := file
	if file == "-" {
		name = "standard input"
	}
	if len(b) > manifestSizeMax {
		return nil, nil, fmt.Errorf("%s: larger than %d bytes", name, manifestSizeMax)
	}
	var objects [][]byte
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	// n numbers the documents with content, as a reader of the file
	// counts them: the empty one before a leading "---" is not one.
	for n := 0; ; {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		if blankYAML(doc) {
			continue
		}
		n++
		if err := ingest.OneNode(doc); err != nil {
			return nil, nil, fmt.Errorf("%s: document %d: %w", name, n, err)
		}
		raw, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: document %d: not JSON or YAML: %w", name, n, err)
		}
		if string(raw) == "null" {
			continue // an empty document, as between two "---" lines
		}
		objects = append(objects, raw)
	}
	switch len(objects) {
	case 0:
		return nil, nil, fmt.Errorf("%s: no object in it", name)
	case 1:
	default:
		return nil, nil, fmt.Errorf("%s: %d objects in it; admit decides one at a time", name, len(objects))
	}
	obj := objects[0]
	if obj[0] != '{' {
		return nil, nil, fmt.Errorf("%s: not an object: a manifest is a mapping with apiVersion, kind and metadata", name)
	}
	var list struct {
		Kind  string          `json:"kind"`
		Items json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(obj, &list); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	if list.Items != nil && strings.HasSuffix(list.Kind, "List") {
		return nil, nil, fmt.Errorf("%s: a %s, not one object; admit decides one at a time", name, list.Kind)
	}
	return obj, b, nil
}

// blankYAML reports whether a YAML document holds only blank lines,
// comments and document markers.
func blankYAML(doc []byte) bool {
	for line := range bytes.SplitSeq(doc, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) {
			return false
		}
	}
	return true
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
