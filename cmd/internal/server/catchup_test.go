package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/ledger/object"
	"github.com/quotaledger/quota/projector"
	"github.com/quotaledger/quota/projector/admission"
)

// TestAdmissionWaitsForTheProjectionAtStart starts the ledger on a fresh
// projection of a log that holds a full quota: its quota and LimitRange
// first, then thousands of other namespaces' events, then the pod that
// fills it. The server says in its log that admissions wait for the
// projection, its readiness probe answers 503 until they are taken (and
// 200 after, with the liveness probe), and a client asking for a dry run
// of one more pod over and over, from before the start until a describe
// has seen the whole log, gets the denial every time it gets an answer.
// (Here the client's first
// answer, if it comes early, is right even without the wait: a namespace
// whose quota the projection does not hold yet looks the log up first.
// admission's TestNoDecisionBeforeTheProjectionCatchesUp asks at the
// moment that would be answered wrong.)
func TestAdmissionWaitsForTheProjectionAtStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	manifests := []string{
		`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"compute","namespace":"team-a"},"spec":{"hard":{"pods":"1"}}}`,
		`{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"defaults","namespace":"team-a"},"spec":{"limits":[{"type":"Container","defaultRequest":{"cpu":"100m"}}]}}`,
	}
	for i := range 20000 {
		manifests = append(manifests, pod(fmt.Sprintf("other-%d", i%100), fmt.Sprintf("p-%d", i)))
	}
	nats0, client := logOf(t, append(manifests, pod("team-a", "web-1")))

	const denial = `pods "web-2" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1`
	review := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"uid-web-2",` +
		`"namespace":"team-a","operation":"CREATE","dryRun":true,"object":` + pod("team-a", "web-2") + `}}`)
	// ask returns whether the request was answered, and what is wrong
	// with the answer.
	ask := func() (bool, error) {
		m, err := client.Request(admission.SubjectPrefix+"team-a", review, 10*time.Second)
		if errors.Is(err, nats.ErrNoResponders) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(m.Data, &out); err != nil || out.Response == nil {
			return true, fmt.Errorf("reply %s: %v", m.Data, err)
		}
		if r := out.Response; r.Allowed || r.Result == nil || r.Result.Message != denial {
			return true, fmt.Errorf("answered allowed %v, %+v; want the denial %q", r.Allowed, r.Result, denial)
		}
		return true, nil
	}

	// The metrics server's address, known before the ledger announces it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := ln.Addr().String()
	ln.Close()

	var logs ledgertest.LogBuffer
	ready := make(chan struct{})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	runDone := make(chan error, 1)
	go func() {
		runDone <- Run(runCtx, Config{DataDir: t.TempDir(), NATSURL: nats0.ClientURL(), MetricsListen: metricsAddr,
			Logger: slog.New(slog.NewTextHandler(&logs, nil)), Ready: func(string) { close(ready) }})
	}()
	// A readiness probe polls from the start until the ledger is ready.
	probed := make(chan []string, 1)
	go func() {
		var seen []string
		for {
			select {
			case <-ready:
				probed <- seen
				return
			default:
			}
			if code, body, err := get("http://" + metricsAddr + ReadyPath); err == nil {
				seen = append(seen, fmt.Sprintf("%d %s", code, body))
			}
			time.Sleep(2 * time.Millisecond) // poll interval, until ready
		}
	}()
	// The client asks from before the start until a describe, which waits
	// for the projection to hold the whole log, has returned.
	var answered int
	asked := make(chan error, 1)
	described := make(chan struct{})
	go func() {
		for {
			ok, err := ask()
			if ok {
				answered++
			}
			select {
			case <-described:
				asked <- err
				return
			default:
			}
			if err != nil {
				asked <- err
				return
			}
			time.Sleep(time.Millisecond) // poll interval, until described
		}
	}()
	select {
	case <-ready:
	case err := <-runDone:
		t.Fatalf("Run: %v\n%s", err, logs.String())
	case <-ctx.Done():
		t.Fatal("the ledger did not get ready")
	}
	if _, err := client.Request(projector.SubjectDescribe, []byte(`{"namespace":"team-a"}`), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	close(described)
	if err := <-asked; err != nil {
		t.Fatal(err)
	}
	if answered == 0 {
		t.Fatal("no admission answered")
	}
	waiting := false
	for _, p := range <-probed {
		waiting = waiting || strings.HasPrefix(p, "503 catching up with the stream")
	}
	if !waiting {
		t.Errorf("%s never answered 503 while the projection caught up", ReadyPath)
	}
	for path, want := range map[string]string{ReadyPath: "ready\n", HealthPath: "ok\n"} {
		if code, body, err := get("http://" + metricsAddr + path); err != nil || code != 200 || body != want {
			t.Errorf("GET %s once ready: %d %q %v, want 200 %q", path, code, body, err, want)
		}
	}
	if !strings.Contains(logs.String(), "admissions wait for it") {
		t.Errorf("the log does not say that admissions wait for the projection:\n%s", logs.String())
	}
	stop()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
}

// TestStopWhileCatchingUp stops the ledger while its projection rebuilds
// a log of 40 000 events: Run returns at once, saying so in its log, and
// the next Run on the same data goes on from what the first committed.
func TestStopWhileCatchingUp(t *testing.T) {
	manifests := make([]string, 40000)
	for i := range manifests {
		manifests[i] = pod(fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("p-%d", i))
	}
	nats0, _ := logOf(t, manifests)
	data := t.TempDir()
	run := func(stopWhen string) string {
		t.Helper()
		var logs ledgertest.LogBuffer
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, Config{DataDir: data, NATSURL: nats0.ClientURL(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		}()
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), stopWhen); {
			if time.Now().After(deadline) {
				t.Fatalf("the log does not say %q in 30 s:\n%s", stopWhen, logs.String())
			}
			time.Sleep(time.Millisecond) // poll interval, until the log says it
		}
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Run stopped with %v\n%s", err, logs.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Run still runs 10 s after its stop\n%s", logs.String())
		}
		return logs.String()
	}
	first := run("admissions wait for it")
	m := regexp.MustCompile(`quota ledger stopped while catching up" applied_seq=(\d+)`).FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("the log does not say the ledger stopped while catching up:\n%s", first)
	}
	applied, _ := strconv.Atoi(m[1])
	if applied >= len(manifests) {
		t.Fatalf("the projection had applied seq %d of %d when stopped: nothing left to catch up", applied, len(manifests))
	}
	second := run("quota ledger serving")
	want := fmt.Sprintf(`projector following stream" from_seq=%d `, applied+1)
	if applied > 0 && !strings.Contains(second, want) {
		t.Errorf("the second start does not go on from seq %d (%q):\n%s", applied, want, second)
	}
}

