package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/quotaledger/quota/ledger"
)

func newRejectsCommand(g *globalFlags) *cobra.Command {
	var (
		max    int
		output string
		raw    bool
		purge  bool
	)
	cmd := &cobra.Command{
		Use:   "rejects [--max N] [-o text|json] [--raw] | rejects --purge",
		Short: "List the dead letters: bad input and stream records that could not be applied",
		Long: `rejects lists the newest entries of the dead-letter stream (QUOTA_REJECTS):
every record 'quota ingest' or the quota.ingest subject refused, and every
stream record the projector could not apply, with where it came from
(FILE:LINE or QUOTA_EVENTS:SEQ), why, and (with --raw) its text as received.

--purge removes the entries, up to the newest at the time it runs, once
they have been dealt with (the input fixed and ingested again); entries
that arrive meanwhile are kept.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return withCode(exitError, errorf("-o %q: want text or json", output))
			}
			nc, _, stream, err := g.attach(cmd.Context(), "quota rejects")
			if err != nil {
				return withCode(exitError, err)
			}
			defer nc.Close()
			if purge {
				n, through, err := stream.PurgeRejections(cmd.Context())
				if err != nil {
					return withCode(exitError, err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "purged %d rejections (through seq %d)\n", n, through)
				return nil
			}
			list, err := stream.ListRejections(cmd.Context(), max)
			if err != nil {
				return withCode(exitError, err)
			}
			return printRejections(cmd, list, output, raw)
		},
	}
	f := cmd.Flags()
	f.IntVar(&max, "max", 100, fmt.Sprintf("newest entries to list (1..%d)", ledger.ListRejectionsMax))
	f.StringVarP(&output, "output", "o", "text", "output format: text or json")
	f.BoolVar(&raw, "raw", false, "also print each rejected record's text")
	f.BoolVar(&purge, "purge", false, "remove the entries instead of listing them")
	return cmd
}

// printRejections prints the dead letters list as text or JSON, with
// each one's text as received when raw is set.
func printRejections(cmd *cobra.Command, list []ledger.Rejection, output string, raw bool) error {
	if output == "json" {
		type entry struct {
			Seq    uint64    `json:"seq"`
			Time   time.Time `json:"time"`
			Origin string    `json:"origin"`
			Source string    `json:"source"`
			Reason string    `json:"reason"`
			Raw    string    `json:"raw,omitempty"`
		}
		out := make([]entry, 0, len(list))
		for _, r := range list {
			e := entry{Seq: r.Seq, Time: r.Time, Origin: r.Origin, Source: r.Source, Reason: r.Reason}
			if raw {
				e.Raw = string(r.Raw)
			}
			out = append(out, e)
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if len(list) == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "no rejections")
		return nil
	}
	for _, r := range list {
		fmt.Fprintf(cmd.OutOrStdout(), "%s  %-9s %s: %s\n", r.Time.UTC().Format(time.RFC3339), r.Origin, r.Source, r.Reason)
		if raw {
			fmt.Fprintf(cmd.OutOrStdout(), "    %s\n", strings.TrimSpace(string(r.Raw)))
		}
	}
	return nil
}
