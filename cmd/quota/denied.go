package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// watchDenials makes nc's permission violations end the client's waits.
//
// A NATS server that refuses a user a subject (a publish, or the
// subscription to a reply inbox) does not answer the request: it sends the
// connection an error of its own, which nats.go hands to the error
// handler. A request would then wait for its timeout, 30 seconds, before
// failing with nothing said of why. The context returned is cancelled,
// with the violation as its cause, at the first one; every other error
// goes to the handler nats.go had (which prints it).
func watchDenials(nc *nats.Conn) context.Context {
	denied, cancel := context.WithCancelCause(context.Background())
	next := nc.ErrorHandler()
	nc.SetErrorHandler(func(c *nats.Conn, sub *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			cancel(err)
			return
		}
		if next != nil {
			next(c, sub, err)
		}
	})
	return denied
}

// untilDenied returns ctx, cancelled also when the server refuses this
// client a subject (watchDenials), with the violation as its cause. The
// caller calls stop when done with it.
func (g *globalFlags) untilDenied(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	if g.denied == nil {
		return ctx, func() { cancel(nil) }
	}
	unhook := context.AfterFunc(g.denied, func() { cancel(context.Cause(g.denied)) })
	return ctx, func() { unhook(); cancel(nil) }
}

// deniedError says that err is the NATS server refusing this client a
// subject, which the violation names, and what to do about it; nil when
// err is not such a refusal.
func deniedError(err error) error {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return nil
	}
	return fmt.Errorf("%w: the key (--nkey, $QUOTA_NKEY) or credentials (--creds) lack the permission for that subject; use one that has it, such as operator.nk of `quota credentials`", err)
}
