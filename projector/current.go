package projector

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/quotaledger/quota/projector/buckets"
)

// CurrentObjects answers what the log says each object named in keys
// (namespace, resource, name) is now: the object the last event that set
// it carried, or nil when the projection holds none (never reported,
// deleted, removed by a resync, or only reserved by an admission). It also
// gives, for each key, the last sequence applied of the key's namespace
// subject. It catches up first with everything appended to the stream
// before the call, so that the answer reflects the whole log at that
// point; ingest compares a plain manifest with it to skip only a state the
// object has now.
func (p *Projector) CurrentObjects(ctx context.Context, keys [][3]string) (objects []json.RawMessage, subjectSeqs []uint64, err error) {
	if err := p.CatchUp(ctx); err != nil {
		return nil, nil, err
	}
	objects = make([]json.RawMessage, len(keys))
	subjectSeqs = make([]uint64, len(keys))
	err = p.read(func(tx *buckets.Set) error {
		for i, k := range keys {
			if r := getObject(tx, objectKey(k[0], k[1], k[2])); r != nil && r.Reservation == "" {
				objects[i] = r.Object
			}
			subjectSeqs[i] = subjectSeq(tx, k[0])
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read current objects: %w", err)
	}
	return objects, subjectSeqs, nil
}
