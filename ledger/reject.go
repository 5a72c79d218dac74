package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Dead letters (see the package doc) are kept in Config.RejectStreamName on
// RejectSubjectPrefix+origin, the raw input as the body, byte for byte, so
// that `nats stream view QUOTA_REJECTS` shows it as it came.
const (
	// RejectSourceHeader carries Rejection.Source.
	RejectSourceHeader = "Quota-Source"
	// RejectReasonHeader carries Rejection.Reason.
	RejectReasonHeader = "Quota-Reason"

	// OriginIngest marks rejections of outside input.
	OriginIngest = "ingest"
	// OriginProjector marks stream records the projector could not apply.
	OriginProjector = "projector"

	// RejectRawMax is the most raw bytes a rejection keeps; longer input is
	// cut, and the reason says so.
	RejectRawMax = 256 << 10
	// RejectHeaderMax is the longest source or reason kept in a header.
	RejectHeaderMax = 4096
	// rejectHeaderOverhead bounds the header bytes of a rejection besides
	// its source and reason: the header names, the message ID, framing, and
	// the note added when the raw bytes are cut.
	rejectHeaderOverhead = 256
	// ListRejectionsMax is the largest max ListRejections accepts.
	ListRejectionsMax = 10_000
)

// Rejection is one dead letter.
type Rejection struct {
	// Origin says which part rejected it: OriginIngest, OriginProjector or
	// another single subject token.
	Origin string
	// Source locates the input: "FILE:LINE" for ingest, "QUOTA_EVENTS:SEQ"
	// for a stream record.
	Source string
	// Reason says why it was rejected, in one line.
	Reason string
	// Raw is the input as it was.
	Raw []byte
	// Seq and Time are set by ListRejections: where and when the dead-letter
	// stream stored it.
	Seq  uint64
	Time time.Time
}

// Reject stores r in the dead-letter stream. Rejecting the same input from
// the same source for the same reason twice within the duplicate window
// stores it once, so re-ingesting a broken file does not pile up copies.
func (s *Stream) Reject(ctx context.Context, r Rejection) error {
	if r.Origin == "" {
		r.Origin = OriginIngest
	}
	var problems []string
	if strings.ContainsAny(r.Origin, " \t\r\n.*>") {
		problems = append(problems, fmt.Sprintf("origin %q is not a subject token", r.Origin))
	}
	if r.Source == "" {
		problems = append(problems, "no source")
	}
	if r.Reason == "" {
		problems = append(problems, "no reason")
	}
	if len(problems) > 0 {
		return fmt.Errorf("reject: %w: %s", ErrInvalidRejection, strings.Join(problems, "; "))
	}
	reason := oneLine(r.Reason)
	source := oneLine(r.Source)
	// The raw bytes are cut to fit both RejectRawMax and the stream's
	// message size, which counts the headers too.
	rawMax := min(RejectRawMax, int(s.cfg.MaxMsgSize)-len(source)-len(reason)-rejectHeaderOverhead)
	raw := r.Raw
	if len(raw) > rawMax {
		rawMax = max(rawMax, 0)
		raw = raw[:rawMax]
		reason = oneLine(fmt.Sprintf("%s (raw input of %d bytes cut to %d)", reason, len(r.Raw), rawMax))
	}
	msg := nats.NewMsg(RejectSubjectPrefix + r.Origin)
	msg.Data = raw
	msg.Header.Set(RejectSourceHeader, source)
	msg.Header.Set(RejectReasonHeader, reason)
	sum := sha256.New()
	for _, part := range [][]byte{[]byte(r.Origin), []byte(r.Source), []byte(reason), raw} {
		fmt.Fprintf(sum, "%d:", len(part))
		sum.Write(part)
	}
	msg.Header.Set(jetstream.MsgIDHeader, "reject/"+hex.EncodeToString(sum.Sum(nil)))
	ctx, cancel := context.WithTimeout(ctx, s.cfg.AckWaitTimeout)
	defer cancel()
	if _, err := s.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(s.cfg.RejectStreamName)); err != nil {
		return fmt.Errorf("reject %s: %w", r.Source, classifyPublishError(err))
	}
	return nil
}

// ListRejections returns the most recent rejections, at most max, oldest
// first.
func (s *Stream) ListRejections(ctx context.Context, max int) ([]Rejection, error) {
	if max <= 0 || max > ListRejectionsMax {
		return nil, fmt.Errorf("list rejections: max %d is outside 1..%d", max, ListRejectionsMax)
	}
	info, err := s.rejects.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("list rejections: %w", err)
	}
	first, last := info.State.FirstSeq, info.State.LastSeq
	if info.State.Msgs == 0 {
		return nil, nil
	}
	if last-first+1 > uint64(max) {
		first = last - uint64(max) + 1
	}
	var out []Rejection
	for seq := first; seq <= last; seq++ {
		m, err := s.rejects.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			// Deleted by an operator who dealt with it.
			continue
		}
		if err != nil {
			return out, fmt.Errorf("list rejections: seq %d: %w", seq, err)
		}
		out = append(out, Rejection{
			Origin: strings.TrimPrefix(m.Subject, RejectSubjectPrefix),
			Source: m.Header.Get(RejectSourceHeader),
			Reason: m.Header.Get(RejectReasonHeader),
			Raw:    m.Data,
			Seq:    m.Sequence,
			Time:   m.Time,
		})
	}
	return out, nil
}

// PurgeRejections removes the dead letters up to the newest one at the
// time of the call, once they have been dealt with, and reports how many it
// removed and the sequence it removed through (0 when there were none).
// Rejections that arrive meanwhile are kept.
func (s *Stream) PurgeRejections(ctx context.Context) (purged, through uint64, err error) {
	info, err := s.rejects.Info(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("purge rejections: %w", err)
	}
	if info.State.Msgs == 0 {
		return 0, 0, nil
	}
	through = info.State.LastSeq
	if err := s.rejects.Purge(ctx, jetstream.WithPurgeSequence(through+1)); err != nil {
		return 0, 0, fmt.Errorf("purge rejections through seq %d: %w", through, err)
	}
	after, err := s.rejects.Info(ctx)
	if err != nil {
		return 0, through, fmt.Errorf("purge rejections: %w", err)
	}
	return info.State.Msgs - min(after.State.Msgs, info.State.Msgs), through, nil
}

// oneLine makes s fit a header: no line breaks, at most RejectHeaderMax
// bytes.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == 0 {
			return ' '
		}
		return r
	}, s)
	if len(s) > RejectHeaderMax {
		s = s[:RejectHeaderMax]
	}
	return s
}
