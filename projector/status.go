package projector

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quotaledger/quota/ledger"
)

// SubjectStatus takes any request and replies with a StatusReply: what an
// operator checks first, as one server of the queue group sees it.
const SubjectStatus = "quota.query.status"

// MemberSubject is the subject on which the server named server alone
// answers what subject asks of any server of the queue group: its own
// status, a snapshot of its own projection. On a cluster, where NATS
// hands a request to any member, it is how a client asks one member.
func MemberSubject(subject, server string) string { return subject + "." + server }

// SubjectWebhookStatusPrefix, followed by a webhook replica's name, is
// where `quota webhook` publishes its WebhookStatus every
// WebhookStatusInterval; every server keeps the newest of each.
const SubjectWebhookStatusPrefix = "quota.status.webhook."

// WebhookStatusInterval is how often a webhook publishes its status.
// A webhook not heard from for three intervals is shown as silent.
const WebhookStatusInterval = 30 * time.Second

// CertificateExpiryWarning is how long before a webhook's certificate
// expires that quota status warns of it.
const CertificateExpiryWarning = 30 * 24 * time.Hour

// WebhookStatus is what a webhook replica says of itself.
type WebhookStatus struct {
	Name string `json:"name"`
	// CertificateExpiry is when its serving certificate expires.
	CertificateExpiry time.Time `json:"certificateExpiry"`
	// ClientCertificateExpiry is when the client certificate of the last
	// review it took expires (kube-apiserver's); zero when it takes
	// reviews from any caller, or has taken none yet.
	ClientCertificateExpiry time.Time `json:"clientCertificateExpiry,omitzero"`
	// Sent is when it published this, on its clock.
	Sent time.Time `json:"sent"`
}

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
	// Webhooks are the webhook replicas this server has heard from, by
	// name, with when it last did.
	Webhooks []HeardWebhook `json:"webhooks"`
	// Checkpoints are the checkpoints in the object store, oldest first:
	// what a rebuild starts from.
	Checkpoints []SnapshotInfo `json:"checkpoints"`
	// Archive is the archive the answering server writes to; nil when
	// it has none.
	Archive *ArchiveStatus `json:"archive,omitempty"`
}

// ArchiveStatus is what an archive holds.
type ArchiveStatus struct {
	Dir      string `json:"dir"`
	Segments int    `json:"segments"`
	Bytes    int64  `json:"bytes"`
	// FirstSeq and LastSeq are the sequences its segments hold without
	// a gap from the first of them (0: none).
	FirstSeq uint64 `json:"firstSeq"`
	LastSeq  uint64 `json:"lastSeq"`
	// LastSegment is its newest segment; nil when it has none.
	LastSegment *ledger.ArchiveSegment `json:"lastSegment,omitempty"`
	// Checkpoints is the number of checkpoints it keeps.
	Checkpoints int `json:"checkpoints"`
	// Error says why the archive could not be read.
	Error string `json:"error,omitempty"`
}

