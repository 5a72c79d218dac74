package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/quotaledger/quota/cmd/internal/credentials"
)

var credentialsHelp = `credentials writes into DIR what a cluster installation keeps secret:

  COMPONENT.nk  a new NKey seed for each component that reaches the ledger's
                NATS (` + strings.Join(credentials.Components, ", ") + `)
  auth.conf     the authorization block 'quota serve --auth' requires, giving
                each key only the subjects its component needs (the webhook
                may only request on quota.admit.>)
  ca.crt, ca.key
                a CA made for this installation, which kube-apiserver trusts
                for the webhook's certificate
  tls.crt, tls.key
                the webhook's serving certificate, signed by that CA, for
                the Service's DNS names in --namespace
  client-ca.crt, client-ca.key
                a second CA, which the webhook trusts for its callers
                (quota webhook --client-ca)
  apiserver-client.crt, apiserver-client.key
                kube-apiserver's client certificate, signed by the client CA
  apiserver-kubeconfig.yaml, admission-config.yaml
                for kube-apiserver --admission-control-config-file: they
                make it present that certificate to the webhook's Service,
                and name the files by their path in --apiserver-dir, where
                they go on each control-plane host

deploy/ reads the keys, the serving pair and client-ca.crt from
deploy/credentials into Secrets, and puts ca.crt into the
ValidatingWebhookConfiguration. ca.key and client-ca.key are never put into
the cluster: keep them, with the directory, out of it. It refuses to
overwrite existing files.

--renew issues a new serving pair and a new client pair for kube-apiserver
with the CAs kept in DIR (valid for another year, naming what the old ones
named) and changes nothing else: the caBundle, --client-ca and the NATS keys
stay valid. Apply deploy/ again and copy the client pair to the
control-plane hosts.`

func newCredentialsCommand() *cobra.Command {
	var (
		cfg   credentials.Config
		renew bool
	)
	cmd := &cobra.Command{
		Use:   "credentials DIR [--namespace NS] [--apiserver-dir DIR] | credentials --renew DIR",
		Short: "Write the NATS keys of each component and the webhook's certificates, for deploy/ and kube-apiserver",
		Long:  credentialsHelp,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Dir = args[0]
			if renew {
				if err := credentials.Renew(cfg); err != nil {
					return withCode(exitError, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "renewed %s in %s\n", strings.Join(credentials.Renewed(), ", "), cfg.Dir)
				return nil
			}
			if err := credentials.Write(cfg); err != nil {
				return withCode(exitError, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s into %s (keep them secret; keep %s and %s out of the cluster)\n",
				strings.Join(credentials.Files(), ", "), cfg.Dir, credentials.CAKeyFile, credentials.ClientCAKeyFile)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&cfg.Namespace, "namespace", "n", credentials.DefaultNamespace, "namespace the ledger is installed in, which the webhook's certificate names")
	f.StringVar(&cfg.Service, "service", credentials.DefaultService, "name of the webhook's Service, which its certificate names")
	f.StringVar(&cfg.APIServerDir, "apiserver-dir", credentials.DefaultAPIServerDir, "absolute directory on the control-plane hosts where kube-apiserver's files go, which its kubeconfig and admission configuration name")
	f.BoolVar(&renew, "renew", false, "issue new serving and client certificates with the CAs kept in DIR, leaving everything else as it is")
	cmd.MarkFlagsMutuallyExclusive("renew", "namespace")
	cmd.MarkFlagsMutuallyExclusive("renew", "service")
	cmd.MarkFlagsMutuallyExclusive("renew", "apiserver-dir")
	return cmd
}
