package admit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/quotaledger/quota/cmd/internal/admit"
)

// TestConfigValidate reports every wrong setting in one message, each
// worded as the flags have always been refused.
func TestConfigValidate(t *testing.T) {
	ask := func(context.Context, string, []byte) ([]byte, error) { return nil, nil }
	if err := (admit.Config{File: "pod.yaml", Namespace: "team-a", Ask: ask}).Validate(); err != nil {
		t.Fatalf("valid settings: %v", err)
	}
	err := admit.Config{File: "pod.yaml", Namespace: "team.a", Validation: "lenient"}.Validate()
	if !errors.Is(err, admit.ErrInvalidConfig) {
		t.Fatalf("got %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{`namespace "team.a" is not a valid name`, "want strict, warn or ignore", "no Ask"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to say %q", err, want)
		}
	}
}
