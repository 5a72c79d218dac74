package benchmark

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/quotaledger/quota/projector/admission"
)

// AdmissionResponder is the Hooks.Admission of `make bench`: it runs
// projector/admission's Responder on the harness's projection and stream,
// on a connection of its own, with the default reservation TTL. It returns
// once the responder is subscribed; the responder stops when ctx ends.
func AdmissionResponder(ctx context.Context, env Env) error {
	nc, err := env.Connect("benchmark admission")
	if err != nil {
		return fmt.Errorf("admission responder: %w", err)
	}
	resp, err := admission.NewResponder(nc, env.Stream, env.Projector, admission.Config{Logger: discardLogger()})
	if err != nil {
		nc.Close()
		return err
	}
	go func() {
		defer nc.Close()
		_ = resp.Run(ctx)
	}()
	deadline := time.Now().Add(RequestTimeout)
	for nc.NumSubscriptions() == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("admission responder did not subscribe within %s", RequestTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nc.Flush()
}

// reservingReview makes the i-th reserving request a distinct admission:
// its own request uid (the reservation's id, which JetStream deduplicates)
// and its own pod name (a reservation of an existing object charges
// nothing). Without this every request after the first 64 would be a
// retry of an earlier one.
func reservingReview(review []byte, i int) []byte {
	suffix := "-r" + strconv.Itoa(i)
	out := bytes.Replace(review, []byte(`"uid":"bench-`), []byte(`"uid":"bench`+suffix+`-`), 1)
	// The pod's own name is the first "name" of its metadata.
	at := bytes.Index(out, []byte(`"metadata":{`))
	if at < 0 {
		return out
	}
	name := bytes.Index(out[at:], []byte(`"name":"`))
	if name < 0 {
		return out
	}
	end := at + name + len(`"name":"`)
	close := bytes.IndexByte(out[end:], '"')
	if close < 0 {
		return out
	}
	end += close
	return append(append(append([]byte{}, out[:end]...), suffix...), out[end:]...)
}
