package projector

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/quotaledger/quota/projector/buckets"
	corev1 "k8s.io/api/core/v1"

	"github.com/quotaledger/quota/ledger/quota"
)

// SchemaVersion is the layout version of the projection file. Open
// refuses a file of another version with ErrSchemaVersion, and its owner
// (`quota serve`) rebuilds it from the stream: the file holds nothing the
// stream does not, so it is never migrated.
const SchemaVersion = 9

// RulesVersion is the version of the rules the fold charges by: what
// ledger/quota charges for an object, and how the fold sums and prints
// usage. A file records the version it was first folded under
// (Projector.Rules); a projection keeps each object's charge as its last
// event was folded, so one folded under other rules holds charges this
// build would not make, and Open recharges it (Recharge). Any change
// that folds the same log to other usage bumps it (see
// testdata/rules.golden).
const RulesVersion = 3

// Bucket names. Every key that names a namespace object starts with the
// namespace and a zero byte, so one namespace is one contiguous key range.
var (
	bucketMeta      = []byte("meta")      // applied sequence, schema and rules versions
	bucketSubjects  = []byte("subjects")  // namespace → last applied seq of its subject
	bucketObjects   = []byte("objects")   // ns\0resource\0name → objectRecord
	bucketQuotas    = []byte("quotas")    // ns\0name → quotaRecord
	bucketReserved  = []byte("reserved")  // reservation id → object key
	bucketExpiry    = []byte("expiry")    // expiry (Unix ns, big-endian) + reservation id → object key
	bucketSkipped   = []byte("skipped")   // seq → skippedRecord
	bucketDeadlines = []byte("deadlines") // ns\0pods\0name → deadline of a pod being deleted (deadline.go)
	bucketFeeds     = []byte("feeds")     // resource → feedRecord, the feed's newest point (feed.go)
	// bucketFeedExpiry indexes the reservations that end on the feed.
	bucketFeedExpiry = []byte("feed-expiry") // resource\0 + end (Unix ns, big-endian) + reservation id → object key
	// bucketTombstones keeps the deleted uids (fence.go).
	bucketTombstones      = []byte("tombstones")       // uid → deletion time (Unix ns, big-endian) + resource version
	bucketTombstoneExpiry = []byte("tombstone-expiry") // deletion time (Unix ns, big-endian) + uid → ""
	// bucketStream names the stream a server's projection follows. It is
	// not in allBuckets: it says where the file came from, not what it
	// holds, so a replay (which follows no stream) has none and Compare
	// leaves it out.
	bucketStream = []byte("stream") // "identity" → ledger.Stream.Identity; "fact-time" → Unix ns

	keyApplied = []byte("applied")
	keySchema  = []byte("schema")
	// keyRules holds the RulesVersion the file was first folded under.
	keyRules    = []byte("rules")
	keyIdentity = []byte("identity")
	// keyFactTime (in bucketStream) holds when the stream took the newest
	// cluster fact the projection applied (LastFactTime).
	keyFactTime = []byte("fact-time")
)

var allBuckets = [][]byte{bucketMeta, bucketSubjects, bucketObjects, bucketQuotas, bucketReserved, bucketExpiry, bucketSkipped, bucketDeadlines, bucketFeeds, bucketFeedExpiry, bucketTombstones, bucketTombstoneExpiry}

