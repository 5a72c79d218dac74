package ingestfiles_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/quotaledger/quota/cmd/internal/ingestfiles"
)

// TestConfigValidate reports a bad namespace and a bad --validate in one
// message, each worded as the flags have always been refused.
func TestConfigValidate(t *testing.T) {
	if err := (ingestfiles.Config{Namespace: "team-a", Validation: "warn"}).Validate(); err != nil {
		t.Fatalf("valid settings: %v", err)
	}
	err := ingestfiles.Config{Namespace: "team.a", Validation: "lenient"}.Validate()
	if !errors.Is(err, ingestfiles.ErrInvalidConfig) {
		t.Fatalf("got %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{`namespace "team.a" is not a valid name`, "want strict, warn or ignore"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to say %q", err, want)
		}
	}
}
