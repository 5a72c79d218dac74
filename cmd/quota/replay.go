package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector"
	"github.com/quotaledger/quota/replay"
)

// replayFlags are replay's flags.
type replayFlags struct {
	dbPath     string
	untilSeq   uint64
	at         string
	verify     bool
	noSnapshot bool
	namespace  string
	all        bool
	explain    bool
	output     string
	archive    string
	member     string
}

func newReplayCommand(g *globalFlags) *cobra.Command {
	var o replayFlags
	cmd := &cobra.Command{
		Use:   "replay [--db FILE] [--until-seq N | --at RFC3339] [--verify | --explain -n NS] [--archive DIR] [-o text|json]",
		Short: "Rebuild usage from the stream, at any point, and compare it with the live projection",
		Long:  replayLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := o.options(cmd.Flags().Changed("until-seq"))
			if err != nil {
				return withCode(exitError, err)
			}
			return runReplay(cmd, g, o, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dbPath, "db", "", "keep the rebuilt projection in this bbolt file (must not exist)")
	f.Uint64Var(&o.untilSeq, "until-seq", 0, "apply events up to and including this stream sequence")
	f.StringVar(&o.at, "at", "", "apply the events the stream stored at or before this time (RFC 3339)")
	f.BoolVar(&o.verify, "verify", false, "compare with the live projection; exit 1 on any difference")
	f.BoolVar(&o.noSnapshot, "no-snapshot", false, "start from none of the object store's checkpoints: from the first event (or the archive's checkpoints)")
	f.StringVar(&o.archive, "archive", "", "read the events the log no longer holds from this archive ('quota serve --archive'), and start from its checkpoints")
	f.StringVarP(&o.namespace, "namespace", "n", "", "print only this namespace's quotas")
	f.BoolVarP(&o.all, "all-namespaces", "A", false, "print every namespace's quotas (the default)")
	f.BoolVar(&o.explain, "explain", false, "print which objects made up each quota's usage at that point, as 'quota explain' does (needs -n)")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	f.StringVar(&o.member, "member", "", "with --verify, compare the projection of the server of this --server-name (a cluster member) rather than whichever answers")
	return cmd
}

const replayLong = `replay folds the event stream into a fresh projection with the projector's own
fold, from the newest usable snapshot (or the first event) up to the end of the
stream, to --until-seq N, or to the last event the stream stored at or before
--at TIME (RFC 3339). It prints the rebuilt quotas as 'quota describe' does
(-A for every namespace, -n NS for one; default every namespace).

--explain -n NS prints instead what 'quota explain' prints, at that point:
for each quota of NS and each resource it limits, the objects whose charges
made up Used then, largest first, each with the sequence of the event that
last set it. With --at, this is what a namespace used at a past moment and
why.

--db FILE keeps the rebuilt bbolt file (it must not exist; a rebuild that
fails, a full disk say, removes it); by default a temporary file is used and
removed. --no-snapshot starts from none of the object store's checkpoints.

A log trimmed by 'serve --retention' starts right after a checkpoint: a
moment or sequence before that checkpoint is refused (exit 2), naming the
oldest one the log answers, unless --archive DIR, the archive 'serve
--archive' writes, holds the events before it: they are read from there,
before the log's, starting from a checkpoint the archive keeps.

--verify asks the live server for a copy of its projection at its applied
sequence S, rebuilds to exactly S from the oldest starting point (the first
event when the log or the archive holds it, else the oldest checkpoint the
log continues, whose own drift, if any, it carries), prints every
difference on its own line and exits 1 when there is any, 0 when the two
are equal. On a cluster any member answers; --member NAME compares the
projection of the member of that --server-name.`

// options checks the flags and returns the replay they ask for;
// untilSeqSet says --until-seq was given.
func (o replayFlags) options(untilSeqSet bool) (replay.Options, error) {
	if o.output != "text" && o.output != "json" {
		return replay.Options{}, errorf("-o %q: want text or json", o.output)
	}
	opts := replay.Options{Path: o.dbPath, UntilSeq: o.untilSeq, Member: o.member}
	if o.at != "" {
		t, err := time.Parse(time.RFC3339Nano, o.at)
		if err != nil {
			return replay.Options{}, errorf("--at %q: want RFC 3339, e.g. 2026-11-22T14:03:00Z", o.at)
		}
		opts.At = t
	}
	switch {
	case untilSeqSet && o.untilSeq == 0:
		return replay.Options{}, errors.New("--until-seq 0 would apply nothing: the stream's sequences start at 1")
	case o.at != "" && o.untilSeq > 0:
		return replay.Options{}, errors.New("--until-seq and --at exclude each other")
	case o.verify && (o.at != "" || o.untilSeq > 0):
		return replay.Options{}, errors.New("--verify compares at the live server's applied sequence; it takes no --until-seq or --at")
	case o.all && o.namespace != "":
		return replay.Options{}, errors.New("-n and -A exclude each other")
	case o.member != "" && !o.verify:
		return replay.Options{}, errors.New("--member names the server whose projection --verify compares: give it --verify")
	case o.explain && (o.verify || o.namespace == ""):
		return replay.Options{}, errors.New("--explain explains one namespace's quotas: give it -n NS, and no --verify")
	}
	return opts, nil
}

// runReplay rebuilds the projection opts asks for, or verifies the live
// one, and prints it.
func runReplay(cmd *cobra.Command, g *globalFlags, o replayFlags, opts replay.Options) error {
	ctx := cmd.Context()
	nc, js, stream, err := g.attach(ctx, "quota replay")
	if err != nil {
		return withCode(exitError, err)
	}
	defer nc.Close()
	snaps, err := projector.OpenSnapshotsExisting(ctx, js, projector.DefaultSnapshotBucket)
	if err != nil && !errors.Is(err, projector.ErrNoSnapshots) {
		return withCode(exitError, err)
	}
	if err == nil && !o.noSnapshot {
		opts.Snapshots = snaps
	}
	if o.archive != "" {
		if opts.Archive, err = ledger.OpenArchive(o.archive, false); err != nil {
			return withCode(exitError, err)
		}
	}
	opts.Progress = progressPrinter(cmd.ErrOrStderr())

	if o.verify {
		if snaps == nil {
			return withCode(exitError, errors.New("the server keeps no snapshot store; --verify needs one (is this server older than replay?)"))
		}
		v, err := replay.Verify(ctx, nc, stream, snaps, opts)
		if err != nil {
			return withCode(exitError, err)
		}
		defer v.Close()
		return printVerification(cmd.OutOrStdout(), v, o.output)
	}

	res, err := replay.Rebuild(ctx, stream, opts)
	if errors.Is(err, replay.ErrFileExists) {
		return withCode(exitError, fmt.Errorf("%w: --db takes a new file; remove it or name another", err))
	}
	if err != nil {
		return withCode(exitError, err)
	}
	defer res.Close()
	return printRebuilt(cmd, res, o)
}

// printRebuilt prints a rebuilt projection: what it was rebuilt from on
// standard error, then its quotas, or with --explain their explanation.
func printRebuilt(cmd *cobra.Command, res *replay.Result, o replayFlags) error {
	fmt.Fprintf(cmd.ErrOrStderr(), "replayed to seq %d (%s) from %s: %d events in %s\n",
		res.Seq, formatTime(res.Time), res.From, res.Applied, res.Elapsed.Round(time.Millisecond))
	if o.explain {
		return printExplanation(cmd, res.Projector, o.namespace, o.output)
	}
	list, err := res.Projector.Quotas(o.namespace, "", o.namespace == "")
	if err != nil {
		return withCode(exitError, err)
	}
	if o.output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	if len(list.Items) == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "No resources found")
		return nil
	}
	return projector.WriteDescribe(cmd.OutOrStdout(), list)
}