// HeardWebhook is a webhook's last status and when this server got it.
type HeardWebhook struct {
	WebhookStatus
	Heard time.Time `json:"heard"`
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

// webhooksMax bounds the webhook replicas a server remembers.
const webhooksMax = 256

// heard keeps a webhook's status; a malformed one is logged and dropped,
// as it is no fact of the log.
func (r *Responder) heard(m *nats.Msg) {
	var st WebhookStatus
	if err := json.Unmarshal(m.Data, &st); err != nil || st.Name == "" {
		r.log.Warn("malformed webhook status", "subject", m.Subject, "err", err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.webhooks[st.Name]; !ok && len(r.webhooks) >= webhooksMax {
		return
	}
	r.webhooks[st.Name] = HeardWebhook{WebhookStatus: st, Heard: time.Now().UTC()}
}

// heardWebhooks returns the webhooks heard from, by name.
func (r *Responder) heardWebhooks() []HeardWebhook {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.AppendSeq(make([]HeardWebhook, 0, len(r.webhooks)), maps.Values(r.webhooks))
	slices.SortFunc(out, func(a, b HeardWebhook) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func (r *Responder) status(ctx context.Context, _ []byte) (any, error) {
	logStatus, err := r.cfg.Stream.Status(ctx)
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
	logStatus.Retention = r.cfg.Retention
	st := &Status{
		Time: time.Now().UTC(),
		Log:  logStatus,
		Projection: ProjectionStatus{Server: r.cfg.Server, AppliedSeq: r.p.Applied(), Pending: r.p.Pending(),
			Skipped: r.p.Skipped(), Rules: r.p.Rules()},
		Feeds:       feeds,
		Webhooks:    r.heardWebhooks(),
		Checkpoints: []SnapshotInfo{},
	}
	if r.cfg.Snapshots != nil {
		list, err := r.cfg.Snapshots.List(ctx)
		if err != nil {
			return nil, fmt.Errorf("list the checkpoints: %w", err)
		}
		st.Checkpoints = append(st.Checkpoints, list...)
	}
	if r.cfg.Archive != nil {
		st.Archive = archiveStatus(r.cfg.Archive)
	}
	return &StatusReply{Status: st}, nil
}

// archiveStatus reads what a holds; an archive that cannot be read says
// why in its Error.
func archiveStatus(a *ledger.Archive) *ArchiveStatus {
	st := &ArchiveStatus{Dir: a.Dir()}
	segs, err := a.Segments()
	if err == nil {
		var cps []ledger.ArchiveCheckpoint
		cps, err = a.Checkpoints()
		st.Checkpoints = len(cps)
	}
	if err == nil {
		st.FirstSeq, st.LastSeq, err = a.Covered()
	}
	if err != nil {
		st.Error = err.Error()
		return st
	}
	st.Segments = len(segs)
	for i, s := range segs {
		st.Bytes += s.Bytes
		if st.LastSegment == nil || s.LastSeq > st.LastSegment.LastSeq {
			st.LastSegment = &segs[i]
		}
	}
	return st
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
	fmt.Fprintf(tw, "  Limits:\t%s\n", limitsText(l, s.Archive))
	writeMembers(tw, l)
	pr := s.Projection
	fmt.Fprintf(tw, "Projection:\tserver %s, applied seq %d, %d pending, rules %d\n", pr.Server, pr.AppliedSeq, pr.Pending, pr.Rules)
	tw.Flush()
	writeCheckpoints(&b, s)
	writeFeeds(&b, s)
	writeWebhooks(&b, s)
	_, err := io.WriteString(w, b.String())
	return err
}

// limitsText says what bounds the log: JetStream's limits, and the
// retention its server trims it to.
func limitsText(l ledger.LogStatus, archive *ArchiveStatus) string {
	var limits []string
	if l.MaxAge > 0 || l.MaxBytes > 0 {
		limits = append(limits, fmt.Sprintf("max age %s, max bytes %d", l.MaxAge, l.MaxBytes))
	}
	if l.Retention > 0 {
		where := "not archived"
		if archive != nil {
			where = "archived to " + archive.Dir
		}
		limits = append(limits, fmt.Sprintf("retention %s (older events a checkpoint covers leave the log, %s)", l.Retention, where))
	}
	if len(limits) == 0 {
		return "none (the log keeps every event)"
	}
	return strings.Join(limits, "; ")
}

// writeCheckpoints prints the checkpoints, a line each, then the
// archive.
func writeCheckpoints(b *strings.Builder, s *Status) {
	if len(s.Checkpoints) == 0 {
		b.WriteString("Checkpoints: none yet\n")
	} else {
		fmt.Fprintf(b, "Checkpoints: %d\n", len(s.Checkpoints))
	}
	for _, c := range s.Checkpoints {
		fmt.Fprintf(b, "  seq %d, %s, rules %d, %d bytes\n", c.Seq, c.Time.UTC().Format(time.RFC3339), c.Rules, c.Size)
	}
	a := s.Archive
	switch {
	case a == nil:
	case a.Error != "":
		fmt.Fprintf(b, "Archive:     %s: %s\n", a.Dir, a.Error)
	case a.LastSegment == nil:
		fmt.Fprintf(b, "Archive:     %s: empty\n", a.Dir)
	default:
		l := a.LastSegment
		fmt.Fprintf(b, "Archive:     %s: seq %d to %d in %d segments, %d bytes, %d checkpoints\n", a.Dir, a.FirstSeq, a.LastSeq, a.Segments, a.Bytes, a.Checkpoints)
		fmt.Fprintf(b, "  last %s: seq %d to %d, %s to %s\n", l.Name, l.FirstSeq, l.LastSeq, l.FirstTime.Format(time.RFC3339), l.LastTime.Format(time.RFC3339))
	}
}

// writeMembers prints the log's replicas: their number, then, when they
// are on several servers, a line for each, the leader first, each other
// one current, behind (by how many operations) or offline, with when the
// leader last heard from it.
func writeMembers(tw io.Writer, l ledger.LogStatus) {
	if l.Replicas <= 1 && len(l.Peers) == 0 {
		fmt.Fprintf(tw, "  Replicas:\t1\n")
		return
	}
	leader := cmp.Or(l.Leader, "none (an election is under way, or too few members are up)")
	fmt.Fprintf(tw, "  Replicas:\t%d, leader %s\n", l.Replicas, leader)
	if l.Leader != "" {
		fmt.Fprintf(tw, "  Member %s:\tleader\n", l.Leader)
	}
	for _, p := range l.Peers {
		state := "current"
		switch {
		case p.Offline:
			state = "offline"
		case !p.Current:
			state = "not current"
		}
		if p.Lag > 0 {
			state += fmt.Sprintf(", behind by %d operations", p.Lag)
		}
		fmt.Fprintf(tw, "  Member %s:\t%s, heard from %s ago\n", p.Name, state, p.Active.Round(time.Millisecond))
	}
}

// writeWebhooks prints a line per webhook replica heard from, warning of
// a certificate that expires within CertificateExpiryWarning and of a
// replica not heard from for three intervals.
func writeWebhooks(b *strings.Builder, s *Status) {
	if len(s.Webhooks) == 0 {
		b.WriteString("Webhooks:    none heard from\n")
		return
	}
	for _, w := range s.Webhooks {
		line := fmt.Sprintf("Webhook %s: certificate expires %s", w.Name, w.CertificateExpiry.Format(time.RFC3339))
		var warnings []string
		if left := w.CertificateExpiry.Sub(s.Time); left < CertificateExpiryWarning {
			warnings = append(warnings, fmt.Sprintf("WARNING: the serving certificate expires in %s, renew it", left.Round(time.Hour)))
		}
		if !w.ClientCertificateExpiry.IsZero() {
			line += ", kube-apiserver's client certificate " + w.ClientCertificateExpiry.Format(time.RFC3339)
			if left := w.ClientCertificateExpiry.Sub(s.Time); left < CertificateExpiryWarning {
				warnings = append(warnings, fmt.Sprintf("WARNING: kube-apiserver's client certificate expires in %s, renew it", left.Round(time.Hour)))
			}
		}
		if silent := s.Time.Sub(w.Heard); silent > 3*WebhookStatusInterval {
			warnings = append(warnings, fmt.Sprintf("not heard from for %s", silent.Round(time.Second)))
		}
		b.WriteString(line + "\n")
		for _, warning := range warnings {
			b.WriteString("  " + warning + "\n")
		}
	}
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
	fmt.Fprintf(b, "Feed:        from %s\n", strings.Join(slices.Sorted(maps.Keys(leaders)), ", "))
	tw := tabwriter.NewWriter(b, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "  RESOURCE\tLAG\tRESOURCEVERSION\tRESERVATIONS WAITING\n")
	for _, f := range s.Feeds {
		lag := "no progress"
		if !f.At.IsZero() {
			lag = s.Time.Sub(f.At).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\n", f.Resource, lag, cmp.Or(f.ResourceVersion, "-"), f.Waiting)
	}
	tw.Flush()
}
