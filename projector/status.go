package projector

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quotaledger/quota/ledger"
)

// SubjectStatus takes any request and replies with a StatusReply: what an
// operator checks first, as one server of the queue group sees it.
const SubjectStatus = "quota.query.status"

// Status is the state of the log, of the answering server's projection
// and of the feed.
type Status struct {
	// Time is when the server answered, on its clock: the feeds' lags
	// are counted to it.
	Time       time.Time        `json:"time"`
	Log        ledger.LogStatus `json:"log"`
	Projection ProjectionStatus `json:"projection"`
	// Feeds are what the projection knows of the exporter's feed, per
	// resource (see Feed).
	Feeds []Feed `json:"feeds"`
}

// ProjectionStatus is the answering server's projection.
type ProjectionStatus struct {
	// Server names the server that answered.
	Server     string `json:"server"`
	AppliedSeq uint64 `json:"appliedSeq"`
	// Pending is the backlog: records the log held past AppliedSeq when
	// the last applied one was delivered.
	Pending uint64 `json:"pending"`
	Skipped uint64 `json:"skipped,omitempty"`
	Rules   uint64 `json:"rules"`
}

// StatusReply is the reply of SubjectStatus: Error is set when the query
// failed.
type StatusReply struct {
	Error  string  `json:"error,omitempty"`
	Status *Status `json:"status,omitempty"`
}

// StatusResponder answers SubjectStatus from a projection and its
// stream.
type StatusResponder struct {
	nc     *nats.Conn
	p      *Projector
	stream *ledger.Stream
	server string
	log    *slog.Logger
}

// NewStatusResponder returns a StatusResponder of the server named
// server.
func NewStatusResponder(nc *nats.Conn, p *Projector, stream *ledger.Stream, server string, log *slog.Logger) *StatusResponder {
	if log == nil {
		log = slog.Default()
	}
	return &StatusResponder{nc: nc, p: p, stream: stream, server: server, log: log}
}

// Run serves until ctx ends, then drains its subscription.
func (r *StatusResponder) Run(ctx context.Context) error {
	return serveQueries(ctx, r.nc, r.log, []queryRoute{
		{SubjectStatus, QueriesInFlightMax, QueryTimeout, r.status},
	})
}

func (r *StatusResponder) status(ctx context.Context, _ []byte) (any, error) {
	logStatus, err := r.stream.Status(ctx)
	if err != nil {
		return nil, err
	}
	feeds, err := r.p.Feeds()
	if err != nil {
		return nil, fmt.Errorf("read the feeds: %w", err)
	}
	if feeds == nil {
		feeds = []Feed{}
	}
	return &StatusReply{Status: &Status{
		Time: time.Now().UTC(),
		Log:  logStatus,
		Projection: ProjectionStatus{Server: r.server, AppliedSeq: r.p.Applied(), Pending: r.p.Pending(),
			Skipped: r.p.Skipped(), Rules: r.p.Rules()},
		Feeds: feeds,
	}}, nil
}

// WriteStatus prints a status as text: the log, the projection, then the
// feed of each resource with its lag.
func WriteStatus(w io.Writer, s *Status) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	l := s.Log
	fmt.Fprintf(tw, "Log:\t%s, seq %d to %d, %d messages, %d bytes\n", l.Stream, l.FirstSeq, l.LastSeq, l.Messages, l.Bytes)
	if !l.FirstTime.IsZero() {
		fmt.Fprintf(tw, "  From:\t%s to %s\n", l.FirstTime.Format(time.RFC3339), l.LastTime.Format(time.RFC3339))
	}
	limits := "none"
	if l.MaxAge > 0 || l.MaxBytes > 0 {
		limits = fmt.Sprintf("max age %s, max bytes %d", l.MaxAge, l.MaxBytes)
	}
	fmt.Fprintf(tw, "  Limits:\t%s\n", limits)
	if l.Replicas > 1 || len(l.Peers) > 0 {
		fmt.Fprintf(tw, "  Replicas:\t%d, leader %s\n", l.Replicas, l.Leader)
	} else {
		fmt.Fprintf(tw, "  Replicas:\t1\n")
	}
	for _, p := range l.Peers {
		state := "current"
		switch {
		case p.Offline:
			state = "offline"
		case !p.Current:
			state = fmt.Sprintf("behind by %d", p.Lag)
		}
		fmt.Fprintf(tw, "  Peer %s:\t%s, seen %s ago\n", p.Name, state, p.Active.Round(time.Millisecond))
	}
	pr := s.Projection
	fmt.Fprintf(tw, "Projection:\tserver %s, applied seq %d, %d pending, rules %d\n", pr.Server, pr.AppliedSeq, pr.Pending, pr.Rules)
	tw.Flush()
	writeFeeds(&b, s)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFeeds prints the feed table, or says there is no feed.
func writeFeeds(b *strings.Builder, s *Status) {
	if len(s.Feeds) == 0 {
		b.WriteString("Feed:        none recorded (no quota export has fed this log)\n")
		return
	}
	leaders := map[string]bool{}
	for _, f := range s.Feeds {
		if f.Source != "" {
			leaders[strings.TrimPrefix(f.Source, "export ")] = true
		}
	}
	var names []string
	for n := range leaders {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(b, "Feed:        from %s\n", strings.Join(names, ", "))
	tw := tabwriter.NewWriter(b, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "  RESOURCE\tLAG\tRESOURCEVERSION\tRESERVATIONS WAITING\n")
	for _, f := range s.Feeds {
		lag := "no progress"
		if !f.At.IsZero() {
			lag = s.Time.Sub(f.At).Round(time.Second).String()
		}
		rv := f.ResourceVersion
		if rv == "" {
			rv = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\n", f.Resource, lag, rv, f.Waiting)
	}
	tw.Flush()
}
