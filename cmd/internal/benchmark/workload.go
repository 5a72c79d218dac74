package benchmark

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest/workload"
	"github.com/quotaledger/quota/ledger/object"
)

// chunks yields the stream ChunkEvents lines at a time; the lines are only
// valid during the call.
func (r *run) chunks(fn func(lines [][]byte) error) error {
	g, err := workload.New(r.cfg.Workload)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, ChunkEvents*6<<10)
	ends := make([]int, 0, ChunkEvents)
	lines := make([][]byte, 0, ChunkEvents)
	for done := false; !done; {
		buf, ends, lines = buf[:0], ends[:0], lines[:0]
		for len(ends) < ChunkEvents {
			var ok bool
			buf, ok = g.Next(buf)
			if !ok {
				done = true
				break
			}
			ends = append(ends, len(buf))
		}
		start := 0
		for _, end := range ends {
			lines = append(lines, buf[start:end:end])
			start = end
		}
		if len(lines) > 0 {
			if err := fn(lines); err != nil {
				return err
			}
		}
	}
	r.rep.Stats = g.Stats()
	return nil
}

// watchEvent is the Kubernetes watch framing.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// convert turns one watch line into the ledger event ingest appends for it,
// with a message ID that makes a re-sent event a no-op.
func convert(line []byte) (ledger.BatchEntry, error) {
	var w watchEvent
	if err := json.Unmarshal(line, &w); err != nil {
		return ledger.BatchEntry{}, fmt.Errorf("watch event: %w", err)
	}
	o, err := object.Decode(w.Object)
	if err != nil {
		return ledger.BatchEntry{}, err
	}
	ev := ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Upsert, Resource: o.Resource,
		Namespace: o.Namespace, Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion, Source: "workload"}
	if w.Type == workload.Deleted {
		ev.Type = ledger.Delete
	} else {
		trimmed, err := o.Trimmed()
		if err != nil {
			return ledger.BatchEntry{}, err
		}
		ev.Object = trimmed
	}
	return ledger.BatchEntry{Event: ev, MsgID: o.UID + "@" + o.ResourceVersion}, nil
}

// collect keeps a few pod objects and the namespaces, for the queries.
func (r *run) collect(lines [][]byte) {
	const podsKept = 64
	for _, line := range lines {
		if len(r.pods) >= podsKept {
			return
		}
		if !strings.HasPrefix(string(line[:min(len(line), 40)]), `{"type":"ADDED","object":{"kind":"Pod"`) {
			continue
		}
		var w watchEvent
		if json.Unmarshal(line, &w) != nil {
			continue
		}
		o, err := object.Decode(w.Object)
		if err != nil {
			continue
		}
		r.pods = append(r.pods, admissionReview(o.Namespace, fmt.Sprintf("bench-%d", len(r.pods)), w.Object))
		r.podObjects = append(r.podObjects, w.Object)
		r.namespaces = append(r.namespaces, o.Namespace)
	}
}

// admissionReview wraps a pod in an admission.k8s.io/v1 AdmissionReview
// request; the harness patches dryRun per request.
func admissionReview(namespace, uid string, pod json.RawMessage) []byte {
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "admission.k8s.io/v1",
		"kind":       "AdmissionReview",
		"request": map[string]any{
			"uid":       uid,
			"kind":      map[string]string{"group": "", "version": "v1", "kind": "Pod"},
			"resource":  map[string]string{"group": "", "version": "v1", "resource": "pods"},
			"namespace": namespace,
			"operation": "CREATE",
			"object":    pod,
			"dryRun":    false,
		},
	})
	return b
}
