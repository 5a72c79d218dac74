package ledger

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
)

// ErrInternal is wrapped by the error Survive reports: handling one
// request, record or round panicked, which is a bug of this program, never
// of its input.
var ErrInternal = errors.New("internal error")

// Survive keeps a panic in the handling of one request, record or round
// from taking the whole server down. Deferred by the function doing that
// work (defer ledger.Survive(log, "decide the request", fail)), it recovers
// a panic, logs it with its stack, and passes fail an error wrapping
// ErrInternal that names what was being done and the panic's value. log
// nil logs to slog.Default(). It must be the deferred function itself:
// recover works only there.
func Survive(log *slog.Logger, what string, fail func(error)) {
	v := recover()
	if v == nil {
		return
	}
	err := fmt.Errorf("%w: %s: panic: %v", ErrInternal, what, v)
	cmp.Or(log, slog.Default()).Error("recovered from a panic; please report it with this log", "err", err, "stack", string(debug.Stack()))
	if fail != nil {
		fail(err)
	}
}
