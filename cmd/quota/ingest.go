package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/quotaledger/quota/ingest"
)

func newIngestCommand(g *globalFlags) *cobra.Command {
	var (
		namespace string
		quiet     bool
		resync    bool
		kind      string
		validate  string
	)
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
			if len(args) == 0 {
				args = []string{"-"}
			}
			if err := checkNamespace(namespace); err != nil {
				return withCode(exitError, err)
			}
			validation, err := ingest.ParseValidation(validate)
			if err != nil {
				return withCode(exitError, err)
			}
			nc, _, stream, err := g.attach(cmd.Context(), "quota ingest")
			if err != nil {
				return withCode(exitError, err)
			}
			defer nc.Close()
			// A plain manifest is judged against the object's state in the
			// log, which the ledger server's projection tells.
			states := ingest.RemoteStates(func(subject string, body []byte) (*nats.Msg, error) {
				return g.request(nc, subject, body)
			})
			ingester, err := ingest.New(stream, ingest.Options{Namespace: namespace, States: states, Validation: validation})
			if err != nil {
				return withCode(exitError, err)
			}
			// Without --resync, a stop (SIGINT, SIGTERM) ends the input:
			// what was read is still appended, within drainTimeout, and a
			// second signal exits at once. A resync, whose list must be
			// whole, is abandoned.
			ctx := cmd.Context()
			appendCtx := ctx
			if !resync {
				var cancel context.CancelFunc
				appendCtx, cancel = context.WithCancel(context.WithoutCancel(ctx))
				defer cancel()
				defer context.AfterFunc(ctx, func() { time.AfterFunc(drainTimeout, cancel) })()
			}
			// Every file named is checked before any is read, so that a
			// mistyped name does not leave the files before it ingested.
			for _, name := range args {
				if name == "-" {
					continue
				}
				st, err := os.Stat(name)
				if err != nil {
					return withCode(exitError, err)
				}
				if st.IsDir() {
					return withCode(exitError, fmt.Errorf("%s is a directory: name the files of watch events or manifests in it", name))
				}
			}
			var total ingest.Report
			for _, name := range args {
				if ctx.Err() != nil {
					break // stopped: the files after it are not read
				}
				var r io.Reader = os.Stdin
				label := "-"
				if name == "-" && !quiet && term.IsTerminal(int(os.Stdin.Fd())) {
					fmt.Fprintln(cmd.ErrOrStderr(), "reading watch events or manifests from the terminal; end with Ctrl-D (or name a FILE)")
				}
				if name != "-" {
					f, err := os.Open(name)
					if err != nil {
						return withCode(exitError, err)
					}
					defer f.Close()

					r, label = f, name
				}
				var report ingest.Report
				if resync {
					var rr ingest.ResyncReport
					rr, err = ingester.Resync(ctx, label, r, ingest.ResyncOptions{Namespace: namespace, Resource: kind})
					report = rr.Report
					for _, g := range rr.Groups {
						if g.Seq != 0 {
							split := ""
							if g.Split {
								split = " (too large for one event: the objects appended one by one, then the list of their names)"
							}
							where := "namespace " + g.Namespace
							if g.Namespace == "" {
								where = "the cluster"
							}
							fmt.Fprintf(cmd.ErrOrStderr(), "resync %s in %s: %d objects, seq %d%s\n", g.Resource, where, g.Items, g.Seq, split)
						}
					}
				} else {
					report, err = ingester.IngestFile(appendCtx, label, untilStopped(ctx, r))
				}
				total.Add(report)
				for _, w := range report.Warnings {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: warning: %s\n", w.Source, w.Reason)
				}
				for _, rej := range report.Rejections {
					fmt.Fprintln(cmd.ErrOrStderr(), rej.String())
				}
				if err != nil {
					if !quiet && total.Records() > 0 {
						fmt.Fprintf(cmd.ErrOrStderr(), "before the error, %s\n", summary(total))
					}
					return withCode(exitError, fmt.Errorf("%w\n(what was appended stays; ingesting the same input again appends only the rest)", err))
				}
			}
			if !quiet {
				if ctx.Err() != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), "stopped by a signal: the input was read up to there, and what was read is appended")
				}
				fmt.Fprintln(cmd.ErrOrStderr(), summary(total))
			}
			if total.Rejected > 0 {
				return silentExit(exitFailed)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&namespace, "namespace", "n", "", "namespace for namespaced objects that name none (plain manifests)")
	f.BoolVarP(&quiet, "quiet", "q", false, "do not print the summary line")
	f.BoolVar(&resync, "resync", false, "FILE is the complete list of its kinds in its namespaces (e.g. kubectl get pods -n NS -o json): objects the ledger holds that it lacks are removed")
	f.StringVar(&validate, "validate", "strict", "what a field of a manifest that its kind does not have does, as kubectl's --validate: strict rejects the object, warn ingests it with a warning, ignore says nothing (watch events are not checked; a value that cannot be read is always rejected)")
	f.StringVar(&kind, "kind", "", "with --resync and -n: the resource the list covers (pods, jobs.batch), so that an empty list removes them all")
	return cmd
}

// summary is ingest's closing line.
func summary(r ingest.Report) string {
	return fmt.Sprintf("ingested %d records: %d appended, %d already in the log, %d unchanged, %d bookmarks, %d rejected",
		r.Records(), r.Appended, r.Duplicates, r.Unchanged, r.Bookmarks, r.Rejected)
}

// drainTimeout bounds how long a stopped ingest goes on appending what it
// had read.
const drainTimeout = 30 * time.Second

// untilStopped returns r, read by a goroutine of its own, as an input
// that ends when ctx does. A read of a pipe that has nothing to give (a
// watch piped in, between events) cannot be interrupted by closing the
// pipe: blocking pipes bypass Go's poller.
func untilStopped(ctx context.Context, r io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				if _, werr := pw.Write(buf[:n]); werr != nil {
					return // ended
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	context.AfterFunc(ctx, func() { pw.CloseWithError(io.EOF) })
	return pr
}
