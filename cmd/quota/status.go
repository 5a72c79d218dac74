package main

import (
	"encoding/json"
	"errors"

	"github.com/spf13/cobra"

	"github.com/quotaledger/quota/projector"
)

func newStatusCommand(g *globalFlags) *cobra.Command {
	var output, member string
	cmd := &cobra.Command{
		Use:   "status [-o text|json]",
		Short: "Show the log, the projection and the feed: what an operator checks first",
		Long: `status asks one ledger server for the state of the log (first and last
sequence and time, messages, bytes, limits, replicas, the leader and each
peer's state), of its own projection (server name, applied sequence,
backlog), and of the feed quota export records: per resource, how far
behind the wall clock its newest point is, and how many reservations wait
for it. A reservation made with 'serve --reservation-release feed' is held
until its resource's feed has passed it. Last, each quota webhook replica
heard from, with when its certificates expire: a WARNING within 30 days. -o json prints the same as JSON
(log.firstSeq, log.lastSeq, log.bytes, log.leader, log.peers[].name,
log.peers[].current, projection.appliedSeq, feeds[].at, ...). On a
cluster any member answers; --member NAME asks the one of that name.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return withCode(exitError, errorf("-o %q: want text or json", output))
			}
			subject := projector.SubjectStatus
			if member != "" {
				subject = projector.MemberSubject(subject, member)
			}
			reply, err := query[projector.StatusReply](g, "quota status", subject, struct{}{})
			if err != nil {
				return err
			}
			if reply.Status == nil {
				return withCode(exitError, errors.New("bad reply from the ledger: no status"))
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(reply.Status)
			}
			return projector.WriteStatus(cmd.OutOrStdout(), reply.Status)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringVar(&member, "member", "", "ask the server of this --server-name (a cluster member) rather than whichever answers")
	return cmd
}
