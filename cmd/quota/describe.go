package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/quotaledger/quota/projector"
)

func newDescribeCommand(g *globalFlags) *cobra.Command {
	var (
		namespace string
		all       bool
		output    string
	)
	cmd := &cobra.Command{
		Use:   "describe [NAME] [-n NS | -A] [-o text|json]",
		Short: "Show quotas with their usage, as kubectl describe quota does",
		Long: `describe prints quotas with their hard limits and current usage. Text output
is the layout of 'kubectl describe quota'; -o json prints a Kubernetes
ResourceQuotaList. It reflects every event appended before the call.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return withCode(exitError, errorf("-o %q: want text or json", output))
			}
			if err := checkNamespace(namespace); err != nil {
				return withCode(exitError, err)
			}
			req := projector.DescribeRequest{Namespace: namespace, AllNamespaces: all}
			if len(args) == 1 {
				req.Name = args[0]
			}
			if all && req.Name != "" {
				return withCode(exitError, errors.New("a quota NAME cannot be combined with -A"))
			}
			if !all && namespace == "" {
				req.Namespace = "default"
			}
			reply, err := query[projector.QueryReply](g, "quota client", projector.SubjectDescribe, req)
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(reply.List)
			}
			if len(reply.List.Items) == 0 {
				if all {
					fmt.Fprintln(os.Stderr, "No resources found")
				} else {
					fmt.Fprintf(os.Stderr, "No resources found in %s namespace.\n", req.Namespace)
				}
				return nil
			}
			return projector.WriteDescribe(os.Stdout, reply.List)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&namespace, "namespace", "n", "", "namespace (default \"default\")")
	f.BoolVarP(&all, "all-namespaces", "A", false, "quotas of every namespace")
	f.StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