// get returns the status code and body of a GET of url.
func get(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// logOf starts an embedded NATS server (syncing once a second) whose
// event stream holds manifests as upserts, in order, and returns it with a
// client connection, both closed when the test ends.
func logOf(t *testing.T, manifests []string) (*ledger.Embedded, *nats.Conn) {
	t.Helper()
	nats0, err := ledger.StartEmbedded(ledger.EmbeddedConfig{Port: ledger.RandomPort, StoreDir: t.TempDir(), SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nats0.Shutdown)
	client, err := nats.Connect(nats0.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	js, err := jetstream.New(client)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := ledger.Open(ctx, js, ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	entries := make([]ledger.BatchEntry, 0, len(manifests))
	for _, manifest := range manifests {
		o, err := object.Decode([]byte(manifest))
		if err != nil {
			t.Fatal(err)
		}
		trimmed, err := o.Trimmed()
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, ledger.BatchEntry{Event: ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Upsert,
			Resource: o.Resource, Namespace: o.Namespace, Name: o.Name, Object: trimmed, Source: "test"}})
	}
	if _, err := stream.AppendBatch(ctx, entries); err != nil {
		t.Fatal(err)
	}
	return nats0, client
}

func pod(namespace, name string) string {
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"` + namespace + `"},` +
		`"spec":{"containers":[{"name":"app","image":"registry.example/app:1","resources":{"requests":{"cpu":"100m"}}}]}}`
}
