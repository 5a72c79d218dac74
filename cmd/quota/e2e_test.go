package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector/projectortest"
	"github.com/quotaledger/quota/projector/usedtest"
)

// binary is the quota binary built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "quota-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binary = filepath.Join(dir, "quota")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build quota:", err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var samplesDir = filepath.Join("..", "..", "testdata", "samples")
var recordedDir = filepath.Join("..", "..", "testdata", "recorded")

// ledgerProc is a running `quota serve` subprocess.
type ledgerProc struct {
	t    testing.TB
	cmd  *exec.Cmd
	url  string
	data string
	logs *ledgertest.LogBuffer
	done chan error
	// serving receives the client URL once the server says it serves.
	serving chan string
}

var servingLine = regexp.MustCompile(`quota ledger serving.* nats=(\S+)`)

// startServer runs `quota serve` on a free port with its data in dir and
// waits until it serves.
func startServer(t testing.TB, dir string, extra ...string) *ledgerProc {
	t.Helper()
	s := spawnServer(t, dir, extra...)
	s.waitServing(30 * time.Second)
	return s
}

// spawnServer runs `quota serve` with its data in dir (on a free port
// unless extra says where) and returns at once; waitServing waits until
// it serves. It is stopped, and its projection checked, when the test
// ends.
func spawnServer(t testing.TB, dir string, extra ...string) *ledgerProc {
	t.Helper()
	args := []string{"serve", "--data", dir}
	if !slices.Contains(extra, "--nats") && !slices.Contains(extra, "--listen") {
		args = append(args, "--listen", "127.0.0.1:0") // the embedded server's
	}
	args = append(args, extra...)
	cmd := exec.Command(binary, args...)
	pr, pw := io.Pipe()
	s := &ledgerProc{t: t, cmd: cmd, data: dir, logs: &ledgertest.LogBuffer{}, done: make(chan error, 1), serving: make(chan string, 1)}
	cmd.Stderr = pw
	cmd.Stdout = s.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			s.logs.Write([]byte(line + "\n"))
			if m := servingLine.FindStringSubmatch(line); m != nil {
				select {
				case s.serving <- m[1]:
				default:
				}
			}
		}
	}()
	go func() {
		err := cmd.Wait()
		pw.Close()
		s.done <- err
	}()
	t.Cleanup(func() {
		s.stop()
		checkProjection(t, dir)
	})
	return s
}

// waitServing waits, at most limit, until the server serves, and sets
// its URL.
func (s *ledgerProc) waitServing(limit time.Duration) {
	s.t.Helper()
	select {
	case s.url = <-s.serving:
	case err := <-s.done:
		s.done <- err
		s.t.Fatalf("quota serve exited before serving: %v\n%s", err, s.logs)
	case <-time.After(limit):
		s.cmd.Process.Kill()
		s.t.Fatalf("quota serve did not start in %s\n%s", limit, s.logs)
	}
}

// checkProjection runs the whole-state check (usedtest.CheckUsed) on the
// projection a stopped server left in dir, if it left one.
func checkProjection(t testing.TB, dir string) {
	t.Helper()
	path := filepath.Join(dir, "projection.db")
	if _, err := os.Stat(path); err != nil {
		return
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Errorf("open the projection for the whole-state check: %v", err)
		return
	}
	defer db.Close()
	usedtest.CheckUsed(t, db)
}

// stop ends the server with SIGTERM and waits for a clean exit.
func (s *ledgerProc) stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Errorf("quota serve did not exit cleanly: %v\n%s", err, s.logs)
		}
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		s.t.Errorf("quota serve did not stop within 30s of SIGTERM\n%s", s.logs)
	}
}

