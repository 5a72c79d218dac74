package projector_test

import (
	"strings"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector"
)

// TestStatusShowsTheMembers prints the log's replicas on three members:
// the leader, a current member, and one behind and offline, each with how
// long ago the leader heard from it; on one server, a single line.
func TestStatusShowsTheMembers(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  ledger.LogStatus
		want []string
	}{
		{"one server", ledger.LogStatus{Stream: "QUOTA_EVENTS", Replicas: 1}, []string{"Replicas: 1 Projection:"}},
		{"three members", ledger.LogStatus{Stream: "QUOTA_EVENTS", Replicas: 3, Leader: "m2", Peers: []ledger.PeerStatus{
			{Name: "m1", Current: true, Active: 120 * time.Millisecond},
			{Name: "m3", Offline: true, Lag: 42, Active: 7 * time.Second},
		}}, []string{
			"  Replicas:    3, leader m2\n",
			"  Member m2:   leader\n",
			"  Member m1:   current, heard from 120ms ago\n",
			"  Member m3:   offline, behind by 42 operations, heard from 7s ago\n",
		}},
		{"no leader", ledger.LogStatus{Stream: "QUOTA_EVENTS", Replicas: 3}, []string{"  Replicas:    3, leader none (an election is under way, or too few members are up)\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := projector.WriteStatus(&b, &projector.Status{Log: tc.log, Projection: projector.ProjectionStatus{Server: "m2"}}); err != nil {
				t.Fatal(err)
			}
			// The columns' width is tabwriter's: compare the words.
			got := strings.Join(strings.Fields(b.String()), " ")
			for _, w := range tc.want {
				if !strings.Contains(got, strings.Join(strings.Fields(w), " ")) {
					t.Errorf("status:\n%s\nwant a line %q", b.String(), w)
				}
			}
		})
	}
}
