package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quotaledger/quota/cmd/internal/server"
)

// validFlags are serve's defaults, which Validate takes.
func validFlags() server.Flags {
	var f server.Flags
	f.Sync, f.MaxEventSize, f.Release = "always", "1Mi", "ttl"
	f.Admission.ReservationTTL, f.Admission.StoreTimeout = time.Minute, time.Minute
	f.Stream.DuplicateWindow, f.Stream.Replicas = time.Hour, 1
	return f
}

// TestFlagsValidate holds each rule of serve's flags, and the report of
// every wrong flag in one message.
func TestFlagsValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*server.Flags)
		want   []string // parts of the message; none: valid
	}{
		{"the defaults", func(*server.Flags) {}, nil},
		{"a sync interval", func(f *server.Flags) { f.Sync = "1s" }, nil},
		{"feed release", func(f *server.Flags) { f.Release = "feed" }, nil},
		{"three replicas on a NATS cluster", func(f *server.Flags) { f.Stream.Replicas, f.NATSURL = 3, "nats://n:4222" }, nil},
		{"a sync that is neither always nor an interval", func(f *server.Flags) { f.Sync = "never" }, []string{`--sync "never": want 'always' or a positive interval such as 1s`}},
		{"an event size over the limit", func(f *server.Flags) { f.MaxEventSize = "1Ti" }, []string{`--max-event-size "1Ti": want a size from 1 to`}},
		{"a release of neither kind", func(f *server.Flags) { f.Release = "never" }, []string{`--reservation-release "never"`}},
		{"three replicas on the embedded server alone", func(f *server.Flags) { f.Stream.Replicas = 3 }, []string{"--replicas 3 needs a cluster: --cluster-listen and --routes"}},
		{"three replicas on three members", func(f *server.Flags) {
			f.Stream.Replicas, f.ClusterListen, f.Routes = 3, "0.0.0.0:6222", []string{"nats://a:6222", "nats://b:6222", "nats://c:6222"}
		}, nil},
		{"more replicas than members", func(f *server.Flags) {
			f.Stream.Replicas, f.ClusterListen, f.Routes = 3, "0.0.0.0:6222", []string{"nats://a:6222", "nats://b:6222"}
		}, []string{"--replicas 3 with 2 members in --routes"}},
		{"routes without a route listener", func(f *server.Flags) { f.Routes = []string{"nats://a:6222"} }, []string{"--cluster-listen and --routes go together"}},
		{"a route listener without routes", func(f *server.Flags) { f.ClusterListen = "0.0.0.0:6222" }, []string{"--cluster-listen and --routes go together"}},
		{"a route listener on any port", func(f *server.Flags) {
			f.ClusterListen, f.Routes = "0.0.0.0:0", []string{"nats://a:6222"}
		}, []string{`--cluster-listen "0.0.0.0:0": want HOST:PORT`}},
		{"a route that is no nats URL", func(f *server.Flags) {
			f.ClusterListen, f.Routes = "0.0.0.0:6222", []string{"a:6222"}
		}, []string{`--routes: "a:6222"`}},
		{"cluster flags with --nats", func(f *server.Flags) {
			f.NATSURL, f.EmbeddedGiven = "nats://n:4222", []string{"routes", "cluster-listen"}
		}, []string{"--routes configures the embedded NATS server", "--cluster-listen configures the embedded NATS server"}},
		{"embedded flags with --nats", func(f *server.Flags) {
			f.NATSURL, f.EmbeddedGiven = "nats://n:4222", []string{"listen", "auth"}
		}, []string{"--listen configures the embedded NATS server", "--auth configures the embedded NATS server"}},
		{"a retention with an archive", func(f *server.Flags) { f.Retention, f.ArchiveDir = 720*time.Hour, "/archive" }, nil},
		{"a retention of seconds, with a duplicate window as short", func(f *server.Flags) { f.Retention, f.Stream.DuplicateWindow = 3*time.Second, time.Second }, nil},
		{"a duplicate window longer than the retention", func(f *server.Flags) { f.Retention = 30 * time.Minute },
			[]string{"--duplicate-window 1h0m0s exceeds --retention 30m0s", "lower --duplicate-window"}},
		{"a retention under a second", func(f *server.Flags) {
			f.Retention, f.Stream.DuplicateWindow = 500*time.Millisecond, 100*time.Millisecond
		},
			[]string{"--retention 500ms: want at least 1s"}},
		{"a negative retention", func(f *server.Flags) { f.Retention = -time.Hour }, []string{"--retention -1h0m0s: want a positive duration"}},
		{"an archive without a retention", func(f *server.Flags) { f.ArchiveDir = "/archive" }, []string{"--archive needs --retention"}},
		{"a retention without checkpoints", func(f *server.Flags) {
			f.Retention, f.Snapshots.Every, f.Snapshots.Interval = 2*time.Hour, -1, -1
		}, []string{"--retention needs checkpoints"}},
		{"every wrong flag at once", func(f *server.Flags) {
			f.Sync, f.Admission.ReservationTTL, f.Stream.DuplicateWindow, f.Stream.Replicas = "-1s", 0, 0, 9
		}, []string{"--sync", "--reservation-ttl 0s", "--duplicate-window 0s", "--replicas 9: want 1 to"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := validFlags()
			tc.change(&f)
			err := f.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("got %v, want none", err)
				}
				return
			}
			if !errors.Is(err, server.ErrInvalidFlags) {
				t.Fatalf("got %v, want ErrInvalidFlags", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to say %q", err, w)
				}
			}
		})
	}
}
