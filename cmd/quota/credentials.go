package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/quotaledger/quota/cmd/internal/credentials"
)

func newCredentialsCommand() *cobra.Command {
	var cfg credentials.Config
	cmd := &cobra.Command{
		Use:   "credentials DIR [--namespace NS]",
		Short: "Write the NATS keys of each component and the webhook's certificate, for deploy/",
		Long: `credentials writes into DIR what a cluster installation keeps secret:

  COMPONENT.nk  a new NKey seed for each component that reaches the ledger's
                NATS (` + strings.Join(credentials.Components, ", ") + `)
  auth.conf     the authorization block 'quota serve --auth' requires, giving
                each key only the subjects its component needs (the webhook
                may only request on quota.admit.>)
  ca.crt        a CA made for this installation (its key is not kept)
  tls.crt, tls.key
                the webhook's serving certificate, signed by that CA, for
                the Service's DNS names in --namespace

deploy/ reads them from deploy/credentials into Secrets, and puts ca.crt into
the ValidatingWebhookConfiguration. It refuses to overwrite existing files.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Dir = args[0]
			if err := credentials.Write(cfg); err != nil {
				return withCode(exitError, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s into %s (keep them secret)\n", strings.Join(credentials.Files(), ", "), cfg.Dir)
			return nil
		},
	}
	cmd.Flags().StringVarP(&cfg.Namespace, "namespace", "n", credentials.DefaultNamespace, "namespace the ledger is installed in, which the webhook's certificate names")
	cmd.Flags().StringVar(&cfg.Service, "service", credentials.DefaultService, "name of the webhook's Service, which its certificate names")
	return cmd
}
