package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// checkpoints keeps, per resource, the resourceVersion up to which every
// event is in the log, in a JetStream key-value bucket shared by the
// replicas.
type checkpoints struct {
	kv jetstream.KeyValue
}

// checkpoint is one resource's resume point.
type checkpoint struct {
	ResourceVersion string    `json:"resourceVersion"`
	Written         time.Time `json:"written"`
	// By is the replica that wrote it.
	By string `json:"by"`
}

// CheckpointHistory is the number of values kept per key: the newest.
const CheckpointHistory = 1

func openCheckpoints(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) (*checkpoints, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      bucket,
		Description: "quota export: the resourceVersion up to which each resource is in the log",
		History:     CheckpointHistory,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("open the checkpoint bucket %s: %w", bucket, err)
	}
	return &checkpoints{kv: kv}, nil
}

// key is a resource's key: key-value keys allow dots, and resource names
// ("widgets.example.com") hold nothing else a key refuses.
func key(resource string) string { return strings.ReplaceAll(resource, "/", "_") }

func (c *checkpoints) get(ctx context.Context, resource string) (checkpoint, bool, error) {
	e, err := c.kv.Get(ctx, key(resource))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return checkpoint{}, false, nil
	}
	if err != nil {
		return checkpoint{}, false, fmt.Errorf("read the checkpoint of %s: %w", resource, err)
	}
	var cp checkpoint
	if err := json.Unmarshal(e.Value(), &cp); err != nil {
		return checkpoint{}, false, fmt.Errorf("read the checkpoint of %s: %w", resource, err)
	}
	return cp, cp.ResourceVersion != "", nil
}

func (c *checkpoints) put(ctx context.Context, resource, rv string) error {
	b, err := json.Marshal(checkpoint{ResourceVersion: rv, Written: time.Now().UTC()})
	if err != nil {
		return err
	}
	_, err = c.kv.Put(ctx, key(resource), b)
	return err
}

// delete removes a resource's checkpoint.
func (c *checkpoints) delete(ctx context.Context, resource string) error {
	err := c.kv.Delete(ctx, key(resource))
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("delete the checkpoint of %s: %w", resource, err)
	}
	return nil
}
