package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
)

const (
	// AnswerPartHeader numbers a part of an answer, from 1.
	AnswerPartHeader = "Quota-Part"
	// AnswerPartsHeader is the number of parts of an answer.
	AnswerPartsHeader = "Quota-Parts"

	// answerHeaderRoom is kept out of each part for its headers: NATS counts
	// them in the message's size.
	answerHeaderRoom = 256
	// answerPartsMax bounds the parts a client accepts for one answer.
	answerPartsMax = 1 << 16
)

// SendAnswer answers the request m with data through nc, in parts when data is
// larger than the server takes in one message.
func SendAnswer(nc *nats.Conn, m *nats.Msg, data []byte) error {
	if m.Reply == "" {
		return nats.ErrMsgNoReply
	}
	limit := int(nc.MaxPayload())
	if limit <= 0 || len(data) <= limit {
		return nc.Publish(m.Reply, data)
	}
	size := limit - answerHeaderRoom
	if size <= 0 {
		return fmt.Errorf("answer of %d bytes: the server's max_payload of %d bytes leaves no room for parts", len(data), limit)
	}
	n := (len(data) + size - 1) / size
	for i := range n {
		part := nats.NewMsg(m.Reply)
		part.Header.Set(AnswerPartHeader, strconv.Itoa(i+1))
		part.Header.Set(AnswerPartsHeader, strconv.Itoa(n))
		part.Data = data[i*size : min((i+1)*size, len(data))]
		if err := nc.PublishMsg(part); err != nil {
			return fmt.Errorf("answer part %d of %d: %w", i+1, n, err)
		}
	}
	return nil
}

// RequestAnswer sends data on subject and waits, at most timeout in all, for
// the whole answer: one message, or every part of one that SendAnswer split.
// The message returned holds the answer's bytes and the first message's
// headers. A subject no one subscribes to gives nats.ErrNoResponders, no
// answer within timeout nats.ErrTimeout, and ctx ending first its cause: a
// NATS server reports a publish or subscription it refuses apart from the
// request (to the connection's error handler), so a caller that hears of
// one cancels ctx with it rather than wait for the timeout.
//
// A connection that reconnects (to another member of a cluster, its
// server gone or in lame-duck mode) before the answer's first message
// has come sends the request again, and a request made while it
// reconnects is sent once it has, within timeout: the answer to the first may have
// been published while nothing listened for it. Every request the ledger
// answers can be asked twice: queries read, ingest's events carry
// message IDs, and an admission's reservation is named by its review's
// uid.
func RequestAnswer(ctx context.Context, nc *nats.Conn, subject string, data []byte, timeout time.Duration) (*nats.Msg, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, nats.ErrTimeout)
	defer cancel()
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	// A large answer arrives faster than it is read: let it queue.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return nil, err
	}
	reconnected := nc.StatusChanged(nats.CONNECTED)
	defer nc.RemoveStatusListener(reconnected)
	send := func() error {
		err := nc.PublishRequest(subject, inbox, data)
		if lostServer(err) {
			return nil // sent again once reconnected
		}
		return err
	}
	if err := send(); err != nil {
		return nil, err
	}
	first, err := firstAnswer(ctx, sub, reconnected, send)
	if err != nil {
		return nil, err
	}
	parts := first.Header.Get(AnswerPartsHeader)
	if parts == "" {
		return first, nil
	}
	n, err := strconv.Atoi(parts)
	if err != nil || n < 1 || n > answerPartsMax {
		return nil, fmt.Errorf("%w: %s %q", ErrAnswerParts, AnswerPartsHeader, parts)
	}
	whole := &nats.Msg{Subject: first.Subject, Header: first.Header}
	for i, m := 1, first; ; i++ {
		if got := m.Header.Get(AnswerPartHeader); got != strconv.Itoa(i) || m.Header.Get(AnswerPartsHeader) != parts {
			return nil, fmt.Errorf("%w: expected part %d of %d, got part %q of %q", ErrAnswerParts, i, n, got, m.Header.Get(AnswerPartsHeader))
		}
		whole.Data = append(whole.Data, m.Data...)
		if i == n {
			return whole, nil
		}
		if m, err = sub.NextMsgWithContext(ctx); err != nil {
			if ctx.Err() != nil {
				err = context.Cause(ctx)
			}
			return nil, fmt.Errorf("%w: part %d of %d: %w", ErrAnswerParts, i+1, n, err)
		}
	}
}

// lostServer reports whether a publish failed for want of a server: the
// connection is reconnecting, and keeps nothing to send meanwhile.
func lostServer(err error) bool {
	return errors.Is(err, nats.ErrReconnectBufExceeded) || errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected)
}

// firstAnswer waits for the first message on sub, sending the request
// again (resend) each time the connection reconnects meanwhile.
func firstAnswer(ctx context.Context, sub *nats.Subscription, reconnected <-chan nats.Status, resend func() error) (*nats.Msg, error) {
	for {
		wait, stop := context.WithCancel(ctx)
		go func() {
			select {
			case <-reconnected:
				stop()
			case <-wait.Done():
			}
		}()
		m, err := sub.NextMsgWithContext(wait)
		again := err != nil && ctx.Err() == nil && wait.Err() != nil
		stop()
		switch {
		case again:
			// A reconnection: the subscription is back on the new
			// server before anything is published again.
			if err := resend(); err != nil {
				return nil, err
			}
		case err != nil && ctx.Err() != nil:
			return nil, context.Cause(ctx)
		default:
			return m, err
		}
	}
}
