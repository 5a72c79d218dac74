package workload

import (
	"fmt"
	"strings"
	"time"
)

// Defaults and limits of Config.
const (
	// DefaultNamespaces is the namespace count of a zero Config.
	DefaultNamespaces = 10
	// DefaultEvents is the event count of a zero Config.
	DefaultEvents = 10_000
	// NamespacesMax bounds Config.Namespaces; names are five digits wide.
	NamespacesMax = 99_999
	// EventsMax bounds Config.Events.
	EventsMax = 1_000_000_000
	// QuotasPerNamespace is the number of ResourceQuotas each namespace
	// gets before the mix starts.
	QuotasPerNamespace = 4
)

// DefaultStart is the creation time of the first object of a zero Config.
var DefaultStart = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// Config says what stream to generate. The same Config always gives the
// same bytes.
type Config struct {
	// Seed chooses the stream. Zero is a valid seed.
	Seed uint64
	// Namespaces is the number of namespaces. Zero: DefaultNamespaces.
	Namespaces int
	// Events is the number of watch events (lines). Zero: DefaultEvents.
	// When it is smaller than the opening (cluster objects and quotas) the
	// stream is that opening, cut short.
	Events int
	// LiveObjectsMax bounds the pods, claims and services that exist at
	// once. Zero: no bound; the live set then grows to about a quarter of
	// Events.
	LiveObjectsMax int
	// Start is the creationTimestamp of the first object; the clock then
	// advances StepTime per event. Zero: DefaultStart.
	Start time.Time
}

// StepTime is how far the stream's clock advances per event.
const StepTime = 50 * time.Millisecond

func (c Config) withDefaults() Config {
	if c.Namespaces == 0 {
		c.Namespaces = DefaultNamespaces
	}
	if c.Events == 0 {
		c.Events = DefaultEvents
	}
	if c.Start.IsZero() {
		c.Start = DefaultStart
	}
	return c
}

// Validate reports every problem of c, after defaults are applied, in one
// error wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	var problems []string
	if c.Namespaces < 1 || c.Namespaces > NamespacesMax {
		problems = append(problems, fmt.Sprintf("Namespaces %d is outside 1..%d", c.Namespaces, NamespacesMax))
	}
	if c.Events < 1 || c.Events > EventsMax {
		problems = append(problems, fmt.Sprintf("Events %d is outside 1..%d", c.Events, EventsMax))
	}
	if c.LiveObjectsMax < 0 {
		problems = append(problems, fmt.Sprintf("LiveObjectsMax %d is negative (zero means no bound)", c.LiveObjectsMax))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
}
