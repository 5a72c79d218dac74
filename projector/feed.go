package projector

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/quotaledger/quota/projector/buckets"

	"github.com/quotaledger/quota/ledger"
)

// The feed's progress.
//
// A reservation made with ledger.ReleaseByFeed ends on the feed's
// progress, never on the server's clock: it is released only once a
// Progress event shows that the log holds every change of its resource up
// to a moment later than the reservation's end (its Reserve's stream time
// plus the longest the API server may take to store the object), and its
// object has not appeared by then. Until then, whatever the exporter's
// state, it holds: holding only over-counts, and over-counting refuses
// more, never admits more.
//
// The feeds bucket holds, per resource, the newest feed point the log
// has shown (a moment and the resourceVersion the cluster had then); the
// feed-expiry bucket indexes the reservations that end on the feed by
// resource and end, so that the sweep reads only those whose resource's
// feed has passed their end.

// Feed is what the projection knows of the feed of one resource.
type Feed struct {
	Resource string `json:"resource"`
	// ResourceVersion and At are the newest feed point the log has shown:
	// the log holds every change of the resource up to ResourceVersion,
	// a version the cluster had at At. Zero when no Progress event has
	// named the resource.
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	At              time.Time `json:"at,omitzero"`
	// Seq is the stream sequence of the Progress event that set the point.
	Seq uint64 `json:"seq,omitempty"`
	// Source is that event's source: the exporter that made it.
	Source string `json:"source,omitempty"`
	// Waiting counts the reservations of the resource that end on the
	// feed and are still held; OldestEnd is the earliest of their ends.
	Waiting   int       `json:"waiting,omitempty"`
	OldestEnd time.Time `json:"oldestEnd,omitzero"`
}

// feedRecord is a Feed point as the feeds bucket stores it.
type feedRecord struct {
	ResourceVersion string    `json:"resourceVersion"`
	At              time.Time `json:"at"`
	Seq             uint64    `json:"seq"`
	Source          string    `json:"source,omitempty"`
}

// feedExpiryKey is the key of a reservation ending on the feed: its
// resource, a zero byte, its end (Unix ns, big-endian) and its id.
func feedExpiryKey(resource string, end time.Time, id string) []byte {
	k := make([]byte, 0, len(resource)+9+len(id))
	k = append(k, resource...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(end.UnixNano()))
	return append(k, id...)
}

// progress applies a Progress event: each resource's feed point moves to
// the event's, if that is later than the one held. A point never moves
// back, so a late event from an exporter that has lost its lease changes
// nothing.
func (f *fold) progress(rec *ledger.Record) error {
	b := f.tx.Bucket(bucketFeeds)
	for _, p := range rec.Event.Progress {
		if v := b.Get([]byte(p.Resource)); v != nil {
			var old feedRecord
			if err := json.Unmarshal(v, &old); err != nil {
				return fmt.Errorf("%w: feed of %s: %v", ErrInvariant, p.Resource, err)
			}
			if !p.At.After(old.At) {
				continue
			}
		}
		v, err := json.Marshal(feedRecord{ResourceVersion: p.ResourceVersion, At: p.At.UTC(), Seq: rec.Seq, Source: rec.Event.Source})
		if err != nil {
			return err
		}
		if err := b.Put([]byte(p.Resource), v); err != nil {
			return err
		}
	}
	return nil
}

// Feeds returns what the projection knows of the feed of every resource
// that a Progress event has named or a reservation waits on, in resource
// order.
func (p *Projector) Feeds() ([]Feed, error) {
	var out []Feed
	err := p.read(func(tx *buckets.Set) error {
		byResource := map[string]*Feed{}
		get := func(resource string) *Feed {
			f := byResource[resource]
			if f == nil {
				f = &Feed{Resource: resource}
				byResource[resource] = f
			}
			return f
		}
		err := tx.Bucket(bucketFeeds).ForEach(func(k, v []byte) error {
			var r feedRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("%w: feed of %s: %v", ErrInvariant, k, err)
			}
			f := get(string(k))
			f.ResourceVersion, f.At, f.Seq, f.Source = r.ResourceVersion, r.At, r.Seq, r.Source
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Bucket(bucketFeedExpiry).ForEach(func(k, _ []byte) error {
			resource, end, _, err := splitFeedExpiryKey(k)
			if err != nil {
				return err
			}
			f := get(resource)
			if f.Waiting == 0 || end.Before(f.OldestEnd) {
				f.OldestEnd = end
			}
			f.Waiting++
			return nil
		})
		for _, f := range byResource {
			out = append(out, *f)
		}
		return err
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out, err
}

func splitFeedExpiryKey(k []byte) (resource string, end time.Time, id string, err error) {
	i := bytes.IndexByte(k, 0)
	if i < 0 || len(k) < i+9 {
		return "", time.Time{}, "", fmt.Errorf("%w: feed expiry key %q", ErrInvariant, k)
	}
	end = time.Unix(0, int64(binary.BigEndian.Uint64(k[i+1:i+9]))).UTC()
	return string(k[:i]), end, string(k[i+9:]), nil
}

// feedReleased appends to out, up to max in all, the reservations ending
// on the feed whose resource's feed point is later than their end.
func feedReleased(tx *buckets.Set, out []Reservation, max int) ([]Reservation, error) {
	feeds := tx.Bucket(bucketFeeds)
	c := tx.Bucket(bucketFeedExpiry).Cursor()
	return out, feeds.ForEach(func(resource, v []byte) error {
		var r feedRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("%w: feed of %s: %v", ErrInvariant, resource, err)
		}
		prefix := append(append([]byte(nil), resource...), 0)
		for k, key := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(out) < max; k, key = c.Next() {
			_, end, id, err := splitFeedExpiryKey(k)
			if err != nil {
				return err
			}
			if !end.Before(r.At) {
				break
			}
			rv, err := reservationAt(id, end, key)
			if err != nil {
				return err
			}
			out = append(out, rv)
		}
		return nil
	})
}

// reservationAt is the Reservation of id, ending at end, on the object
// at key.
func reservationAt(id string, end time.Time, key []byte) (Reservation, error) {
	parts := bytes.SplitN(key, []byte{0}, 3)
	if len(parts) != 3 {
		return Reservation{}, fmt.Errorf("%w: expiry entry points at object key %q", ErrInvariant, key)
	}
	return Reservation{ID: id, Namespace: string(parts[0]), Resource: string(parts[1]), Name: string(parts[2]), ExpiresAt: end}, nil
}