// kill ends the server with SIGKILL, as a crash would.
func (s *ledgerProc) kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// run runs a client subcommand against the server and returns its stdout,
// stderr and exit code.
func (s *ledgerProc) run(args ...string) (string, string, int) {
	s.t.Helper()
	cmd := exec.Command(binary, append(args, "--server", s.url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			s.t.Fatalf("run %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return stdout.String(), stderr.String(), code
}

// mustRun runs a client subcommand that must succeed.
func (s *ledgerProc) mustRun(args ...string) string {
	s.t.Helper()
	out, errOut, code := s.run(args...)
	if code != 0 {
		s.t.Fatalf("quota %s: exit %d\nstdout: %s\nstderr: %s\nserver log:\n%s", strings.Join(args, " "), code, out, errOut, s.logs)
	}
	return out
}

func sampleDirs(t testing.TB) []string {
	dirs, _ := filepath.Glob(filepath.Join(samplesDir, "sample-*"))
	if len(dirs) == 0 {
		t.Fatal("no samples")
	}
	return dirs
}

// recordedDirs are the scenarios of testdata/recorded, recorded the way the
// samples were, from a kube-apiserver and kube-controller-manager v1.36.3.
func recordedDirs(t testing.TB) []string {
	dirs, _ := filepath.Glob(filepath.Join(recordedDir, "rec-*"))
	if len(dirs) == 0 {
		t.Fatal("no recorded scenarios")
	}
	return dirs
}

func ingestSample(s *ledgerProc, dir string) {
	s.t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "cluster.jsonl")); err == nil {
		s.mustRun("ingest", filepath.Join(dir, "cluster.jsonl"))
	}
	s.mustRun("ingest", filepath.Join(dir, "events.jsonl"))
}

type expectation struct {
	Items []corev1.ResourceQuota `json:"items"`
}

// recording is a recording's case.json: its namespaces, each one's
// expected quota list and describe text, and its probes.
type recording struct {
	Namespaces []string          `json:"namespaces"`
	Expected   map[string]string `json:"expected"`
	Describe   map[string]string `json:"describe"`
	Probes     []struct {
		File      string `json:"file"`
		Namespace string `json:"namespace"`
	} `json:"probes"`
}

func readRecording(t testing.TB, dir string) recording {
	t.Helper()
	var c recording
	b, err := os.ReadFile(filepath.Join(dir, "case.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &c); err != nil || len(c.Namespaces) == 0 {
		t.Fatalf("case.json: %v, or no namespace", err)
	}
	for _, ns := range c.Namespaces {
		if c.Expected[ns] == "" || c.Describe[ns] == "" {
			t.Fatalf("case.json: no expected quotas or describe text for namespace %s", ns)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "probes", "*.json"))
	if len(files) == 0 || len(files) != len(c.Probes) {
		t.Fatalf("case.json lists %d probes, probes/ holds %d", len(c.Probes), len(files))
	}
	return c
}

// namespaceOf is the namespace of a recording of one namespace.
func namespaceOf(t testing.TB, dir string) string {
	t.Helper()
	c := readRecording(t, dir)
	if len(c.Namespaces) != 1 {
		t.Fatalf("%s: %d namespaces, want one", dir, len(c.Namespaces))
	}
	return c.Namespaces[0]
}

// checkRecording compares what the ledger reports for every namespace of
// a recording, and its verdict on every probe, with what Kubernetes did,
// but where testdata/recorded/differences.txt says the ledger deliberately
// differs.
func checkRecording(t *testing.T, s *ledgerProc, dir string) {
	t.Helper()
	c := readRecording(t, dir)
	diffs := scenarioDifferences(t, dir)
	waitForDeadlines(t, s, dir)
	for _, ns := range c.Namespaces {
		checkDescribe(t, s, ns, filepath.Join(dir, c.Expected[ns]), filepath.Join(dir, c.Describe[ns]), diffs)
	}
	for _, p := range c.Probes {
		checkProbe(t, s, filepath.Join(dir, p.File), p.Namespace, diffs)
	}
	for _, d := range diffs {
		if !d.used {
			t.Errorf("differences.txt: %s %s names nothing the recording holds", d.scenario, d.where)
		}
	}
}

// waitForDeadlines waits until the server's sweep has appended a Deadline
// event for every pod of the recording's events that is left being deleted
// with a grace period and counting: every such deadline has passed since
// the recording, and a check before the sweep would see the pod counted
// or not by chance.
func waitForDeadlines(t *testing.T, s *ledgerProc, dir string) {
	t.Helper()
	want := len(podsLeftTerminating(t, filepath.Join(dir, "events.jsonl")))
	if want == 0 {
		return
	}
	ctx := context.Background()
	stream, err := ledger.Attach(ctx, jetStreamAt(t, s.url), ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(describeWaitTimeout)
	for {
		got := 0
		for _, r := range ledgertest.ReadAll(t, stream, 1) {
			if r.Err == nil && r.Event.Type == ledger.Deadline {
				got++
			}
		}
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d Deadline events in the log after %s, want %d (pods left terminating: %v)",
				got, describeWaitTimeout, want, podsLeftTerminating(t, filepath.Join(dir, "events.jsonl")))
		}
		time.Sleep(100 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

// podsLeftTerminating lists the pods of a watch-event file whose last
// event leaves them being deleted with a grace period, in no terminal
// phase: the pods that count until their deadline.
func podsLeftTerminating(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]bool{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name, Namespace            string
					DeletionTimestamp          *string `json:"deletionTimestamp"`
					DeletionGracePeriodSeconds *int64  `json:"deletionGracePeriodSeconds"`
				} `json:"metadata"`
				Status struct {
					Phase string `json:"phase"`
				} `json:"status"`
			} `json:"object"`
		}
		if json.Unmarshal(line, &ev) != nil || ev.Object.Kind != "Pod" {
			continue
		}
		m := ev.Object.Metadata
		key := m.Namespace + "/" + m.Name
		phase := ev.Object.Status.Phase
		left[key] = ev.Type != "DELETED" && m.DeletionTimestamp != nil && m.DeletionGracePeriodSeconds != nil &&
			*m.DeletionGracePeriodSeconds > 0 && phase != "Succeeded" && phase != "Failed"
	}
	var out []string
	for key, ok := range left {
		if ok {
			out = append(out, key)
		}
	}
	sort.Strings(out)
	return out
}

