package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/quotaledger/quota/cmd/internal/admit"
)

// admitWhy is what a ledger that does not answer admissions may be doing.
const admitWhy = ", or each is still catching up with the stream at its start (its log says so)"

func newAdmitCommand(g *globalFlags) *cobra.Command {
	var cfg admit.Config
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
			cfg.Out, cfg.Err = cmd.OutOrStdout(), cmd.ErrOrStderr()
			cfg.Ask = func(_ context.Context, subject string, body []byte) ([]byte, error) {
				msg, err := ask(g, "quota admit", subject, body, admitWhy)
				if err != nil {
					return nil, err
				}
				return msg.Data, nil
			}
			err := admit.Run(cmd.Context(), cfg)
			if errors.Is(err, admit.ErrDenied) {
				return silentExit(exitFailed)
			}
			return withCode(exitError, err)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&cfg.File, "filename", "f", "", "manifest to admit (JSON or YAML; - for standard input)")
	f.StringVarP(&cfg.Namespace, "namespace", "n", "", "namespace (default: the manifest's, else \"default\")")
	f.BoolVar(&cfg.DryRun, "dry-run", false, "decide only; reserve nothing")
	f.StringVar(&cfg.Validation, "validate", "strict", "what a field of the manifest that its kind does not have does, as kubectl's --validate: strict refuses it, warn sends it with a warning, ignore says nothing (values are judged by the ledger server, as the API server judges them)")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}
