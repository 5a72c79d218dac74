package admission

import (
	"strings"
	"testing"
)

// TestConfigValidateNamesEveryProblem checks that a Config with several
// bad fields is refused with each of them named.
func TestConfigValidateNamesEveryProblem(t *testing.T) {
	c := Config{ReservationTTL: -1, SweepInterval: -1, Subscribers: -2}
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate accepted negative fields")
	}
	for _, want := range []string{"ReservationTTL is negative", "SweepInterval is negative", "Subscribers is negative"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v; want it to name %q", err, want)
		}
	}
	if _, err := NewResponder(nil, nil, nil, Config{Subscribers: -1}); err == nil {
		t.Error("NewResponder accepted a negative Subscribers")
	}
	if err := (&Config{}).Validate(); err != nil {
		t.Errorf("the zero Config: %v", err)
	}
}
