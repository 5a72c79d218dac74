package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// LastSubjectEvent returns the sequence and the message ID of the last
// event of namespace ns ("" for cluster-scoped objects): 0 and "" if
// there is none, and an empty ID for an event appended without one. A
// writer whose event depends on what the namespace holds (a resync) tells
// by it whether the last event is its own, appended before.
func (s *Stream) LastSubjectEvent(ctx context.Context, namespace string) (seq uint64, msgID string, err error) {
	if namespace != "" {
		if err := ValidateNamespace(namespace); err != nil {
			return 0, "", fmt.Errorf("last subject event: %w", err)
		}
	}
	subject := Subject(namespace)
	msg, err := s.events.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("last subject event of %s: %w", subject, err)
	}
	return msg.Sequence, msg.Header.Get(jetstream.MsgIDHeader), nil
}

// SubjectRecords returns the events of namespace ns ("" for
// cluster-scoped objects) with sequences after after and at most upTo, in
// order, reading at most max of them. complete says the records are all
// there are in that range; it is false when there are more than max. An
// event that does not decode is returned with its Err set, as a Reader
// returns it.
func (s *Stream) SubjectRecords(ctx context.Context, namespace string, after, upTo uint64, max int) (records []Record, complete bool, err error) {
	if namespace != "" {
		if err := ValidateNamespace(namespace); err != nil {
			return nil, false, fmt.Errorf("subject records: %w", err)
		}
	}
	subject := Subject(namespace)
	for next := after + 1; next <= upTo; {
		if len(records) == max {
			return records, false, nil
		}
		msg, err := s.events.GetMsg(ctx, next, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, false, fmt.Errorf("events of %s after %d: %w", subject, next-1, err)
		}
		if msg.Sequence > upTo {
			break
		}
		records = append(records, recordFrom(msg.Subject, msg.Data, msg.Sequence, msg.Time))
		next = msg.Sequence + 1
	}
	return records, true, nil
}
