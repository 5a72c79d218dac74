package benchmark

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// Environment variables read by ConfigFromEnv, and their defaults.
const (
	// EnvEvents is the number of events (DefaultBenchEvents).
	EnvEvents = "BENCH_EVENTS"
	// EnvNamespaces is the number of namespaces (DefaultBenchNamespaces).
	EnvNamespaces = "BENCH_NAMESPACES"
	// EnvLiveObjects bounds the live objects (default: a tenth of the
	// events, the proportion of the RSS target).
	EnvLiveObjects = "BENCH_LIVE"
	// EnvSeed is the workload seed (default 1).
	EnvSeed = "BENCH_SEED"
	// EnvRequests is the number of requests per request-reply figure.
	EnvRequests = "BENCH_REQUESTS"
	// EnvRepeats is how many times each request-reply measurement runs
	// (DefaultRepeats); the median run gives the figure.
	EnvRepeats = "BENCH_REPEATS"
	// EnvSyncInterval is a JetStream sync interval such as 1s (default:
	// sync every write).
	EnvSyncInterval = "BENCH_SYNC_INTERVAL"
	// EnvDir is where the store and projection go (default: a temporary
	// directory). Ten million events need tens of GiB.
	EnvDir = "BENCH_DIR"
	// EnvJSON is a file the report is written to as JSON.
	EnvJSON = "BENCH_JSON"
	// EnvProfile is a directory that gets CPU and allocation profiles of
	// the projection and of each request-reply measurement (default:
	// none).
	EnvProfile = "BENCH_PROFILE"

	DefaultBenchEvents     = 200_000
	DefaultBenchNamespaces = 100
)

// ConfigFromEnv builds a Config from the BENCH_* variables; dir is used
// when BENCH_DIR is unset.
func ConfigFromEnv(dir string) (Config, error) {
	cfg := Config{Dir: dir}
	if d := os.Getenv(EnvDir); d != "" {
		cfg.Dir = d
	}
	cfg.ProfileDir = os.Getenv(EnvProfile)
	var err error
	num := func(name string, def int) int {
		s := os.Getenv(name)
		if s == "" || err != nil {
			return def
		}
		n, e := strconv.Atoi(s)
		if e != nil {
			err = fmt.Errorf("%s=%q: %w", name, s, e)
		}
		return n
	}
	cfg.Workload.Events = num(EnvEvents, DefaultBenchEvents)
	cfg.Workload.Namespaces = num(EnvNamespaces, DefaultBenchNamespaces)
	cfg.Workload.LiveObjectsMax = num(EnvLiveObjects, max(1, cfg.Workload.Events/10))
	cfg.Workload.Seed = uint64(num(EnvSeed, 1))
	cfg.Requests = num(EnvRequests, DefaultRequests)
	cfg.Repeats = num(EnvRepeats, DefaultRepeats)
	if s := os.Getenv(EnvSyncInterval); s != "" && err == nil {
		cfg.SyncInterval, err = time.ParseDuration(s)
	}
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return cfg, cfg.Validate()
}
