package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quotaledger/quota/projector"
)

// churnNamespace holds the churn workload's objects.
const churnNamespace = "churn"

// retentionFlags are serve's flags for a log trimmed after two seconds,
// with a checkpoint every 40 events or quarter second.
var retentionFlags = []string{"--retention", "2s", "--duplicate-window", "1s", "--snapshot-every", "40", "--snapshot-interval", "250ms", "--snapshot-keep", "2"}

// churnPod is the watch event of pod i of a churn round: each round's
// pods ask for (round+1)*10m of CPU, so usage tells the rounds apart.
func churnPod(typ string, round, i int, rv int) string {
	pod := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": fmt.Sprintf("churn-%d-%d", round, i), "namespace": churnNamespace,
			"uid": fmt.Sprintf("00000000-0000-0000-%04d-%012d", round, i), "resourceVersion": strconv.Itoa(rv)},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app",
			"resources": map[string]any{"requests": map[string]any{"cpu": fmt.Sprintf("%dm", (round+1)*10)}}}}},
		"status": map[string]any{"phase": "Running"},
	}
	b, _ := json.Marshal(map[string]any{"type": typ, "object": pod})
	return string(b)
}

// writeChurnRound writes round's watch events: the previous round's live
// pods deleted and as many new ones created, so the live set keeps its
// size; round 0 also creates the namespace's quota.
func writeChurnRound(t *testing.T, round, live int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("round-%d.jsonl", round))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if round == 0 {
		fmt.Fprintln(w, `{"type":"ADDED","object":{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"compute","namespace":"churn","uid":"00000000-0000-0000-ffff-000000000000","resourceVersion":"1"},"spec":{"hard":{"pods":"1000","requests.cpu":"100"}}}}`)
	}
	for i := range live {
		base := (round+1)*100_000 + i*2
		if round > 0 {
			fmt.Fprintln(w, churnPod("DELETED", round-1, i, base+1))
		}
		fmt.Fprintln(w, churnPod("ADDED", round, i, base+2))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// serverStatus is `quota status -o json`.
func serverStatus(t *testing.T, s *ledgerProc) projector.Status {
	t.Helper()
	var st projector.Status
	if err := json.Unmarshal([]byte(s.mustRun("status", "-o", "json")), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// waitTrimmedPast waits until the log starts after seq.
func waitTrimmedPast(t *testing.T, s *ledgerProc, seq uint64) projector.Status {
	t.Helper()
	var st projector.Status
	poll(t, fmt.Sprintf("the log trimmed past seq %d", seq), 30*time.Second, func() bool {
		st = serverStatus(t, s)
		return st.Log.FirstSeq > seq
	})
	return st
}

// TestChurnKeepsTheLogFlat runs rounds of a churn workload (the same
// number of live pods, all deleted and created anew each round) through
// a server with a two-second retention: once the retention applies, the
// log holds at most about one round, whatever the rounds before it, where
// without it it would hold them all. On the trimmed log, `replay
// --verify` finds no drift; a restart with a projection file the log
// was trimmed past moves it aside, and one without a projection file,
// both start from a checkpoint and answer as before.
func TestChurnKeepsTheLogFlat(t *testing.T) {
	const live, rounds = 40, 6
	data := t.TempDir()
	s := startServer(t, data, append(retentionFlags, "--metrics-listen", "127.0.0.1:0")...)
	var roundBytes, appended uint64
	var held []uint64
	for round := range rounds {
		before := serverStatus(t, s).Log
		s.mustRun("ingest", writeChurnRound(t, round, live))
		after := serverStatus(t, s).Log
		if round == 1 {
			roundBytes = after.Bytes - before.Bytes
		}
		appended += after.LastSeq - before.LastSeq
		st := waitTrimmedPast(t, s, before.LastSeq)
		held = append(held, st.Log.Bytes)
		if used := describedUsed(t, s, churnNamespace, "compute", "pods"); used != strconv.Itoa(live) {
			t.Fatalf("round %d: pods used %s, want %d", round, used, live)
		}
		if round == 0 {
			// The file as it stands now, which the log will be trimmed
			// past.
			s.stop()
			copyFile(t, filepath.Join(data, "projection.db"), filepath.Join(data, "old.db"))
			s = startServer(t, data, append(retentionFlags, "--metrics-listen", "127.0.0.1:0")...)
		}
	}
	t.Logf("log bytes after each round once trimmed: %v; one round appends %d bytes; %d events appended", held, roundBytes, appended)
	for round, b := range held {
		if b > roundBytes {
			t.Errorf("after round %d the log holds %d bytes, more than one round's %d: it grows with the history", round, b, roundBytes)
		}
	}
	st := serverStatus(t, s)
	if st.Log.Retention != 2*time.Second || len(st.Checkpoints) == 0 || st.Log.FirstSeq < appended-2*live {
		t.Errorf("status: retention %s, %d checkpoints, log from seq %d of %d", st.Log.Retention, len(st.Checkpoints), st.Log.FirstSeq, appended)
	}
	if out := s.mustRun("replay", "--verify"); !strings.HasPrefix(out, "no drift at seq ") {
		t.Fatalf("verify on the trimmed log: %q", out)
	}
	checkRetentionMetrics(t, s, st)
	text := s.mustRun("status")
	for _, want := range []string{"Limits:    retention 2s (older events a checkpoint covers leave the log, not archived)", "Checkpoints:"} {
		if !strings.Contains(text, want) {
			t.Errorf("status lacks %q:\n%s", want, text)
		}
	}

	describe := s.mustRun("describe", "-A", "-o", "json")
	path := filepath.Join(data, "projection.db")
	for _, restart := range []struct {
		name, log string
		prepare   func()
	}{
		{"with a file the log was trimmed past", "aside=" + path + ".behind-", func() { copyFile(t, filepath.Join(data, "old.db"), path) }},
		{"without its file", "", func() {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		s.stop()
		restart.prepare()
		s = startServer(t, data, retentionFlags...)
		logs := s.logs.String()
		if !strings.Contains(logs, "projection starts from a checkpoint") || !strings.Contains(logs, restart.log) {
			t.Errorf("the restart %s did not start from a checkpoint (%q):\n%s", restart.name, restart.log, logs)
		}
		if got := s.mustRun("describe", "-A", "-o", "json"); got != describe {
			t.Errorf("after the restart %s:\n%s\nwant as before:\n%s", restart.name, got, describe)
		}
	}
}

// copyFile copies the file at from to to.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// checkRetentionMetrics scrapes the server's metrics: the log's figures
// agree with the status, and what was purged is counted.
func checkRetentionMetrics(t *testing.T, s *ledgerProc, st projector.Status) {
	t.Helper()
	m := metricsURL.FindStringSubmatch(s.logs.String())
	if m == nil {
		t.Fatalf("no metrics URL in the serving line:\n%s", s.logs)
	}
	_, text := httpGet(t, m[1])
	value := func(name string) float64 {
		v := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(text)
		if v == nil {
			t.Fatalf("metrics lack %s", name)
		}
		f, _ := strconv.ParseFloat(v[1], 64)
		return f
	}
	if got := value("quota_log_first_sequence"); got < float64(st.Log.FirstSeq) {
		t.Errorf("quota_log_first_sequence %v, want at least %d", got, st.Log.FirstSeq)
	}
	if got := value("quota_retention_purged_events_total"); got < float64(st.Log.FirstSeq-1) {
		t.Errorf("quota_retention_purged_events_total %v, want at least %d", got, st.Log.FirstSeq-1)
	}
	if used, limit := value("quota_store_bytes"), value("quota_store_limit_bytes"); used <= 0 || limit <= used {
		t.Errorf("quota_store_bytes %v against quota_store_limit_bytes %v", used, limit)
	}
}

// TestAuditAtAPastMomentFromTheArchive describes a namespace, then runs
// more rounds until the log is trimmed past that moment: `replay --at`
// it (and `--until-seq` the last event before it) refuses without the
// archive, naming the oldest moment it answers and --archive, and with
// the archive prints what describe printed then; --explain says which
// pods made it up.
func TestAuditAtAPastMomentFromTheArchive(t *testing.T) {
	const live = 30
	archive := filepath.Join(t.TempDir(), "archive")
	s := startServer(t, t.TempDir(), append(retentionFlags, "--archive", archive)...)
	s.mustRun("ingest", writeChurnRound(t, 0, live))
	then := s.mustRun("describe", "-n", churnNamespace)
	seqThen := serverStatus(t, s).Log.LastSeq
	at := time.Now().UTC().Format(time.RFC3339Nano)
	for round := 1; round <= 3; round++ {
		s.mustRun("ingest", writeChurnRound(t, round, live))
	}
	st := waitTrimmedPast(t, s, seqThen+1)
	if now := s.mustRun("describe", "-n", churnNamespace); now == then {
		t.Fatalf("describe did not change over three rounds:\n%s", now)
	}
	if st.Archive == nil || st.Archive.FirstSeq != 1 || st.Archive.LastSeq < seqThen+1 || st.Archive.LastSegment == nil {
		t.Fatalf("status of the archive: %+v, want it to hold seq 1 to at least %d", st.Archive, seqThen+1)
	}
	for _, target := range [][]string{{"--at", at}, {"--until-seq", strconv.FormatUint(seqThen, 10)}} {
		out, errOut, code := s.run(append([]string{"replay", "-n", churnNamespace}, target...)...)
		if code != 2 || !strings.Contains(errOut, "before the oldest moment the log answers") || !strings.Contains(errOut, "--archive") {
			t.Errorf("replay %v without the archive: exit %d\n%s%s\nwant exit 2 naming the oldest moment and --archive", target, code, out, errOut)
		}
		got := s.mustRun(append([]string{"replay", "-n", churnNamespace, "--archive", archive}, target...)...)
		if got != then {
			t.Errorf("replay %v from the archive:\n%s\nwant what describe printed then:\n%s", target, got, then)
		}
	}
	explained := s.mustRun("replay", "--at", at, "--explain", "-n", churnNamespace, "--archive", archive)
	if !strings.Contains(explained, "pods/churn-0-") || strings.Contains(explained, "pods/churn-1-") {
		t.Errorf("explain at the moment from the archive names other pods than round 0's:\n%s", explained)
	}
}
