package webhook

import (
	"sync/atomic"
	"time"
)

// expiryWarner decides when to warn that a certificate expires soon: at
// once the first time it is seen within CertificateExpiryWarning of its
// end, then at most once per ExpiryWarningInterval while it stays there.
// Safe for concurrent use.
type expiryWarner struct {
	// last is when the last warning was given, in Unix nanoseconds; zero:
	// never.
	last atomic.Int64
}

// due reports whether a certificate ending at notAfter is to be warned
// about at now, and if so records the warning.
func (w *expiryWarner) due(notAfter, now time.Time) bool {
	if notAfter.Sub(now) > CertificateExpiryWarning {
		return false
	}
	last := w.last.Load()
	if last != 0 && now.Sub(time.Unix(0, last)) < ExpiryWarningInterval {
		return false
	}
	return w.last.CompareAndSwap(last, now.UnixNano())
}

// expiresIn says how long is left of a certificate at now, in whole
// hours, for a log line.
func expiresIn(notAfter, now time.Time) string {
	left := notAfter.Sub(now).Truncate(time.Hour)
	if left < 0 {
		return "expired " + (-left).String() + " ago"
	}
	return left.String()
}