// objectRecord is one object as the projection keeps it.
type objectRecord struct {
	Resource  string `json:"resource"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
	// ResourceVersion is the cluster's version of the state held, empty
	// for a reservation or an object reported without one.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Kind            string `json:"kind,omitempty"`
	// Object is the trimmed object as the cluster reported it; empty for
	// an object only reserved, whose trimmed form is in the log.
	Object json.RawMessage `json:"object"`
	Charge quota.Charge    `json:"charge"`
	// Seq is the stream sequence of the record that last set this state.
	Seq uint64 `json:"seq"`
	// Reservation is set while the object is only reserved by an admission
	// and not yet reported by the cluster.
	Reservation string    `json:"reservation,omitempty"`
	ExpiresAt   time.Time `json:"expiresAt,omitzero"`
	// Holds are the reservations of updates admitted for the object and
	// not yet covered by its charge, in the order they were made.
	Holds []hold `json:"holds,omitempty"`
}

// holds returns r's holds; none for a nil r.
func (r *objectRecord) holds() []hold {
	if r == nil {
		return nil
	}
	return r.Holds
}

// quotaRecord is one ResourceQuota with its usage.
type quotaRecord struct {
	Namespace string          `json:"namespace"`
	Name      string          `json:"name"`
	Object    json.RawMessage `json:"object"`
	// Invalid is Kubernetes' validation message for a quota whose spec is
	// not valid; such a quota charges and admits nothing.
	Invalid string             `json:"invalid,omitempty"`
	Used    quota.ResourceList `json:"used,omitempty"`
	Seq     uint64             `json:"seq"`
	// parsed is the valid quota read from Object, nil for an invalid one:
	// the live state keeps it so that no read decodes it again.
	parsed *quota.Quota
	// rendered is the record as the Kubernetes object (resourceQuota)
	// and its encoding, each made by the first read that needs it; a
	// record in the live state is never changed, so neither is its
	// rendering. Nil for a record not yet stored.
	rendered *rendering
}

// rendering holds a stored quota record's Kubernetes object and its JSON
// encoding, each made once.
type rendering struct {
	once sync.Once
	q    *corev1.ResourceQuota
	err  error

	encodeOnce sync.Once
	enc        []byte
	encErr     error
}

// skippedRecord notes a stream record that the fold could not apply.
type skippedRecord struct {
	Seq     uint64    `json:"seq"`
	Subject string    `json:"subject"`
	Time    time.Time `json:"time"`
	Reason  string    `json:"reason"`
}

func objectKey(namespace, resource, name string) []byte {
	k := make([]byte, 0, len(namespace)+len(resource)+len(name)+2)
	k = append(k, namespace...)
	k = append(k, 0)
	k = append(k, resource...)
	k = append(k, 0)
	k = append(k, name...)
	return k
}

func quotaKey(namespace, name string) []byte {
	k := make([]byte, 0, len(namespace)+len(name)+1)
	k = append(k, namespace...)
	k = append(k, 0)
	k = append(k, name...)
	return k
}

func namespacePrefix(namespace string) []byte {
	return append([]byte(namespace), 0)
}

func seqBytes(seq uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return b[:]
}

// initBuckets creates the buckets of a new file, or checks the schema
// version of an existing one.
func initBuckets(tx *buckets.Set) error {
	meta := tx.Bucket(bucketMeta)
	if meta != nil {
		if v := meta.Get(keySchema); v != nil {
			if got := binary.BigEndian.Uint64(v); got != SchemaVersion {
				return fmt.Errorf("%w: file has %d, this build reads %d", ErrSchemaVersion, got, SchemaVersion)
			}
		}
	}
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	if tx.Bucket(bucketMeta).Get(keySchema) != nil {
		return nil
	}
	return tx.Bucket(bucketMeta).Put(keySchema, seqBytes(SchemaVersion))
}

// expiryKey orders reservations by expiry, then by id.
func expiryKey(at time.Time, reservation string) []byte {
	k := make([]byte, 8, 8+len(reservation))
	binary.BigEndian.PutUint64(k, uint64(at.UnixNano()))
	return append(k, reservation...)
}

// rulesVersion is the RulesVersion a file was first folded under. A new
// file takes this build's.
func rulesVersion(tx *buckets.Set) (uint64, error) {
	meta := tx.Bucket(bucketMeta)
	if v := meta.Get(keyRules); len(v) == 8 {
		return binary.BigEndian.Uint64(v), nil
	}
	return RulesVersion, meta.Put(keyRules, seqBytes(RulesVersion))
}

// appliedSeq reads the last applied stream sequence (0 for a new file).
func appliedSeq(tx *buckets.Set) uint64 {
	v := tx.Bucket(bucketMeta).Get(keyApplied)
	if v == nil {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// subjectKey names a namespace in the subjects bucket; cluster-scoped
// objects ("" namespace) use a key no namespace can have.
func subjectKey(namespace string) []byte {
	if namespace == "" {
		return []byte("_cluster")
	}
	return []byte(namespace)
}

// subjectSeq reads the last applied stream sequence of a namespace's subject.
func subjectSeq(tx *buckets.Set, namespace string) uint64 {
	v := tx.Bucket(bucketSubjects).Get(subjectKey(namespace))
	if v == nil {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// The codecs of the buckets the fold keeps decoded (see buckets.Codec):
// the live state holds objects and quotas as records, and their bytes
// are made only for a checkpoint or a comparison.
var (
	objectCodec = &buckets.Codec{
		Encode: func(v any) []byte { return encodeObjectRecord(v.(*objectRecord)) },
		Decode: func(b []byte) (any, error) { return decodeObjectRecord(b) },
	}
	quotaCodec = &buckets.Codec{
		Encode: func(v any) []byte {
			b, err := json.Marshal(v.(*quotaRecord))
			if err != nil {
				panic(fmt.Sprintf("encode quota record: %v", err))
			}
			return b
		},
		Decode: func(b []byte) (any, error) {
			var r quotaRecord
			if err := json.Unmarshal(b, &r); err != nil {
				return nil, err
			}
			if r.Invalid == "" {
				var err error
				if r.parsed, err = decodeQuota(&r); err != nil {
					return nil, err
				}
			}
			r.rendered = new(rendering)
			return &r, nil
		},
	}
)

// newSet returns an empty set with the projection's codecs.
func newSet() *buckets.Set {
	set := buckets.New()
	set.SetCodec(bucketObjects, objectCodec)
	set.SetCodec(bucketQuotas, quotaCodec)
	return set
}

// getObject returns an object's record, or nil. The record belongs to the
// projection: the caller copies it to change it.
func getObject(tx *buckets.Set, key []byte) *objectRecord {
	r, _ := tx.Bucket(bucketObjects).Value(key).(*objectRecord)
	return r
}

// putObject stores r, which the projection keeps as it is from now on.
func putObject(tx *buckets.Set, r *objectRecord) error {
	return tx.Bucket(bucketObjects).PutValue(objectKey(r.Namespace, r.Resource, r.Name), r)
}

// putQuota stores r, which the projection keeps as it is from now on.
func putQuota(tx *buckets.Set, r *quotaRecord) error {
	r.rendered = new(rendering)
	return tx.Bucket(bucketQuotas).PutValue(quotaKey(r.Namespace, r.Name), r)
}

// clone returns a copy of r whose usage can change without changing r's.
func (r *quotaRecord) clone() *quotaRecord {
	c := *r
	c.Used = maps.Clone(r.Used)
	c.rendered = nil
	return &c
}

// forEachObject calls fn for every object of a namespace in key order.
func forEachObject(tx *buckets.Set, namespace string, fn func(*objectRecord) error) error {
	return forEachObjectPrefix(tx, namespacePrefix(namespace), fn)
}

// forEachObjectOf calls fn for every object of one resource in a namespace,
// in name order. The key layout makes that one contiguous range.
func forEachObjectOf(tx *buckets.Set, namespace, resource string, fn func(*objectRecord) error) error {
	return forEachObjectPrefix(tx, objectKey(namespace, resource, ""), fn)
}

// forEachObjectPrefix calls fn for every object whose key starts with
// prefix, in key order. The records belong to the projection: fn must not
// change them.
func forEachObjectPrefix(tx *buckets.Set, prefix []byte, fn func(*objectRecord) error) error {
	return forEachPrefix(tx, bucketObjects, prefix, fn)
}

// forEachQuota calls fn for every quota of a namespace ("" with all = true
// for every namespace) in key order. The records belong to the
// projection: fn must not change them.
func forEachQuota(tx *buckets.Set, namespace string, all bool, fn func(*quotaRecord) error) error {
	var prefix []byte
	if !all {
		prefix = namespacePrefix(namespace)
	}
	return forEachPrefix(tx, bucketQuotas, prefix, fn)
}

// forEachPrefix calls fn for every record of type T in a bucket with a
// codec whose key starts with prefix, in key order.
func forEachPrefix[T any](tx *buckets.Set, bucket, prefix []byte, fn func(*T) error) error {
	return tx.Bucket(bucket).AscendValues(prefix, func(k []byte, v any) (bool, error) {
		if !bytes.HasPrefix(k, prefix) {
			return false, nil
		}
		r, ok := v.(*T)
		if !ok {
			return false, fmt.Errorf("%w: bucket %s holds a %T at %q", ErrInvariant, bucket, v, k)
		}
		return true, fn(r)
	})
}

// keyAppliedTime holds the stream time of the last applied record, so that
// a copy of the projection says which moment it reflects (point-in-time
// replay starts from a snapshot only if that moment is not after the
// target).
var keyAppliedTime = []byte("appliedTime")

func putAppliedTime(tx *buckets.Set, t time.Time) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t.UnixNano()))
	return tx.Bucket(bucketMeta).Put(keyAppliedTime, b[:])
}

// AppliedAt reads the applied sequence of a projection and the stream time
// of the record at that sequence (zero for an empty projection).
func AppliedAt(tx *buckets.Set) (uint64, time.Time) {
	seq := appliedSeq(tx)
	v := tx.Bucket(bucketMeta).Get(keyAppliedTime)
	if v == nil {
		return seq, time.Time{}
	}
	return seq, time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC()
}
