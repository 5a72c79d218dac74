package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/quotaledger/quota/ledger"

	"github.com/nats-io/nats.go"

	"github.com/quotaledger/quota/ledger/object"
)

// States tells what the log says objects are now, so that a plain
// manifest is skipped only when it states what its object already is.
// ProjectionStates asks a projection; RemoteStates asks a ledger server
// over NATS (StatesSubject).
type States interface {
	// ObjectStates returns one ObjectState per key, in order, as of a
	// point at or after the call began: every event appended before the
	// call is reflected.
	ObjectStates(ctx context.Context, keys []ObjectKey) ([]ObjectState, error)
}

// ObjectKey names one object of the log.
type ObjectKey struct {
	Namespace string `json:"namespace,omitempty"`
	Resource  string `json:"resource"`
	Name      string `json:"name"`
}

// ObjectState is what the log says one object is now.
type ObjectState struct {
	// Digest is the hex SHA-256 of the object's state (see stateDigest);
	// empty when the log holds no such object (never reported, deleted,
	// removed by a resync, or only reserved by an admission).
	Digest string `json:"digest,omitempty"`
	// After is the last stream sequence of the object's namespace that
	// the answer reflects; an append made on this answer names it in its
	// message ID, so that two clients making the same change at once
	// append it once, and a state that comes back after a change is new.
	After uint64 `json:"after"`
}

// Limits of state lookups.
const (
	// StatesKeysMax is the number of objects one lookup asks about; a
	// batch naming more is asked in several lookups.
	StatesKeysMax = 1000
	// StatesSubject is where a ledger server answers lookups: the request
	// is StatesRequest's JSON, the reply StatesReply's.
	StatesSubject = "quota.ingest.states"
)

// StatesRequest asks for the current state of at most StatesKeysMax
// objects.
type StatesRequest struct {
	Keys []ObjectKey `json:"keys"`
}

// StatesReply answers a StatesRequest: States in the order of its keys,
// or Error.
type StatesReply struct {
	States []ObjectState `json:"states"`
	Error  string        `json:"error,omitempty"`
}

// CurrentObjects is what a projection (projector.Projector) offers, after
// catching up with the stream: each key's (namespace, resource, name)
// current object, nil for none, and its namespace's last applied sequence.
type CurrentObjects interface {
	CurrentObjects(ctx context.Context, keys [][3]string) (objects []json.RawMessage, subjectSeqs []uint64, err error)
}

// ProjectionStates answers lookups from a projection.
func ProjectionStates(p CurrentObjects) States { return projectionStates{p} }

type projectionStates struct{ p CurrentObjects }

func (s projectionStates) ObjectStates(ctx context.Context, keys []ObjectKey) ([]ObjectState, error) {
	k := make([][3]string, len(keys))
	for i, key := range keys {
		k[i] = [3]string{key.Namespace, key.Resource, key.Name}
	}
	objects, seqs, err := s.p.CurrentObjects(ctx, k)
	if err != nil {
		return nil, err
	}
	states := make([]ObjectState, len(keys))
	for i, raw := range objects {
		states[i].After = seqs[i]
		if raw == nil {
			continue
		}
		digest, err := storedDigest(raw)
		if err != nil {
			// The stored object cannot be compared: taken for another
			// state, so that the manifest is appended.
			digest = "unreadable:" + err.Error()
		}
		states[i].Digest = digest
	}
	return states, nil
}

// Requester sends one request and returns its reply: how a client reaches
// the ledger server (waiting for one that is starting, and taking a reply
// sent in parts).
type Requester func(subject string, body []byte) (*nats.Msg, error)

// RemoteStates answers lookups by asking a ledger server on
// StatesSubject through request.
func RemoteStates(request Requester) States { return remoteStates{request} }

type remoteStates struct{ request Requester }

func (s remoteStates) ObjectStates(ctx context.Context, keys []ObjectKey) ([]ObjectState, error) {
	body, err := json.Marshal(StatesRequest{Keys: keys})
	if err != nil {
		return nil, err
	}
	msg, err := s.request(StatesSubject, body)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("ask the ledger (%s) for the current state of %d objects: no ledger server answers there (a server older than this client does not): %w", StatesSubject, len(keys), err)
		}
		return nil, fmt.Errorf("ask the ledger (%s) for the current state of %d objects: %w", StatesSubject, len(keys), err)
	}
	var reply StatesReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return nil, fmt.Errorf("bad reply from the ledger (%s): %w", StatesSubject, err)
	}
	if reply.Error != "" {
		return nil, fmt.Errorf("ask the ledger (%s): %s", StatesSubject, reply.Error)
	}
	if len(reply.States) != len(keys) {
		return nil, fmt.Errorf("bad reply from the ledger (%s): %d states for %d objects", StatesSubject, len(reply.States), len(keys))
	}
	return reply.States, nil
}

