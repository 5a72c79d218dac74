package benchmark

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/quotaledger/quota/ledger/ledgertest/workload"
)

// Status says whether a figure was measured.
type Status string

const (
	// Measured: Value holds the figure.
	Measured Status = "measured"
	// NotMeasured: the code to measure does not exist yet.
	NotMeasured Status = "not measured yet"
	// Failed: the measurement ran and failed; Note says why.
	Failed Status = "failed"
)

// Figure is one row of the report.
type Figure struct {
	Name   string  `json:"name"`
	Unit   string  `json:"unit"`
	Value  float64 `json:"value,omitempty"`
	Status Status  `json:"status"`
	// Ceiling names the raw figure this one is compared to, and
	// CeilingValue is its value in this run.
	Ceiling      string  `json:"ceiling,omitempty"`
	CeilingValue float64 `json:"ceilingValue,omitempty"`
	// Ratio is Value / CeilingValue; for a Paired figure, the median of
	// its runs' ratios to the ceiling measured right before each, and
	// CeilingValue is the median of those ceiling runs.
	Ratio  float64 `json:"ratio,omitempty"`
	Paired bool    `json:"paired,omitempty"`
	// Target is the goal in words; Met says whether it was reached (nil
	// when there is no target or no value).
	Target string `json:"target,omitempty"`
	Met    *bool  `json:"met,omitempty"`
	Note   string `json:"note,omitempty"`

	// check decides Met from the value and the ratio.
	check func(value, ratio float64) bool
}

// Report is the result of one Run.
type Report struct {
	Workload     workload.Config `json:"workload"`
	Stats        workload.Stats  `json:"stats"`
	SyncInterval time.Duration   `json:"syncInterval"`
	Requests     int             `json:"requests"`
	Repeats      int             `json:"repeats"`
	GoVersion    string          `json:"goVersion"`
	// MemoryLimit is the Go runtime's soft memory limit (GOMEMLIMIT) in
	// bytes; zero for none.
	MemoryLimit int64         `json:"memoryLimit,omitempty"`
	CPUs        int           `json:"cpus"`
	Started     time.Time     `json:"started"`
	Duration    time.Duration `json:"duration"`
	Figures     []Figure      `json:"figures"`
}

// Figure returns the figure named name, or nil.
func (r *Report) Figure(name string) *Figure {
	for i := range r.Figures {
		if r.Figures[i].Name == name {
			return &r.Figures[i]
		}
	}
	return nil
}

// settle computes ratios and target checks once every figure is in.
func (r *Report) settle() {
	for i := range r.Figures {
		f := &r.Figures[i]
		if f.Ceiling != "" && !f.Paired {
			if c := r.Figure(f.Ceiling); c != nil && c.Status == Measured {
				f.CeilingValue = c.Value
				if f.Status == Measured && c.Value > 0 {
					f.Ratio = f.Value / c.Value
				}
			}
		}
		if f.check != nil && f.Status == Measured && (f.Ceiling == "" || f.Ratio > 0) {
			met := f.check(f.Value, f.Ratio)
			f.Met = &met
		}
	}
}

// WriteTable prints the report as an aligned table.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "workload: seed %d, %d events, %d namespaces, live objects at most %s (peak %d); %s of watch JSON\n",
		r.Workload.Seed, r.Stats.Events, r.Workload.Namespaces, boundText(r.Workload.LiveObjectsMax), r.Stats.LiveMax, bytesText(float64(r.Stats.Bytes)))
	sync := "every write (sync_always)"
	if r.SyncInterval > 0 {
		sync = "every " + r.SyncInterval.String()
	}
	limit := ""
	if r.MemoryLimit > 0 {
		limit = ", GOMEMLIMIT " + bytesText(float64(r.MemoryLimit))
	}
	fmt.Fprintf(w, "JetStream sync: %s; %d requests per request-reply measurement, the median of %d runs, each compared to the ceiling measured right before it; %s%s, %d CPUs; run took %s\n\n",
		sync, r.Requests, max(1, r.Repeats), r.GoVersion, limit, r.CPUs, r.Duration.Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "figure\tvalue\tceiling\tratio\ttarget\tmet\t")
	for _, f := range r.Figures {
		value := string(f.Status)
		if f.Status == Measured {
			value = valueText(f.Value, f.Unit)
		}
		ceiling, ratio := "", ""
		if f.Ceiling != "" {
			ceiling = f.Ceiling
			if f.CeilingValue > 0 {
				ceiling = valueText(f.CeilingValue, f.Unit)
			}
			if f.Ratio > 0 {
				ratio = fmt.Sprintf("%.2f", f.Ratio)
			}
		}
		met := ""
		if f.Met != nil {
			met = map[bool]string{true: "yes", false: "NO"}[*f.Met]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", f.Name, value, ceiling, ratio, f.Target, met)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Rows that share a note (all the rows of a part not plugged in) get
	// it once.
	var notes []string
	var order []string
	byNote := map[string][]string{}
	for _, f := range r.Figures {
		if f.Note == "" {
			continue
		}
		if _, ok := byNote[f.Note]; !ok {
			order = append(order, f.Note)
		}
		byNote[f.Note] = append(byNote[f.Note], f.Name)
	}
	for _, note := range order {
		notes = append(notes, fmt.Sprintf("  %s: %s", strings.Join(byNote[note], "; "), note))
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\nnotes:\n%s\n", strings.Join(notes, "\n"))
	}
	return nil
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func boundText(n int) string {
	if n == 0 {
		return "unbounded"
	}
	return fmt.Sprint(n)
}

func valueText(v float64, unit string) string {
	switch unit {
	case UnitBytes:
		return bytesText(v)
	case UnitMicroseconds:
		return fmt.Sprintf("%.0f µs", v)
	default:
		return fmt.Sprintf("%.0f %s", v, unit)
	}
}

func bytesText(v float64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.2f GiB", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	default:
		return fmt.Sprintf("%.0f KiB", v/(1<<10))
	}
}

// Units of figures.
const (
	UnitEventsPerSecond   = "events/s"
	UnitRequestsPerSecond = "req/s"
	UnitMicroseconds      = "µs"
	UnitBytes             = "bytes"
)