// difference is a line of testdata/recorded/differences.txt: where the
// ledger deliberately gives another answer than the recorded Kubernetes,
// what each gives, and why.
type difference struct {
	scenario, where, kube, ledger, why string
	used                               bool // matched by the check
}

// differencesFile lists the deliberate differences, one a line:
// "scenario | where | Kubernetes | ledger | why", where is "used NS/QUOTA
// RESOURCE", "hard NS/QUOTA RESOURCE" or "probe NN", and a probe's answer
// is "allowed" or the refusal's message.
var differencesFile = filepath.Join(recordedDir, "differences.txt")

func scenarioDifferences(t *testing.T, dir string) []*difference {
	t.Helper()
	b, err := os.ReadFile(differencesFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []*difference
	for i, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, " | ")
		if len(f) != 5 || f[4] == "" {
			t.Fatalf("%s:%d: want scenario | where | Kubernetes | ledger | why", differencesFile, i+1)
		}
		if f[0] == filepath.Base(dir) {
			out = append(out, &difference{scenario: f[0], where: f[1], kube: f[2], ledger: f[3], why: f[4]})
		}
	}
	return out
}

// differenceAt returns the deliberate difference at where, nil if none.
func differenceAt(diffs []*difference, where string) *difference {
	for _, d := range diffs {
		if d.where == where {
			d.used = true
			return d
		}
	}
	return nil
}

