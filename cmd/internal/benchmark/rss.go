package benchmark

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// peakRSS reads the process's peak resident set size (VmHWM) in bytes.
func peakRSS() (int64, error) {
	var hwm int64 = -1
	if err := readStatus(map[string]*int64{"VmHWM": &hwm}); err != nil {
		return 0, err
	}
	if hwm < 0 {
		return 0, fmt.Errorf("no VmHWM in /proc/self/status")
	}
	return hwm, nil
}

// readStatus reads the named kB fields of /proc/self/status into fields,
// in bytes; a name the file lacks leaves its value alone.
func readStatus(fields map[string]*int64) error {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		v := fields[name]
		if !ok || v == nil {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return fmt.Errorf("%s line %q", name, sc.Text())
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return fmt.Errorf("%s line %q: %w", name, sc.Text(), err)
		}
		*v = kb << 10
	}
	return nil
}

// peakReset is whether the last resetPeakRSS worked; without it a phase's
// peak is the peak since the process started.
var peakReset bool

// resetPeakRSS sets VmHWM back to the current RSS (Linux: writing 5 to
// /proc/self/clear_refs), so that the next peak belongs to one phase.
func resetPeakRSS() {
	peakReset = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakFigure reports VmHWM as the figure name, with the breakdown of the
// largest of the phase's samples in its note.
func peakFigure(name, targetText string, sampled memSample) Figure {
	v, err := peakRSS()
	if err != nil {
		return Figure{Name: name, Unit: UnitBytes, Status: Failed, Note: err.Error()}
	}
	note := "whole process, embedded NATS server included"
	if !peakReset {
		note += "; the peak could not be reset, so it is the peak since the process started"
	}
	if s := sampled.note(); s != "" {
		note += "; " + s
	}
	return Figure{Name: name, Unit: UnitBytes, Value: float64(v), Status: Measured, Target: targetText, Note: note}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// memSampler samples the process's memory while a phase runs and keeps
// the sample with the largest resident set, so that the phase's peak can
// be broken down: which part of the phase it came in, how much of it is
// the Go runtime's heap and stacks, and how much mapped files (the
// projection's bbolt files; JetStream's file store reads into the heap).
// VmHWM itself is read by peakFigure; the samples can miss a peak shorter
// than their interval.
type memSampler struct {
	part atomic.Pointer[string]
	stop chan struct{}
	done chan struct{}
	peak memSample
	// profileDir, when set, gets the heap profile taken at the largest
	// sample ("<part> peak.heap.pprof"): the live objects as of the last
	// garbage collection before it.
	profileDir string
}

// memSampleInterval is how often memSampler samples.
const memSampleInterval = 100 * time.Millisecond

// memSample is one sample of the process's memory; its fields are
// exported for the replay process's answer (replaychild.go).
type memSample struct {
	Part            string
	RSS, Anon, File int64 // VmRSS, RssAnon, RssFile
	// The Go runtime's view (runtime/metrics): live and dead objects,
	// heap memory free or unused within spans, goroutine stacks.
	HeapObjects, HeapSpare, Stacks uint64
}

// startMemSampler starts sampling, the samples labelled part until at
// names another part.
func startMemSampler(part, profileDir string) *memSampler {
	m := &memSampler{stop: make(chan struct{}), done: make(chan struct{}), profileDir: profileDir}
	m.at(part)
	go m.run()
	return m
}

// at labels the samples that follow.
func (m *memSampler) at(part string) { m.part.Store(&part) }

func (m *memSampler) run() {
	defer close(m.done)
	t := time.NewTicker(memSampleInterval)
	defer t.Stop()
	for {
		if s, err := sampleMem(*m.part.Load()); err == nil && s.RSS > m.peak.RSS {
			// A profile again only for a peak a tenth larger: writing one
			// costs time the phase is measured in.
			if m.profileDir != "" && s.RSS > m.peak.RSS+m.peak.RSS/10 {
				writeHeapProfile(filepath.Join(m.profileDir, s.Part+" peak.heap.pprof"))
			}
			m.peak = s
		}
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
	}
}

// writeHeapProfile writes the heap profile to path, or nothing: a
// profile is a diagnostic, and the figures do not depend on it.
func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.Lookup("heap").WriteTo(f, 0)
}

// end stops sampling and returns the sample with the largest resident set.
func (m *memSampler) end() memSample {
	close(m.stop)
	<-m.done
	return m.peak
}

func sampleMem(part string) (memSample, error) {
	s := memSample{Part: part}
	if err := readStatus(map[string]*int64{"VmRSS": &s.RSS, "RssAnon": &s.Anon, "RssFile": &s.File}); err != nil {
		return s, err
	}
	ms := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
	}
	metrics.Read(ms)
	value := func(i int) uint64 {
		if ms[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return ms[i].Value.Uint64()
	}
	s.HeapObjects, s.HeapSpare, s.Stacks = value(0), value(1)+value(2), value(3)
	return s, nil
}

// note describes a sample for a peak figure's note.
func (s memSample) note() string {
	if s.RSS == 0 {
		return ""
	}
	mib := func(v int64) string { return fmt.Sprintf("%.0f MiB", float64(v)/(1<<20)) }
	return fmt.Sprintf("largest sample (every %v), during %s: RSS %s, of it anonymous %s (the Go heap's objects %s, its free and unused memory %s, stacks %s) and mapped files %s",
		memSampleInterval, s.Part, mib(s.RSS), mib(s.Anon), mib(int64(s.HeapObjects)), mib(int64(s.HeapSpare)), mib(int64(s.Stacks)), mib(s.File))
}

// memoryLimit is the Go runtime's soft memory limit, zero when none is
// set (GOMEMLIMIT unset: math.MaxInt64).
func memoryLimit() int64 {
	if l := debug.SetMemoryLimit(-1); l < math.MaxInt64 {
		return l
	}
	return 0
}
