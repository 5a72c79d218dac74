package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/quotaledger/quota/projector"
)

func newExplainCommand(g *globalFlags) *cobra.Command {
	var (
		namespace string
		output    string
	)
	cmd := &cobra.Command{
		Use:   "explain [NAME] [-n NS] [-o text|json]",
		Short: "Show which objects make up each quota's usage",
		Long: `explain lists, for each quota of a namespace (or the quota NAME) and each
resource it limits, the objects whose charges sum to Used and what each is
charged, largest first (ties by object). Charges that are admissions'
reservations for objects not yet reported are marked. It reflects every event
appended before the call.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return withCode(exitError, errorf("-o %q: want text or json", output))
			}
			if err := checkNamespace(namespace); err != nil {
				return withCode(exitError, err)
			}
			req := projector.ExplainRequest{Namespace: namespace}
			if req.Namespace == "" {
				req.Namespace = "default"
			}
			if len(args) == 1 {
				req.Name = args[0]
			}
			reply, err := query[projector.AuditReply](g, "quota explain", projector.SubjectExplain, req)
			if err != nil {
				return err
			}
			return writeExplanation(cmd, reply.Explanation, output)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&namespace, "namespace", "n", "", "namespace (default \"default\")")
	f.StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// writeExplanation prints e as text or, with output "json", as JSON.
func writeExplanation(cmd *cobra.Command, e *projector.Explanation, output string) error {
	if output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(e)
	}
	if len(e.Quotas) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "No resources found in %s namespace.\n", e.Namespace)
		return nil
	}
	return projector.WriteExplain(cmd.OutOrStdout(), e)
}
