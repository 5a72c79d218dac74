package ingestfiles

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quotaledger/quota/cmd/internal/namespace"
	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger"
)

// DrainTimeout bounds how long a stopped ingest goes on appending what it
// had read.
const DrainTimeout = 30 * time.Second

// Config is one `quota ingest`.
type Config struct {
	// Files are the inputs, "-" for standard input. Zero: standard input.
	Files []string
	// Namespace is -n: the namespace of plain objects that name none.
	Namespace string
	// Quiet leaves out the summary line and the terminal's hint.
	Quiet bool
	// Resync reads each file as the complete list of its kinds; Kind is
	// the resource a list covers (--kind).
	Resync bool
	Kind   string
	// Validation is --validate (strict, warn or ignore). Zero: strict.
	Validation string
	// Stream is the ledger's stream, attached. Required by Run.
	Stream *ledger.Stream
	// Request asks the ledger server, for the states of the objects of
	// plain manifests (ingest.RemoteStates). Required by Run.
	Request func(subject string, body []byte) (*nats.Msg, error)
	// Stdin is standard input, and StdinTerminal says it is a terminal
	// (Run then says how to end it). Nil: os.Stdin.
	Stdin         io.Reader
	StdinTerminal bool
	// Err receives rejections, warnings, resyncs and the summary. Nil:
	// io.Discard.
	Err io.Writer
}

// Validate reports every setting of c that is wrong, in one error. It
// checks what the flags say, not Stream and Request.
func (c Config) Validate() error {
	var problems []string
	if err := namespace.Check(c.Namespace); err != nil {
		problems = append(problems, err.Error())
	}
	if _, err := ingest.ParseValidation(c.validation()); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) == 0 {
		return nil
	}
	return invalidConfig(problems)
}

// invalidConfig is ErrInvalidConfig, worded as its problems alone: the
// messages users of the flags know.
type invalidConfig []string

func (e invalidConfig) Error() string { return strings.Join(e, "; ") }
func (e invalidConfig) Unwrap() error { return ErrInvalidConfig }

func (c Config) validation() string {
	if c.Validation == "" {
		return string(ingest.ValidateStrict)
	}
	return c.Validation
}

func (c Config) withDefaults() Config {
	if len(c.Files) == 0 {
		c.Files = []string{"-"}
	}
	if c.Stdin == nil {
		c.Stdin = os.Stdin
	}
	if c.Err == nil {
		c.Err = io.Discard
	}
	return c
}

// Run ingests every file of c, in order, until ctx ends. It returns
// ErrRejected when records were rejected, and any other error when the
// input could not be read or appended.
func Run(ctx context.Context, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if c.Stream == nil || c.Request == nil {
		return fmt.Errorf("%w: no stream or no request function", ErrInvalidConfig)
	}
	c = c.withDefaults()
	validation, _ := ingest.ParseValidation(c.validation())
	// A plain manifest is judged against the object's state in the log,
	// which the ledger server's projection tells.
	ingester, err := ingest.New(c.Stream, ingest.Options{Namespace: c.Namespace, States: ingest.RemoteStates(c.Request), Validation: validation})
	if err != nil {
		return err
	}
	// Without --resync, a stop (SIGINT, SIGTERM) ends the input: what was
	// read is still appended, within DrainTimeout, and a second signal
	// exits at once. A resync, whose list must be whole, is abandoned.
	appendCtx := ctx
	if !c.Resync {
		var cancel context.CancelFunc
		appendCtx, cancel = context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		defer context.AfterFunc(ctx, func() { time.AfterFunc(DrainTimeout, cancel) })()
	}
	if err := checkFiles(c.Files); err != nil {
		return err
	}
	total, err := c.ingestFiles(ctx, appendCtx, ingester)
	if err != nil {
		if !c.Quiet && total.Records() > 0 {
			fmt.Fprintf(c.Err, "before the error, %s\n", Summary(total))
		}
		return fmt.Errorf("%w\n(what was appended stays; ingesting the same input again appends only the rest)", err)
	}
	if !c.Quiet {
		if ctx.Err() != nil {
			fmt.Fprintln(c.Err, "stopped by a signal: the input was read up to there, and what was read is appended")
		}
		fmt.Fprintln(c.Err, Summary(total))
	}
	if total.Rejected > 0 {
		return ErrRejected
	}
	return nil
}

// checkFiles checks every file named before any is read, so that a
// mistyped name does not leave the files before it ingested.
func checkFiles(files []string) error {
	for _, name := range files {
		if name == "-" {
			continue
		}
		st, err := os.Stat(name)
		if err != nil {
			return err
		}
		if st.IsDir() {
			return fmt.Errorf("%s is a directory: name the files of watch events or manifests in it", name)
		}
	}
	return nil
}

// ingestFiles ingests the files in order and returns the sum of their
// reports, up to the first error. A stop (ctx) ends it before the next
// file; appendCtx bounds the appends.
func (c Config) ingestFiles(ctx, appendCtx context.Context, ingester *ingest.Ingester) (ingest.Report, error) {
	var total ingest.Report
	for _, name := range c.Files {
		if ctx.Err() != nil {
			break // stopped: the files after it are not read
		}
		report, err := c.ingestFile(ctx, appendCtx, ingester, name)
		total.Add(report)
		for _, w := range report.Warnings {
			fmt.Fprintf(c.Err, "%s: warning: %s\n", w.Source, w.Reason)
		}
		for _, rej := range report.Rejections {
			fmt.Fprintln(c.Err, rej.String())
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// ingestFile ingests the file name ("-": standard input).
func (c Config) ingestFile(ctx, appendCtx context.Context, ingester *ingest.Ingester, name string) (ingest.Report, error) {
	r, label := c.Stdin, "-"
	if name == "-" && !c.Quiet && c.StdinTerminal {
		fmt.Fprintln(c.Err, "reading watch events or manifests from the terminal; end with Ctrl-D (or name a FILE)")
	}
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return ingest.Report{}, err
		}
		defer f.Close()
		r, label = f, name
	}
	if !c.Resync {
		return ingester.IngestFile(appendCtx, label, untilStopped(ctx, r))
	}
	rr, err := ingester.Resync(ctx, label, r, ingest.ResyncOptions{Namespace: c.Namespace, Resource: c.Kind})
	for _, g := range rr.Groups {
		if g.Seq == 0 {
			continue
		}
		split := ""
		if g.Split {
			split = " (too large for one event: the objects appended one by one, then the list of their names)"
		}
		where := "namespace " + g.Namespace
		if g.Namespace == "" {
			where = "the cluster"
		}
		fmt.Fprintf(c.Err, "resync %s in %s: %d objects, seq %d%s\n", g.Resource, where, g.Items, g.Seq, split)
	}
	return rr.Report, err
}

// Summary is ingest's closing line.
func Summary(r ingest.Report) string {
	return fmt.Sprintf("ingested %d records: %d appended, %d already in the log, %d unchanged, %d bookmarks, %d rejected",
		r.Records(), r.Appended, r.Duplicates, r.Unchanged, r.Bookmarks, r.Rejected)
}

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