func statusStrings(l corev1.ResourceList) string {
	var parts []string
	for k, v := range l {
		parts = append(parts, string(k)+"="+v.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// TestSamplesEndToEnd runs the recorded samples through the built binary as
// a user would: serve, ingest the watch events, describe (json and text)
// and ask dry-run admissions, comparing each with what Kubernetes did.
func TestSamplesEndToEnd(t *testing.T) {
	s := startServer(t, t.TempDir())
	for _, dir := range sampleDirs(t) {
		ingestSample(s, dir)
	}
	for _, dir := range sampleDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			checkRecording(t, s, dir)
		})
	}
}

// TestRecordedEndToEnd does the same with the recorded scenarios, which
// cover what the samples do not: quota scopes, LimitRanges, extended
// resources, sidecars and overhead, workload counts, volume attributes
// classes, quantity formats.
//
// Each runs on a server of its own: cluster-scoped objects of one (a
// default PriorityClass, say) were deleted before the next was recorded.
func TestRecordedEndToEnd(t *testing.T) {
	for _, dir := range recordedDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			s := startServer(t, t.TempDir())
			ingestSample(s, dir)
			checkRecording(t, s, dir)
		})
	}
}

// describeWaitTimeout bounds how long checkDescribe waits for the ledger
// to give the expected figures: a pod past its deletion deadline stops
// counting at the server's next sweep after the ingest.
const describeWaitTimeout = 15 * time.Second