// printExplanation prints the explanation of namespace's quotas in a
// rebuilt projection, as 'quota explain' prints the live one.
func printExplanation(cmd *cobra.Command, p *projector.Projector, namespace, output string) error {
	e, err := p.Explain(namespace, "")
	if err != nil {
		return withCode(exitError, err)
	}
	return writeExplanation(cmd, e, output)
}

// verifyReport is the -o json form of a verification.
type verifyReport struct {
	Seq         uint64              `json:"seq"`
	Time        time.Time           `json:"time"`
	Drift       bool                `json:"drift"`
	Differences []replay.Difference `json:"differences"`
}

func printVerification(w io.Writer, v *replay.Verification, output string) error {
	drift := len(v.Differences) > 0
	if output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		diffs := v.Differences
		if diffs == nil {
			diffs = []replay.Difference{}
		}
		if err := enc.Encode(verifyReport{Seq: v.Live.Seq, Time: v.Live.Time, Drift: drift, Differences: diffs}); err != nil {
			return withCode(exitError, err)
		}
	} else {
		for _, d := range v.Differences {
			fmt.Fprintln(w, d.String())
		}
		if drift {
			fmt.Fprintf(w, "drift: %d differences at seq %d\n", len(v.Differences), v.Live.Seq)
		} else {
			fmt.Fprintf(w, "no drift at seq %d (%s)\n", v.Live.Seq, formatTime(v.Live.Time))
		}
	}
	if drift {
		return silentExit(exitFailed)
	}
	return nil
}

// formatTime gives the time of the last event replayed; none was for an
// empty stream, or a time before its first event.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "before the first event"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// progressPrinter returns a progress callback that redraws one line on a
// terminal, or nil when standard error is not one (piped output stays
// clean).
func progressPrinter(w io.Writer) func(replay.Progress) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return func(p replay.Progress) {
		if p.Done {
			if p.Applied > 0 {
				fmt.Fprint(w, "\r\033[K")
			}
			return
		}
		fmt.Fprintf(w, "\r\033[Kreplay: %d/%d events, %.0f events/s, %s left", p.Applied, p.Total, p.Rate(), p.Remaining().Round(time.Second))
	}
}
