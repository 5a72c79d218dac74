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
// by it whether the last event is its own, appended before. It reads from
// the stream's leader, waiting for one (see Stream.LastSeq).
func (s *Stream) LastSubjectEvent(ctx context.Context, namespace string) (seq uint64, msgID string, err error) {
	if namespace != "" {
		if err := ValidateNamespace(namespace); err != nil {
			return 0, "", fmt.Errorf("last subject event: %w", err)
		}
	}
	subject := Subject(namespace)
	var msg *jetstream.RawStreamMsg
	err = s.leaderless(ctx, func(ctx context.Context) (err error) {
		msg, err = s.events.GetLastMsgForSubject(ctx, subject)
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("last subject event of %s: %w", subject, err)
	}
	return msg.Sequence, msg.Header.Get(jetstream.MsgIDHeader), nil
}
