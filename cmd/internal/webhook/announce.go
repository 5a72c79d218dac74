package webhook

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/quotaledger/quota/projector"
)

// announce publishes the webhook's status (its certificates' expiry) on
// projector.SubjectWebhookStatusPrefix + its name at once and every
// projector.WebhookStatusInterval until ctx ends, so that `quota status`
// shows every replica and warns of a certificate that expires soon. A
// publish that fails (NATS down, a key without the permission) is logged
// once per kind of failure and tried again at the next interval.
func (h *handler) announce(ctx context.Context, certs *certificate) {
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "webhook"
	}
	t := time.NewTicker(projector.WebhookStatusInterval)
	defer t.Stop()
	var failed string
	for {
		st := projector.WebhookStatus{Name: name, CertificateExpiry: certs.current.Load().Leaf.NotAfter.UTC(), Sent: time.Now().UTC()}
		if ns := h.clientNotAfter.Load(); ns != 0 {
			st.ClientCertificateExpiry = time.Unix(0, ns).UTC()
		}
		b, _ := json.Marshal(st) // a struct of strings and times always marshals
		if err := h.nc.Publish(projector.SubjectWebhookStatusPrefix+name, b); err != nil {
			if err.Error() != failed {
				h.log.Warn("cannot publish the webhook's status for quota status", "err", err)
			}
			failed = err.Error()
		} else {
			failed = ""
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
