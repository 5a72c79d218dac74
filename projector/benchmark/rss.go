package benchmark

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
)

// peakRSS reads the process's peak resident set size (VmHWM) in bytes.
func peakRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("VmHWM line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmHWM line %q: %w", sc.Text(), err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}

// peakReset is whether the last resetPeakRSS worked; without it a phase's
// peak is the peak since the process started.
var peakReset bool

// resetPeakRSS sets VmHWM back to the current RSS (Linux: writing 5 to
// /proc/self/clear_refs), so that the next peak belongs to one phase.
func resetPeakRSS() {
	peakReset = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

func peakFigure(name, targetText string) Figure {
	v, err := peakRSS()
	if err != nil {
		return Figure{Name: name, Unit: UnitBytes, Status: Failed, Note: err.Error()}
	}
	note := "whole process, embedded NATS server included"
	if !peakReset {
		note += "; the peak could not be reset, so it is the peak since the process started"
	}
	return Figure{Name: name, Unit: UnitBytes, Value: float64(v), Status: Measured, Target: targetText, Note: note}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