// checkDescribe compares describe -o json's status with the quota list
// in the file expected, and describe's text with the file text, polling
// until they agree or describeWaitTimeout passes.
func checkDescribe(t *testing.T, s *ledgerProc, ns, expected, text string, diffs []*difference) {
	t.Helper()
	var want expectation
	b, _ := os.ReadFile(expected)
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	wantBytes, _ := os.ReadFile(text)
	wantText, collapse := string(wantBytes), false
	for i := range want.Items {
		q := &want.Items[i]
		for _, field := range []string{"used", "hard"} {
			list := q.Status.Used
			if field == "hard" {
				list = q.Status.Hard
			}
			for res := range list {
				d := differenceAt(diffs, field+" "+ns+"/"+q.Name+" "+string(res))
				if d == nil {
					continue
				}
				if v := list[res]; v.String() != d.kube {
					t.Errorf("differences.txt: %s %s: the recording says %s, not %s", d.scenario, d.where, v.String(), d.kube)
				}
				list[res] = resource.MustParse(d.ledger)
				wantText, collapse = describeWithout(wantText, q.Name, string(res), field), true
			}
		}
	}
	deadline := time.Now().Add(describeWaitTimeout)
	for {
		problems := describeProblems(s, ns, want, wantText, collapse)
		if len(problems) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range problems {
				t.Error(p)
			}
			return
		}
		time.Sleep(100 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

// describeProblems compares describe's output with the expectation. With
// collapse, the expected text has figures the ledger deliberately gives
// otherwise, left out (the json status checks them): words are compared,
// not kubectl's column widths.
func describeProblems(s *ledgerProc, ns string, want expectation, wantText string, collapse bool) []string {
	var got expectation
	var problems []string
	if err := json.Unmarshal([]byte(s.mustRun("describe", "-n", ns, "-o", "json")), &got); err != nil {
		return []string{err.Error()}
	}
	if len(got.Items) != len(want.Items) {
		return []string{fmt.Sprintf("describe -o json: %d quotas, want %d", len(got.Items), len(want.Items))}
	}
	for i := range want.Items {
		name := want.Items[i].Name
		if g, w := statusStrings(got.Items[i].Status.Used), statusStrings(want.Items[i].Status.Used); g != w {
			problems = append(problems, fmt.Sprintf("%s/%s status.used:\n got %s\nwant %s%s", ns, name, g, w,
				candidates("used "+ns+"/"+name, got.Items[i].Status.Used, want.Items[i].Status.Used)))
		}
		if g, w := statusStrings(got.Items[i].Status.Hard), statusStrings(want.Items[i].Status.Hard); g != w {
			problems = append(problems, fmt.Sprintf("%s/%s status.hard:\n got %s\nwant %s%s", ns, name, g, w,
				candidates("hard "+ns+"/"+name, got.Items[i].Status.Hard, want.Items[i].Status.Hard)))
		}
	}
	gotText := s.mustRun("describe", "-n", ns)
	if g, w := gotText, wantText; collapse && !sameWords(g, w) || !collapse && g != w {
		problems = append(problems, fmt.Sprintf("describe -n %s text:\n got:\n%s\nwant:\n%s", ns, gotText, wantText))
	}
	return problems
}

// candidates words each figure that differs as a line differences.txt
// would hold, should the difference be deliberate.
func candidates(where string, got, want corev1.ResourceList) string {
	var out string
	for res, w := range want {
		if g := got[res]; g.String() != w.String() {
			out += fmt.Sprintf("\n  candidate: SCENARIO | %s %s | %s | %s | WHY", where, res, w.String(), g.String())
		}
	}
	return out
}

var spaces = regexp.MustCompile(` +`)

func collapseSpaces(s string) string { return spaces.ReplaceAllString(s, " ") }

// describeWithout is describe text with quota name's figure of res (its
// used column, and for field "hard" its hard column too) left out as "*",
// its columns collapsed to single spaces.
func describeWithout(text, name, res, field string) string {
	lines := strings.Split(collapseSpaces(text), "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(l, "Name: ") {
			in = l == "Name: "+name
			continue
		}
		f := strings.Split(l, " ")
		if !in || len(f) != 3 || f[0] != res {
			continue
		}
		// kubectl prints used in hard's format: a hard of another
		// format changes both.
		f[1] = "*"
		if field == "hard" {
			f[2] = "*"
		}
		lines[i] = strings.Join(f, " ")
	}
	return strings.Join(lines, "\n")
}

// sameWords reports whether got has want's lines and words, runs of
// spaces counting as one and "*" in want standing for any word.
func sameWords(got, want string) bool {
	gl, wl := strings.Split(collapseSpaces(got), "\n"), strings.Split(want, "\n")
	if len(gl) != len(wl) {
		return false
	}
	for i := range wl {
		gw, ww := strings.Split(gl[i], " "), strings.Split(wl[i], " ")
		if len(gw) != len(ww) {
			return false
		}
		for j := range ww {
			if ww[j] != "*" && ww[j] != gw[j] {
				return false
			}
		}
	}
	return true
}

// checkProbe asks for a dry-run create of the manifest probe in
// namespace ns and compares the verdict with the recorded one beside it,
// or with the ledger's where differences.txt names the probe.
func checkProbe(t *testing.T, s *ledgerProc, probe, ns string, diffs []*difference) {
	t.Helper()
	want, err := os.ReadFile(strings.TrimSuffix(probe, ".json") + ".expected")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(strings.TrimSpace(string(want)), "\n", 2)
	if d := differenceAt(diffs, "probe "+strings.TrimSuffix(filepath.Base(probe), ".json")); d != nil {
		if recorded := lines[len(lines)-1]; recorded != d.kube {
			t.Errorf("differences.txt: %s %s: the recording says %q, not %q", d.scenario, d.where, recorded, d.kube)
		}
		lines = []string{"denied", d.ledger}
		if d.ledger == "allowed" {
			lines = []string{"allowed"}
		}
	}
	out, errOut, code := s.run("admit", "--dry-run", "-n", ns, "-f", probe)
	switch lines[0] {
	case "allowed":
		if code != 0 || strings.TrimSpace(out) != "allowed" {
			t.Errorf("%s: got exit %d %q %q, want allowed", filepath.Base(probe), code, out, errOut)
		}
	case "denied":
		if code != 1 || strings.TrimSpace(out) != lines[1] {
			t.Errorf("%s: got exit %d\n%s%s\nwant exit 1\n%s", filepath.Base(probe), code, out, errOut, lines[1])
		}
	case "error 422":
		// The API server's validation refused the object (recorded
		// scenarios only): admit reports it as a refusal too.
		if code != 1 || strings.TrimSpace(out) != lines[1] {
			t.Errorf("%s: got exit %d\n%s%s\nwant exit 1\n%s", filepath.Base(probe), code, out, errOut, lines[1])
		}
	case "error 400":
		// The API server could not decode the object: admit cannot
		// either, and says why in the API server's words.
		if code != 2 || !strings.Contains(errOut, lines[1]) {
			t.Errorf("%s: got exit %d\n%s%s\nwant exit 2 and\n%s", filepath.Base(probe), code, out, errOut, lines[1])
		}
	default:
		t.Fatalf("%s: unknown verdict %q", probe, lines[0])
	}
}

// serveSamplesAndStop runs a server on data, ingests the samples, and
// returns what `describe -A -o json` printed before stopping it.
func serveSamplesAndStop(t *testing.T, data string) string {
	t.Helper()
	s := startServer(t, data)
	for _, dir := range sampleDirs(t) {
		ingestSample(s, dir)
	}
	before := s.mustRun("describe", "-A", "-o", "json")
	s.stop()
	return before
}

// TestRebuildAfterDeletingProjection deletes the projection file while the
// server is stopped; the restarted server rebuilds the same usage from the
// stream.
func TestRebuildAfterDeletingProjection(t *testing.T) {
	data := t.TempDir()
	before := serveSamplesAndStop(t, data)
	if err := os.Remove(filepath.Join(data, "projection.db")); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, data)
	after := s2.mustRun("describe", "-A", "-o", "json")
	if before != after {
		t.Errorf("rebuilt projection differs:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestServeRefusesDamagedProjection damages a page in the middle of the
// projection file, as a bad sector would: `quota serve` stops at start
// with an error naming the file and what to do, where it used to panic at
// the first query reaching the page, at every start. Moving the file
// aside rebuilds the same projection from the stream.
func TestServeRefusesDamagedProjection(t *testing.T) {
	data := t.TempDir()
	before := serveSamplesAndStop(t, data)
	path := filepath.Join(data, "projection.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	projectortest.DamageLeaf(t, db, path, false)
	db.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "--data", data, "--listen", "127.0.0.1:0")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("quota serve on a damaged projection: %v, want it to exit with an error\n%s", err, out)
	}
	for _, want := range []string{path, "projection file damaged", "move it aside"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("quota serve's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "goroutine ") {
		t.Errorf("quota serve panicked:\n%s", out)
	}

	if err := os.Rename(path, path+".damaged"); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, data)
	if after := s2.mustRun("describe", "-A", "-o", "json"); after != before {
		t.Errorf("rebuilt projection differs:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestServeRefusesProjectionOfAnotherStream wipes the embedded JetStream
// store and keeps the projection, as an operator resetting the log by
// hand might: the new stream's events would get the sequences the
// projection has applied already and be skipped. quota serve refuses to
// start, saying why and what to do; with the file moved aside it serves
// the new, empty log.
func TestServeRefusesProjectionOfAnotherStream(t *testing.T) {
	data := t.TempDir()
	serveSamplesAndStop(t, data)
	if err := os.RemoveAll(filepath.Join(data, "jetstream")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "serve", "--data", data, "--listen", "127.0.0.1:0").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("quota serve on another stream's projection: %v, want it to exit with an error\n%s", err, out)
	}
	for _, want := range []string{"projection file built from another stream", "move it aside"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("quota serve's output lacks %q:\n%s", want, out)
		}
	}
	path := filepath.Join(data, "projection.db")
	if err := os.Rename(path, path+".old"); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, data)
	if got := s.mustRun("describe", "-A", "-o", "json"); strings.Contains(got, "sample-") {
		t.Errorf("the new log's describe shows the old log's namespaces:\n%s", got)
	}
}

// TestIngestReportsBadRecords feeds a file with malformed lines between
// good ones: the good ones are ingested, each bad one is reported as
// FILE:LINE: reason, the exit status is 1, and `quota rejects` lists them.
func TestIngestReportsBadRecords(t *testing.T) {
	s := startServer(t, t.TempDir())
	file := filepath.Join(t.TempDir(), "mixed.jsonl")
	lines := []string{
		`{"type":"ADDED","object":{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","namespace":"mixed","uid":"u-q","resourceVersion":"1"},"spec":{"hard":{"pods":"5"}}}}`,
		`{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"mixed","uid":"u-a","resourceVersion":"2"},"spec":{"containers":[{"name":"c"}]}}}`,
		`{"type":"ADDED","object":{not json`,
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version","reason":"Expired","code":410}}`,
		`{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b","namespace":"mixed","uid":"u-b","resourceVersion":"3"},"spec":{"containers":[{"name":"c"}]}}}`,
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := s.run("ingest", file)
	if code != 1 {
		t.Fatalf("ingest exit %d, want 1\n%s", code, stderr)
	}
	for _, want := range []string{file + ":3: ", file + ":4: "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, file+":2:") || strings.Contains(stderr, file+":5:") {
		t.Errorf("a good line was reported:\n%s", stderr)
	}
	out := s.mustRun("describe", "-n", "mixed")
	if !strings.Contains(out, "pods        2     5") {
		t.Errorf("describe after a mixed ingest:\n%s", out)
	}
	rejects := s.mustRun("rejects")
	for _, want := range []string{file + ":3: ", file + ":4: "} {
		if !strings.Contains(rejects, want) {
			t.Errorf("quota rejects lacks %q:\n%s", want, rejects)
		}
	}

	// Dealt with, they are purged, and the list is empty.
	_, purged, code := s.run("rejects", "--purge")
	if code != 0 || !strings.Contains(purged, "purged 2 rejections") {
		t.Errorf("rejects --purge: exit %d, %q; want 2 purged", code, purged)
	}
	if out, errOut, _ := s.run("rejects"); out != "" || !strings.Contains(errOut, "no rejections") {
		t.Errorf("rejects after the purge listed:\n%s%s", out, errOut)
	}
}

// TestIngestChecksEveryFileFirst names a good file, then one that does
// not exist or a directory: ingest refuses before reading any, so the
// good file is not left half the job.
func TestIngestChecksEveryFileFirst(t *testing.T) {
	s := startServer(t, t.TempDir())
	events := filepath.Join(samplesDir, "sample-team-a", "events.jsonl")
	for _, tc := range []struct{ name, want string }{
		{filepath.Join(t.TempDir(), "missing.jsonl"), "no such file or directory"},
		{t.TempDir(), "is a directory"},
	} {
		out, stderr, code := s.run("ingest", events, tc.name)
		if code != exitError || out != "" || !strings.Contains(stderr, tc.name) || !strings.Contains(stderr, tc.want) ||
			strings.Contains(stderr, "ingested") {
			t.Errorf("ingest of a good file and %s: exit %d, stderr %q; want exit %d naming it (%s), nothing ingested", tc.name, code, stderr, exitError, tc.want)
		}
	}
	if _, stderr, _ := s.run("describe", "-n", "sample-team-a"); !strings.Contains(stderr, "No resources found") {
		t.Errorf("describe after the refused ingests: %q; want no quota", stderr)
	}
}

// TestAdmitAppliesClusterDefaults checks that a raw manifest gets what the
// API server's mutating plugins would give it before quota sees it: a
// claim naming no class gets the default StorageClass, a pod naming no
// priority class gets the global default PriorityClass.
func TestAdmitAppliesClusterDefaults(t *testing.T) {
	s := startServer(t, t.TempDir())
	dir := t.TempDir()
	write := fileWriter(t, dir)
	cluster := write("cluster.yaml", `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
  creationTimestamp: "2026-01-01T00:00:00Z"
provisioner: example.com/disk
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: batch-low
value: 10
globalDefault: true
`)
	quotas := write("quotas.yaml", `apiVersion: v1
kind: ResourceQuota
metadata:
  name: standard-disks
  namespace: defaults
spec:
  hard:
    standard.storageclass.storage.k8s.io/requests.storage: 1Gi
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: low-priority
  namespace: defaults
spec:
  hard:
    pods: "0"
  scopeSelector:
    matchExpressions:
    - scopeName: PriorityClass
      operator: In
      values: ["batch-low"]
`)
	s.mustRun("ingest", cluster)
	s.mustRun("ingest", quotas)
	claim := write("claim.yaml", `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 2Gi
`)
	out, _, code := s.run("admit", "--dry-run", "-n", "defaults", "-f", claim)
	want := `persistentvolumeclaims "data" is forbidden: exceeded quota: standard-disks, requested: standard.storageclass.storage.k8s.io/requests.storage=2Gi, used: standard.storageclass.storage.k8s.io/requests.storage=0, limited: standard.storageclass.storage.k8s.io/requests.storage=1Gi`
	if code != 1 || strings.TrimSpace(out) != want {
		t.Errorf("claim with no class: exit %d\n%s\nwant exit 1\n%s", code, out, want)
	}
	pod := write("pod.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: job-1
spec:
  containers:
  - name: c
    image: busybox
`)
	out, _, code = s.run("admit", "--dry-run", "-n", "defaults", "-f", pod)
	want = `pods "job-1" is forbidden: exceeded quota: low-priority, requested: pods=1, used: pods=0, limited: pods=0`
	if code != 1 || strings.TrimSpace(out) != want {
		t.Errorf("pod with no priority class: exit %d\n%s\nwant exit 1\n%s", code, out, want)
	}
}

func TestServeAppliesAdmissionControlConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := fileWriter(t, dir)
	write("quota-config.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: ResourceQuotaConfiguration
limitedResources:
- resource: pods
  matchContains: ["nvidia.com/gpu"]
`)
	config := write("admission.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ResourceQuota
  path: quota-config.yaml
`)
	s := startServer(t, t.TempDir(), "--admission-control-config-file", config)
	s.mustRun("ingest", write("quotas.yaml", `apiVersion: v1
kind: ResourceQuota
metadata:
  name: pods
  namespace: team
spec:
  hard:
    pods: "10"
`))
	pod := write("pod.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: trainer
spec:
  containers:
  - name: c
    image: registry.example/train:1
    resources:
      limits:
        nvidia.com/gpu: 1
`)
	out, _, code := s.run("admit", "--dry-run", "-n", "team", "-f", pod)
	want := `pods "trainer" is forbidden: insufficient quota to consume: requests.nvidia.com/gpu`
	if code != 1 || strings.TrimSpace(out) != want {
		t.Errorf("gpu pod: exit %d\n%s\nwant exit 1\n%s", code, out, want)
	}

	// A file the server cannot use stops it before it serves.
	bad := write("bad.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResource: []\n")
	cmd := exec.Command(binary, "serve", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--admission-control-config-file", bad)
	msg, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(msg), `unknown field "limitedResource"`) {
		t.Errorf("serve with a misspelt configuration: %v\n%s", err, msg)
	}
}

// fileWriter returns a function that writes a file named name under dir
// and returns its path.
func fileWriter(t testing.TB, dir string) func(name, body string) string {
	return func(name, body string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
}

// TestServeReportsItsMemoryLimit checks that serve names the Go runtime's
// memory limit when it starts, here the one GOMEMLIMIT sets (a container's
// memory limit sets it otherwise).
func TestServeReportsItsMemoryLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "300MiB")
	s := startServer(t, t.TempDir())
	if !strings.Contains(s.logs.String(), "memory_limit=300MiB") {
		t.Errorf("serve's start does not name its memory limit of 300MiB:\n%s", s.logs)
	}
}
