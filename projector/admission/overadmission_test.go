package admission

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotaledger/quota/ledger/ledgertest"
)

// Shape of the over-admission race.
const (
	raceReplicas          = 3
	raceClients           = 64
	raceRequestsPerClient = 2
)

// TestConcurrentAdmissionsNeverExceedTheQuota races 64 clients, each on its
// own connection, for the last units of a quota served by 3 replicas that
// share one NATS and each keep their own projection. The queue group hands
// every request to a random replica, so the replicas race each other
// through the namespace subject's compare-and-swap. No more than the quota
// may be allowed, nothing that fits may be refused, and every replica's
// describe must show exactly the reserved usage.
func TestConcurrentAdmissionsNeverExceedTheQuota(t *testing.T) {
	cases := []struct {
		name     string
		hard     map[string]string
		resource string
		// cpu is the CPU request of a client's i-th pod ("" for none).
		cpu func(client, i int) string
	}{
		{
			name:     "pods count stops at the hard limit",
			hard:     map[string]string{"pods": "100"},
			resource: "pods",
			cpu:      func(int, int) string { return "" },
		},
		{
			name:     "requests.cpu sum stops at the hard limit",
			hard:     map[string]string{"requests.cpu": "10"},
			resource: "requests.cpu",
			cpu: func(client, i int) string {
				if (client+i)%2 == 0 {
					return "250m"
				}
				return "100m"
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _, js := ledgertest.StartServer(t)
			stream := ledgertest.OpenStream(t, js)
			const ns = "race"
			upsert(t, stream, quotaManifest(ns, "q", tc.hard))
			replicas := make([]*replica, raceReplicas)
			for i := range replicas {
				replicas[i] = startReplica(t, srv.ClientURL(), Config{})
				replicas[i].catchUp(t)
			}

			type outcome struct {
				allowed bool
				milli   int64
				resp    *admissionv1.AdmissionResponse
				err     error
			}
			outcomes := make([][]outcome, raceClients)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for c := range raceClients {
				nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(0))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(nc.Close)
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for i := range raceRequestsPerClient {
						name := fmt.Sprintf("pod-%d-%d", c, i)
						cpu := tc.cpu(c, i)
						body := review("uid-"+name, admissionv1.Create, ns, podManifest(ns, name, cpu), "", false)
						resp, err := askErr(nc, ns, body)
						o := outcome{resp: resp, err: err}
						if err == nil {
							o.allowed = resp.Allowed
						}
						if cpu != "" {
							q := resource.MustParse(cpu)
							o.milli = q.MilliValue()
						}
						outcomes[c] = append(outcomes[c], o)
					}
				}()
			}
			close(start)
			wg.Wait()

			var allowed int
			var usedMilli, smallestDenied int64
			for c, list := range outcomes {
				for i, o := range list {
					switch {
					case o.err != nil:
						t.Errorf("client %d request %d: %v", c, i, o.err)
					case o.allowed:
						allowed++
						usedMilli += o.milli
					case o.resp.Result == nil || o.resp.Result.Code != 403 ||
						!strings.Contains(o.resp.Result.Message, "is forbidden: exceeded quota: q, requested: "+tc.resource+"="):
						t.Errorf("client %d request %d: got %+v, want a 403 exceeded quota on %s", c, i, o.resp.Result, tc.resource)
					default:
						if smallestDenied == 0 || o.milli < smallestDenied {
							smallestDenied = o.milli
						}
					}
				}
			}
			if t.Failed() {
				return
			}
			var want string
			switch tc.resource {
			case "pods":
				if allowed != 100 {
					t.Errorf("got %d pods allowed, want exactly 100", allowed)
				}
				want = "100"
			case "requests.cpu":
				// Usage only grows during the race, so a pod refused at
				// any point does not fit at the end either: the allowed
				// sum is at most 10 and leaves less than any refused pod.
				if usedMilli > 10_000 || usedMilli+smallestDenied <= 10_000 {
					t.Errorf("got %dm allowed with %dm the smallest refused, want at most 10 and no room for a refused pod", usedMilli, smallestDenied)
				}
				want = resource.NewMilliQuantity(usedMilli, resource.DecimalSI).String()
			}
			for i, r := range replicas {
				r.catchUp(t)
				if got := r.used(t, ns, "q", tc.resource); got != want {
					t.Errorf("replica %d: describe shows used %s=%s, want %s (%d allowed)", i, tc.resource, got, want, allowed)
				}
			}
		})
	}
}
