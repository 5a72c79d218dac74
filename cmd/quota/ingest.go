package main

import (
	"errors"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/quotaledger/quota/cmd/internal/ingestfiles"
)

func newIngestCommand(g *globalFlags) *cobra.Command {
	var cfg ingestfiles.Config
	cmd := &cobra.Command{
		Use:   "ingest [FILE|-]...",
		Short: "Append Kubernetes watch events or manifests to the ledger",
		Long: `ingest reads Kubernetes watch events as JSON lines (what
'kubectl get --raw /api/v1/pods?watch=true' prints: ADDED, MODIFIED, DELETED,
BOOKMARK, ERROR), or plain objects in JSON or YAML (single, multi-document or
kind: List), which count as ADDED, in UTF-8 or UTF-16 (after its byte order
mark), gzipped or not. With no FILE, or with -, it reads standard input.
Every FILE is checked before any is read: a missing one stops ingest before
it appends anything.

It returns once every valid event is durably in the stream. A live feed
(a watch piped in, the input left open: 'kubectl get --raw
/api/v1/pods?watch=true', or 'kubectl get pods -A -w --output-watch-events
-o json' or '-o yaml') is appended as it comes: an event is read once it is
whole (a YAML document when the next one begins) and waits at most 50 ms
for others to share its append. A stop (SIGINT, SIGTERM) ends the input:
what was read is still appended, and a second signal exits at once.

Each invalid record is reported as FILE:LINE: reason on standard error and
kept in the dead-letter stream (list them with 'quota rejects'); valid
records around it are still ingested, and the exit status is 1.

A manifest (a plain object, not a watch event) is checked against its
kind's fields, as kubectl does: a field the kind does not have is reported
with its path and line (q.yaml:8: unknown field "spec.hrad") and, by
default, rejects the object (--validate=warn ingests it with a warning,
--validate=ignore without one). A value that cannot be read is always
rejected, with its line, path and value. Kinds of other API groups (custom
resources) are not checked.

Re-ingesting the same watch events appends nothing new: events are
deduplicated by object uid, resourceVersion and event type, within the
stream's duplicate window (a day by default). A manifest is appended unless
the ledger holds its object in the same state now: a pod created again
after its delete, or a quota edited back, always lands, and the same
unchanged file ingested again appends nothing ("unchanged").`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Files, cfg.Err = args, cmd.ErrOrStderr()
			cfg.StdinTerminal = term.IsTerminal(int(os.Stdin.Fd()))
			if err := cfg.Validate(); err != nil {
				return withCode(exitError, err)
			}
			nc, _, stream, err := g.attach(cmd.Context(), "quota ingest")
			if err != nil {
				return withCode(exitError, err)
			}
			defer nc.Close()
			cfg.Stream = stream
			cfg.Request = func(subject string, body []byte) (*nats.Msg, error) { return g.request(nc, subject, body) }
			err = ingestfiles.Run(cmd.Context(), cfg)
			if errors.Is(err, ingestfiles.ErrRejected) {
				return silentExit(exitFailed)
			}
			return withCode(exitError, err)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&cfg.Namespace, "namespace", "n", "", "namespace for namespaced objects that name none (plain manifests)")
	f.BoolVarP(&cfg.Quiet, "quiet", "q", false, "do not print the summary line")
	f.BoolVar(&cfg.Resync, "resync", false, "FILE is the complete list of its kinds in its namespaces (e.g. kubectl get pods -n NS -o json): objects the ledger holds that it lacks are removed")
	f.StringVar(&cfg.Validation, "validate", "strict", "what a field of a manifest that its kind does not have does, as kubectl's --validate: strict rejects the object, warn ingests it with a warning, ignore says nothing (watch events are not checked; a value that cannot be read is always rejected)")
	f.StringVar(&cfg.Kind, "kind", "", "with --resync and -n: the resource the list covers (pods, jobs.batch), so that an empty list removes them all")
	return cmd
}
