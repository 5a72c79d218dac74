package ledger

import (
	"encoding/json"
	"time"
)

// EventType says what an Event records.
type EventType string

const (
	// Upsert records that an object exists with the given state.
	Upsert EventType = "upsert"
	// Delete records that an object is gone.
	Delete EventType = "delete"
	// Resync records the complete set of objects of one resource in one
	// namespace at a moment: objects the projection holds that the list
	// lacks are removed, the listed ones are upserted. A list too large
	// for one event is split: its objects are appended as Upserts, and
	// the Resync that follows them names them in Listed.
	Resync EventType = "resync"
	// Reserve records admissions that charged a namespace for objects that
	// have not been created yet: one in its own fields, or several, decided
	// together against one state of the namespace, in Reservations.
	Reserve EventType = "reserve"
	// Expire records that reservations of one namespace were not
	// confirmed in time and are released: one in Reservation, or several
	// in Expired.
	Expire EventType = "expire"
	// Deadline records that the deletion deadline of a pod passed
	// (deletionTimestamp plus the grace period): from then on the pod
	// counts as Kubernetes' quota evaluator counts it past its deadline,
	// for its object count only. The server appends it; its stream time
	// is when the deadline was seen to pass.
	Deadline EventType = "deadline"
	// Progress records how far the exporter's feed of the cluster has
	// come: for each resource in Progress, the log holds every change of
	// it up to a resourceVersion the cluster had at a recorded moment.
	// Reservations released by the feed (ReleaseByFeed) end on it.
	Progress EventType = "progress"
)

// ReleaseByFeed is the Release of a Reserve whose reservations end on the
// feed's progress rather than on wall-clock time: each is released once a
// Progress event shows its resource's feed at a moment later than the
// Reserve's stream time plus ReservationTTL (then the longest the API
// server may take to store the object), and its object has not appeared.
const ReleaseByFeed = "feed"

// EncodingVersion is the version of the event encoding this code writes.
const EncodingVersion = 1

// Event is one recorded fact. Its JSON encoding is what the stream holds.
type Event struct {
	Version int       `json:"v"`
	Type    EventType `json:"type"`
	// Resource is the group-qualified plural ("pods", "jobs.batch").
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	UID       string `json:"uid,omitempty"`
	// ResourceVersion is the cluster's version of the object, when known.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Object is the trimmed object JSON (Upsert, Reserve).
	Object json.RawMessage `json:"object,omitempty"`
	// Items are the trimmed objects of a Resync.
	Items []json.RawMessage `json:"items,omitempty"`
	// Listed are the names of a Resync's objects that Upsert events
	// before it carried, for a list too large for one event: they are
	// part of the list as much as Items.
	Listed []string `json:"listed,omitempty"`
	// Reservation identifies a reservation (Reserve, Expire).
	Reservation string `json:"reservation,omitempty"`
	// ReservationTTL is how long a Reserve holds without confirmation,
	// counted from the time the stream recorded it.
	ReservationTTL time.Duration `json:"reservationTTL,omitempty"`
	// Release says what ends a Reserve's reservations that no object
	// confirms: "" for ReservationTTL's wall-clock expiry, ReleaseByFeed
	// for the feed's progress.
	Release string `json:"release,omitempty"`
	// Reservations are the reservations of a Reserve that holds several;
	// each is applied as a single Reserve with the event's namespace, TTL
	// and stream time would be, in order.
	Reservations []Reservation `json:"reservations,omitempty"`
	// Expired are the reservation IDs of an Expire that releases several
	// of its namespace at once, in order.
	Expired []string `json:"expired,omitempty"`
	// Progress are the feed points of a Progress event, one per
	// resource, in resource order.
	Progress []FeedPoint `json:"progress,omitempty"`
	// Source says where the fact came from ("pods.jsonl:12", an exporter).
	Source string `json:"source,omitempty"`
}

// Reservation is one reservation of a Reserve event that holds several:
// its ID (as Event.Reservation), and the resource, name and trimmed JSON
// of its object.
type Reservation struct {
	ID       string          `json:"id"`
	Resource string          `json:"resource"`
	Name     string          `json:"name"`
	Object   json.RawMessage `json:"object"`
	// Operation is empty for a create's reservation, which holds the
	// object's whole charge until the object is reported. It is
	// HoldOperation for an update's hold, which holds the object's charge as
	// Object would make it, over the charge the projection holds for the
	// object, until the object reports a charge that covers it.
	Operation string `json:"operation,omitempty"`
}

// FeedPoint is how far the feed of one resource has come: the log holds
// every change of the resource up to ResourceVersion, a version the
// cluster had at At (or later). At is read on the exporter's clock before
// it asked the API server for that version.
type FeedPoint struct {
	Resource        string    `json:"resource"`
	ResourceVersion string    `json:"resourceVersion"`
	At              time.Time `json:"at"`
}

// HoldOperation is the Operation of an update's reservation, a hold.
const HoldOperation = "UPDATE"

// ExpiredIDs returns the reservation IDs an Expire event releases, in
// order: its Reservation, or its Expired. It returns nil for other types.
func (ev *Event) ExpiredIDs() []string {
	if ev.Type != Expire {
		return nil
	}
	if len(ev.Expired) > 0 {
		return ev.Expired
	}
	return []string{ev.Reservation}
}

// Reserved returns the reservations a Reserve event holds, in order: its
// own fields as one, or its Reservations. It returns nil for other types.
func (ev *Event) Reserved() []Reservation {
	if ev.Type != Reserve {
		return nil
	}
	if len(ev.Reservations) > 0 {
		return ev.Reservations
	}
	return []Reservation{{ID: ev.Reservation, Resource: ev.Resource, Name: ev.Name, Object: ev.Object}}
}
