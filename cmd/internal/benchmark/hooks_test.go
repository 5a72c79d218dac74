package benchmark

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector/admission"
	"github.com/quotaledger/quota/replay"
)

// pluggedHooks measures ingest, admission and replay through their own
// packages.
func pluggedHooks() Hooks {
	return Hooks{
		Ingest: func(ctx context.Context, stream *ledger.Stream, r io.Reader) (int, error) {
			in, err := ingest.New(stream, ingest.Options{})
			if err != nil {
				return 0, err
			}
			rep, err := in.IngestFile(ctx, "workload.jsonl", r)
			if err != nil {
				return 0, err
			}
			if rep.Rejected > 0 {
				return 0, fmt.Errorf("ingest rejected %d generated events, first: %v", rep.Rejected, rep.Rejections)
			}
			return rep.Records(), nil
		},
		Admission: func(ctx context.Context, env Env) error {
			resp, err := admission.NewResponder(env.Conn, env.Stream, env.Projector, admission.Config{Logger: discardLogger()})
			if err != nil {
				return err
			}
			go resp.Run(ctx)
			return nil
		},
		AdmissionSubject: func(namespace string) string { return admission.SubjectPrefix + namespace },
		Replay: func(ctx context.Context, stream *ledger.Stream, path string, until uint64) (uint64, error) {
			res, err := replay.Rebuild(ctx, stream, replay.Options{Path: path, UntilSeq: until})
			if err != nil {
				return 0, err
			}
			defer res.Close()
			return res.Seq, nil
		},
	}
}

// TestMain runs one replay instead of the tests when the harness starts
// this binary as its replay process (EnvReplayChild).
func TestMain(m *testing.M) {
	if os.Getenv(EnvReplayChild) != "" {
		os.Exit(ReplayChild(pluggedHooks()))
	}
	os.Exit(m.Run())
}