// storedDigest is stateDigest of an object as the log stored it.
func storedDigest(raw json.RawMessage) (string, error) {
	o, err := object.Decode(raw)
	if err != nil {
		return "", err
	}
	trimmed, err := o.Trimmed()
	if err != nil {
		return "", err
	}
	return stateDigest(sha256.Sum256(trimmed)), nil
}

// stateDigest is how an ObjectState spells a digest of an object's state
// (its trimmed JSON: what quota reads of it).
func stateDigest(sum [sha256.Size]byte) string { return hex.EncodeToString(sum[:]) }

// plainMsgID is the message ID of a plain manifest's upsert of key to the
// state digest, made after the state named by after: the namespace's
// sequence a lookup reflected ("seq:N"), or the message ID of the event
// before it in the same batch. The same change made twice on the same
// state has one ID; any other change has another.
func plainMsgID(key string, digest [sha256.Size]byte, after string) string {
	sum := sha256.Sum256([]byte(key + "/sha256:" + hex.EncodeToString(digest[:16]) + "/after/" + after))
	return base64.RawURLEncoding.EncodeToString(sum[:msgIDBytes])
}

// batchState is what the events before one in its batch made of an
// object: it exists with digest, or not; chain is the message ID of the
// last of them.
type batchState struct {
	exists bool
	digest [sha256.Size]byte
	chain  string
}

// judgePlain decides the plain objects of batch, appended only after every
// batch before it was acknowledged: one is skipped (counted in unchanged)
// when its object is in the state it states, in the log or after the
// events before it in batch; the others get their message ID.
func (in *Ingester) judgePlain(ctx context.Context, batch []pendingEntry) (entries []ledger.BatchEntry, unchanged int, err error) {
	entries = make([]ledger.BatchEntry, 0, len(batch))
	if in.opts.States == nil || !slices.ContainsFunc(batch, func(pe pendingEntry) bool { return pe.plain }) {
		// Nothing to judge: a watch feed's batches cost no lookup.
		for _, pe := range batch {
			entries = append(entries, pe.entry)
		}
		return entries, 0, nil
	}
	// Look up each object whose first event in the batch is plain.
	seen := make(map[string]bool, len(batch))
	var keys []ObjectKey
	for _, pe := range batch {
		if seen[pe.key] {
			continue
		}
		seen[pe.key] = true
		if pe.plain {
			ev := pe.entry.Event
			keys = append(keys, ObjectKey{Namespace: ev.Namespace, Resource: ev.Resource, Name: ev.Name})
		}
	}
	logged := make(map[string]ObjectState, len(keys))
	for start := 0; start < len(keys); start += StatesKeysMax {
		chunk := keys[start:min(start+StatesKeysMax, len(keys))]
		states, err := in.opts.States.ObjectStates(ctx, chunk)
		if err != nil {
			return nil, 0, err
		}
		for i, k := range chunk {
			logged[k.Resource+"/"+k.Namespace+"/"+k.Name] = states[i]
		}
	}
	local := make(map[string]batchState, len(batch))
	for _, pe := range batch {
		if !pe.plain {
			local[pe.key] = batchState{exists: !pe.deleted, digest: pe.digest, chain: pe.entry.MsgID}
			entries = append(entries, pe.entry)
			continue
		}
		var same bool
		var after string
		if st, ok := local[pe.key]; ok {
			same, after = st.exists && st.digest == pe.digest, "event:"+st.chain
		} else {
			st := logged[pe.key]
			same, after = st.Digest == stateDigest(pe.digest), "seq:"+strconv.FormatUint(st.After, 10)
		}
		if same {
			unchanged++
			continue
		}
		e := pe.entry
		e.MsgID = plainMsgID(pe.key, pe.digest, after)
		local[pe.key] = batchState{exists: true, digest: pe.digest, chain: e.MsgID}
		entries = append(entries, e)
	}
	return entries, unchanged, nil
}
