package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
	"github.com/quotaledger/quota/projector/admission"
)

// TestRetentionOnALogThatDeniesPurges runs serve with a retention on a
// log made denying purges, which JetStream cannot lift: it serves all the
// same, says in its log why the retention does not apply, and its status
// shows a log that keeps every event rather than a retention it does not
// run. On a log serve made itself the retention applies.
func TestRetentionOnALogThatDeniesPurges(t *testing.T) {
	for _, tc := range []struct {
		name    string
		denying bool
	}{{"made denying purges", true}, {"made by serve", false}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, nc, js := ledgertest.StartServer(t)
			if tc.denying {
				ledgertest.OpenStream(t, js)
			}
			var logs ledgertest.LogBuffer
			ready := make(chan struct{})
			done := make(chan error, 1)
			ctx, stop := context.WithCancel(context.Background())
			go func() {
				done <- Serve(ctx, Flags{Config: Config{DataDir: t.TempDir(), NATSURL: srv.ClientURL(), Retention: time.Hour,
					Stream: ledger.Config{DuplicateWindow: time.Minute, Replicas: 1}, Admission: admission.Config{ReservationTTL: time.Minute, StoreTimeout: time.Minute}, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
					Ready: func(string) { close(ready) }}, Sync: "always", Release: "ttl"})
			}()
			defer func() {
				stop()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}()
			select {
			case <-ready:
			case err := <-done:
				t.Fatalf("serve: %v\n%s", err, logs.String())
			case <-time.After(30 * time.Second):
				t.Fatal("not ready in 30 s")
			}
			m, err := nc.Request(projector.SubjectStatus, nil, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var reply projector.StatusReply
			if err := json.Unmarshal(m.Data, &reply); err != nil || reply.Status == nil {
				t.Fatalf("status: %s (%v)", m.Data, err)
			}
			said := strings.Contains(logs.String(), "--retention is not applied")
			if want := map[bool]time.Duration{true: 0, false: time.Hour}[tc.denying]; reply.Status.Log.Retention != want || said != tc.denying {
				t.Errorf("status retention %s, log says it is not applied: %v; want %s, %v\n%s", reply.Status.Log.Retention, said, want, tc.denying, logs.String())
			}
		})
	}
}
